package io.retrybudget.budget;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.redis.protocol.BudgetScripts;
import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisServerProcess;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The client's route on real connections and a fake clock: a "relay" here is a second redis-server
 * (a relay answers budget.lua's calls exactly as Redis does, so the route cannot tell), the way
 * behind it the real Redis. The route's waits run on the fake clock; the only real-time waits are
 * {@link Eventually} bounds of seconds for a connection to notice its server gone or back (Lettuce:
 * milliseconds), so a loaded machine only slows the test. Every count is checked exactly.
 */
class RelayRouteTest {
  // longer than every flush interval the test steps over, so only the step below ends the wait
  private static final Duration RETRY_AFTER = Duration.ofMinutes(1);
  private RedisServerProcess relay;
  private RedisServerProcess redis;
  private final AtomicLong now = new AtomicLong(1_000_000);
  private RedisBudgetClient client;
  private RedisBudgetStore relayStore;
  private RedisBudgetStore redisStore;

  @BeforeEach
  void start() {
    relay = RedisServerProcess.start();
    redis = RedisServerProcess.start();
    client = RedisBudgetClient.builder(options(redis).build())
        .relays(List.of(options(relay).commandTimeout(Duration.ofMillis(300)).build()))
        .relayRetryAfter(RETRY_AFTER).callTimeout(Duration.ofSeconds(1)).millisClock(now::get).build();
    relayStore = RedisBudgetStore.connect(options(relay).build());
    redisStore = RedisBudgetStore.connect(options(redis).build());
  }

  @AfterEach
  void stop() {
    for (AutoCloseable c : new AutoCloseable[] {client, relayStore, redisStore, relay, redis}) {
      try {
        if (c != null) {
          c.close();
        }
      } catch (Exception ignored) {
        // the next one still closes
      }
    }
  }

  /** A connect timeout of 10 s: a connection's handshake can take seconds on a loaded machine. */
  private static RedisConnectionOptions.Builder options(RedisServerProcess server) {
    return RedisConnectionOptions.standalone(server.uri()).reconnectDelayMax(Duration.ofMillis(50))
        .connectTimeout(Duration.ofSeconds(10));
  }

  private static long requests(RedisBudgetStore store, String name) {
    return new BudgetScripts(store).status(name, BudgetConfig.builder(name).build()).orTimeout(5, TimeUnit.SECONDS)
        .join().requests();
  }

  /**
   * Counts {@code n} first attempts and sends them with one call, a flush interval (10 s at most)
   * later on the fake clock; waits for its end (5 s at most).
   */
  private void send(RedisRetryBudget budget, int n) throws Exception {
    for (int i = 0; i < n; i++) {
      budget.recordFirstAttempt();
    }
    now.addAndGet(10_000);
    budget.flush(true).get(5, TimeUnit.SECONDS);
  }

  /**
   * Waits until {@code store} holds {@code expected} first attempts of {@code name} (a call's reply can
   * come after the engine's flush timeout on a loaded machine: 10 s for a call of milliseconds).
   */
  private static void reaches(RedisBudgetStore store, String name, long expected, String why) {
    Eventually.await(why + ": " + expected, Duration.ofSeconds(10), () -> requests(store, name) >= expected);
    assertEquals(expected, requests(store, name), why + ": applied once");
  }

  @Test
  void homeRelayThenRedisWhileItIsDownThenHomeAgain() throws Exception {
    RedisRetryBudget budget = (RedisRetryBudget) client.budget(BudgetConfig.builder("routed").build());
    send(budget, 5);
    reaches(relayStore, "routed", 5, "the home relay takes the calls");
    assertEquals(0, requests(redisStore, "routed"));

    RoutedPort port = client.routedPort();
    Eventually.await("the client connected to Redis too", Duration.ofSeconds(10), () -> port.connected(1));
    relay.kill();
    Eventually.await("the client sees its relay gone", Duration.ofSeconds(10), () -> !port.connected(0));
    send(budget, 3);
    reaches(redisStore, "routed", 3, "nothing was sent to the dead relay: all go to Redis");
    assertFalse(client.isDegraded(), "Redis takes the calls");

    relay.restart(); // empty: its counts are gone with the process
    relayStore.close();
    relayStore = RedisBudgetStore.connect(options(relay).build());
    Eventually.await("the client reconnected to its relay", Duration.ofSeconds(10), () -> port.connected(0));
    send(budget, 2);
    reaches(relayStore, "routed", 2, "home again as soon as it is connected: no call of the client failed there");
    assertEquals(3, requests(redisStore, "routed"));
  }

  @Test
  void aCallThatFailedIsNeverSentAlongTheRouteAndItsWayWaitsItsTurn() throws Exception {
    RedisRetryBudget budget = (RedisRetryBudget) client.budget(BudgetConfig.builder("once").build());
    send(budget, 1);
    reaches(relayStore, "once", 1, "the relay took the first call");
    relay.pause(); // SIGSTOP: the call is written, never answered in time
    try {
      send(budget, 10); // fails after the relay connection's 300 ms command timeout: counted as lost
      Eventually.await("the route passed over the stopped relay", Duration.ofSeconds(10),
          () -> client.routedPort().passedOver(0));
      send(budget, 7);
      reaches(redisStore, "once", 7, "only the calls after the failed one go to the next way");
    } finally {
      relay.resume();
    }
    // the stopped relay runs the call it had read: it is applied there, once, and nowhere else
    reaches(relayStore, "once", 11, "the relay applied the call it held");
    assertEquals(7, requests(redisStore, "once"), "the failed call never went on to Redis");
    Eventually.await("the client's connection to the relay is up", Duration.ofSeconds(10),
        () -> client.routedPort().connected(0));
    send(budget, 2);
    reaches(redisStore, "once", 9, "the relay whose call failed is passed over until its wait is over");
    now.addAndGet(RETRY_AFTER.toMillis());
    send(budget, 4);
    reaches(relayStore, "once", 15, "then tried again first");
    assertEquals(9, requests(redisStore, "once"));
  }

  @Test
  void withNoWayLeftTheFallbackDecidesAtOnce() throws Exception {
    RetryBudget budget = client.budget(BudgetConfig.builder("alone").minRetriesPerSecond(0).build());
    RoutedPort port = client.routedPort();
    relay.kill();
    redis.kill();
    Eventually.await("the client sees both gone", Duration.ofSeconds(10), () -> !port.connected(0) && !port.connected(1));
    assertTrue(client.isDegraded());
    java.util.concurrent.CompletableFuture<BudgetDecision> asked = budget.acquire().toCompletableFuture();
    // no call was sent, so nothing is waited for: decided before acquire() returned
    assertTrue(asked.isDone(), "decided at once, not after the call timeout");
    assertEquals(BudgetDecision.Reason.DENIED_FALLBACK, asked.join().reason());
    assertEquals(io.retrybudget.budget.redis.transport.FailoverRoute.NONE, port.current(), "no way was open");
  }

  @Test
  void wrongRelaysAreRefusedByName() {
    RedisBudgetClient.Builder b = RedisBudgetClient.builder(options(redis).build());
    RedisConnectionOptions a = RedisConnectionOptions.standalone("redis://relay-a:6380").build();
    assertEquals("relays must be distinct and not Redis itself, was redis://relay-a:6380 twice",
        assertThrows(IllegalArgumentException.class, () -> b.relays(List.of(a, a))).getMessage());
    assertThrows(IllegalArgumentException.class, () -> b.relays(List.of(options(redis).build())));
    assertThrows(NullPointerException.class, () -> b.relays(null));
    assertEquals("relayRetryAfter must be in [10ms, 10min], was PT0.001S",
        assertThrows(IllegalArgumentException.class, () -> b.relayRetryAfter(Duration.ofMillis(1))).getMessage());
    assertThrows(IllegalArgumentException.class, () -> b.relayRetryAfter(Duration.ofMinutes(11)));
  }
}
