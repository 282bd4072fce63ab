package io.retrybudget.budget;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.redis.protocol.BudgetKeys;
import io.retrybudget.budget.redis.protocol.LuaScript;
import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.budget.redis.protocol.WindowRing;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * SCRIPT FLUSH in the middle of 200 concurrent permit streams (200 budget clients of one budget on one
 * connection, several calls in flight each): calls that meet NOSCRIPT are sent again with a fresh
 * sequence number, so no later call of the same client makes them stale; no client degrades, no
 * decision comes from the fallback, and Redis holds exactly the first attempts recorded and the
 * grants the clients received.
 */
class ScriptFlushStormTest {
  private static final int STREAMS = 200;
  private static final int IN_FLIGHT = 3;
  private static final String NAME = "flush-storm";

  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();

  @Test
  void scriptsAreLoadedOnConnectAndOnEveryReconnect() {
    redis.server().restart();
    try (RedisBudgetStore store = RedisBudgetStore.connect(redis.connectionOptions().build())) {
      Eventually.await("loaded on connect", Duration.ofSeconds(3), this::allScriptsCached);
      redis.server().restart(); // an empty script cache, and the connection drops
      Eventually.await("loaded again on reconnect", Duration.ofSeconds(5), this::allScriptsCached);
      assertTrue(store.ping().join().equals("PONG"));
    }
  }

  private boolean allScriptsCached() {
    try {
      for (LuaScript script : LuaScript.BUDGET_SCRIPTS) {
        Object exists = redis.server().call("SCRIPT", "EXISTS", script.sha1());
        if (!(exists instanceof List<?> l) || !Long.valueOf(1).equals(l.get(0))) {
          return false;
        }
      }
      return true;
    } catch (RuntimeException e) {
      return false; // restarting
    }
  }

  @Test
  void scriptFlushMidStormDegradesNoClientAndLosesNoCount() throws Exception {
    redis.server().restart();
    // this test is about NOSCRIPT, not about a slow machine, so the client takes the longest timeouts
    // it allows (Lettuce's command timeout was its default 1 s, under the old 2 s call timeout, and so
    // the real bound). A reply waits for Lettuce's one I/O thread, which shares the JVM with the
    // storm's 200 busy threads: at a load of 16 on 2 cores that is over 200 runnable threads, and a
    // thread can wait a second for a core; 5 s is five such waits in a row
    try (RedisBudgetClient client = RedisBudgetClient.builder(redis.connectionOptions()
            .commandTimeout(Duration.ofSeconds(5)).build())
        .callTimeout(Duration.ofSeconds(5)).flushInterval(Duration.ofMillis(50)).exhaustedCacheTime(Duration.ZERO).build()) {
      BudgetConfig config = BudgetConfig.builder(NAME).ratio(0.5).windowSeconds(300).minRetriesPerSecond(100).build();
      List<RedisRetryBudget> budgets = new ArrayList<>();
      for (int i = 0; i < STREAMS; i++) {
        budgets.add((RedisRetryBudget) client.budget(config));
      }
      PermitStorm storm = new PermitStorm(budgets, IN_FLIGHT);
      try {
        Eventually.await("the storm runs", Duration.ofSeconds(10), () -> storm.decisions.get() > 2_000);
        long flushes = 0;
        for (int round = 0; round < 5; round++) {
          long before = storm.decisions.get();
          redis.server().call("SCRIPT", "FLUSH");
          flushes++;
          Eventually.await("the storm goes on after flush " + flushes, Duration.ofSeconds(10),
              () -> storm.decisions.get() > before + 1_500);
        }
      } finally {
        storm.close();
      }
      int degraded = storm.degradedClientsThenClose();
      WindowRing ring = new WindowRing(redis.server(), new BudgetKeys(NAME));
      String report = storm.report(ring.sum(WindowRing.Q), ring.sum(WindowRing.G), degraded);
      System.out.println("SCRIPT FLUSH storm: " + report);
      assertEquals(0, degraded, report);
      assertEquals(0, storm.fromFallback.get(), report);
      assertEquals(storm.recorded.get(), ring.sum(WindowRing.Q), "no first attempt lost or counted twice: " + report);
      // a grant is counted when Redis makes it: exactly those received, plus those leased and not used
      assertEquals(storm.granted.get() + storm.unusedPermits(), ring.sum(WindowRing.G),
          "Redis counted exactly the grants received and the leased ones left unused: " + report);
      assertTrue(storm.granted.get() > 0, report);
    }
  }
}
