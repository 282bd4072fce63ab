package io.retrybudget.budget;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.redis.protocol.BudgetKeys;
import io.retrybudget.budget.redis.protocol.LuaScript;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisSentinelProcesses;
import io.retrybudget.testing.RedisServerProcess;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * A Redis that Sentinel manages (real processes: a master, two replicas, two Sentinels): budgets
 * are served through {@code redis-sentinel://}; after the master is killed the same client is
 * served again by the promoted replica, its scripts loaded there on connect; and after a failover
 * asked for while the master runs, the client leaves the demoted master for the new one.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class SentinelBudgetTest {
  static RedisSentinelProcesses redis;

  @BeforeAll
  static void start() {
    redis = RedisSentinelProcesses.start(2, 2);
  }

  @AfterAll
  static void stop() {
    if (redis != null) {
      redis.close();
    }
  }

  @Test
  @Order(1)
  void aSentinelUriServesBudgetsFromTheMaster() {
    RedisConnectionOptions options = RedisConnectionOptions.standalone(redis.uri()).build();
    assertTrue(options.isSentinel());
    assertEquals(redis.uri(), options.toString());
    try (RedisBudgetClient client = RedisBudgetClient.builder(options).callTimeout(Duration.ofMillis(500)).build()) {
      Eventually.await("connected through the Sentinels", Duration.ofSeconds(30), () -> !client.isDegraded());
      RetryBudget b = client.budget(BudgetConfig.builder("through-sentinel").build());
      assertEquals(BudgetDecision.Reason.GRANTED, b.acquireBlocking().reason());
      assertEquals(1L, redis.master().call("EXISTS", new BudgetKeys("through-sentinel").config()),
          "the budget lives on the master the Sentinels name");
    }
  }

  @Test
  @Order(2)
  void aKilledMasterIsReplacedAndTheSameClientIsServedByThePromotedReplica() {
    try (RedisBudgetClient client = RedisBudgetClient.builder(RedisConnectionOptions.standalone(redis.uri()).build())
        .callTimeout(Duration.ofMillis(500)).build()) {
      RetryBudget b = client.budget(BudgetConfig.builder("sentinel-failover").minRetriesPerSecond(10).build());
      Eventually.await("served before the failover", Duration.ofSeconds(30),
          () -> b.acquireBlocking().reason() == BudgetDecision.Reason.GRANTED);
      int before = redis.master().port();
      redis.master().kill();
      // down after 1 s, then the election and the promotion: a few seconds; 60 s leaves room for a loaded machine
      Eventually.await("the Sentinels promote a replica", Duration.ofSeconds(60), () -> redis.masterPortNow() != before);
      RedisServerProcess promoted = redis.byPort(redis.masterPortNow());
      assertTrue(redis.replicas().contains(promoted), "a replica was promoted");
      long served = Eventually.await("the same client served by the new master", Duration.ofSeconds(30),
          () -> b.acquireBlocking().reason() == BudgetDecision.Reason.GRANTED);
      assertTrue(String.valueOf(promoted.call("SCRIPT", "EXISTS", LuaScript.BUDGET.sha1())).contains("1"),
          "the scripts were loaded into the new master");
      assertEquals(1L, promoted.call("EXISTS", new BudgetKeys("sentinel-failover").pace()),
          "the grant was made on the new master");
      System.out.println("served by the promoted replica " + served + " ms after it was named");
    }
  }

  /**
   * A failover asked for while the master still runs (an operator's SENTINEL FAILOVER, or a
   * planned switch): the old master becomes a replica; the Sentinels close its client connections,
   * so the client reconnects through them to the new master instead of writing to a replica.
   */
  @Test
  @Order(3)
  void aDemotedMasterIsLeftForTheNewOneWithoutARestart() {
    try (RedisBudgetClient client = RedisBudgetClient.builder(RedisConnectionOptions.standalone(redis.uri()).build())
        .callTimeout(Duration.ofMillis(500)).build()) {
      RetryBudget b = client.budget(BudgetConfig.builder("sentinel-switch").minRetriesPerSecond(10).build());
      Eventually.await("served before the switch", Duration.ofSeconds(30),
          () -> b.acquireBlocking().reason() == BudgetDecision.Reason.GRANTED);
      int before = redis.masterPortNow();
      RedisServerProcess demoted = redis.byPort(before);
      // the replica the Sentinels moved under the promoted one must be in sync before it can be promoted
      // (the Sentinels may still be reconfiguring a replica after the test before, killing its normal
      // clients, the harness's connection among them: an I/O error there is "not yet")
      Eventually.await("a replica in sync with the master", Duration.ofSeconds(60), () -> redis.replicas().stream()
          .filter(r -> r != demoted)
          .map(SentinelBudgetTest::replicationOrNothing)
          .anyMatch(info -> info.contains("master_port:" + before + "\r\n") && info.contains("master_link_status:up")));
      // an operator's SENTINEL FAILOVER while the master still runs. Not yet possible while the
      // failover of the test before is being finished (INPROG), or until a Sentinel has seen the
      // reconfigured replica in sync (NOGOODSLAVE: it reads replicas' INFO every 10 s)
      Eventually.await("a failover accepted", Duration.ofSeconds(60), () -> {
        try {
          redis.failover();
          return true;
        } catch (java.io.UncheckedIOException e) {
          String why = String.valueOf(e.getCause().getMessage());
          if (why.contains("INPROG") || why.contains("NOGOODSLAVE")) {
            return false;
          }
          throw e;
        }
      });
      Eventually.await("the Sentinels switch the master", Duration.ofSeconds(60), () -> redis.masterPortNow() != before);
      RedisServerProcess now = redis.byPort(redis.masterPortNow());
      Eventually.await("the same client served by the new master", Duration.ofSeconds(30),
          () -> b.acquireBlocking().reason() == BudgetDecision.Reason.GRANTED
              && Long.valueOf(1L).equals(now.call("EXISTS", new BudgetKeys("sentinel-switch").pace())));
      // the Sentinels turn the old master into a replica with REPLICAOF and CLIENT KILL TYPE normal,
      // which can reset or close the harness's own connection mid-call (a reset, or the reply cut
      // short: "unexpected RESP type -1"): that is "not yet", and the next call opens a new connection
      Eventually.await("the old master made a replica", Duration.ofSeconds(30),
          () -> replicationOrNothing(demoted).contains("role:slave"));
    }
  }

  /**
   * A server's INFO replication, or "" when the call failed on an I/O error: the Sentinels' CLIENT KILL
   * of a server they reconfigure resets or closes the harness's connection mid-call, and the next call
   * opens a new one.
   */
  private static String replicationOrNothing(RedisServerProcess server) {
    try {
      return String.valueOf(server.call("INFO", "replication"));
    } catch (java.io.UncheckedIOException e) {
      return "";
    }
  }
}
