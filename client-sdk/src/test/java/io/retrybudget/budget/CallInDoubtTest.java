package io.retrybudget.budget;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import io.retrybudget.budget.redis.protocol.BudgetScripts;
import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisServerProcess;
import io.retrybudget.testing.TcpProxy;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A budget's call of unknown fate on real connections: lost on its way (a {@link TcpProxy} drops it,
 * then resets the connection), or run after its timeout (Redis paused). Its counts go with the next
 * call on the same way, and Redis (or the relay: here a second redis-server, which answers budget.lua
 * as a relay does) adds them only if it never ran: every count exactly once. The engine's waits run on
 * a fake clock; the real-time waits are {@link Eventually} bounds of seconds for Lettuce's command
 * timeout (300 ms) and reconnect, so a loaded machine only slows the test.
 */
class CallInDoubtTest {
  private final AtomicLong now = new AtomicLong(1_000_000);
  private final List<AutoCloseable> closing = new java.util.ArrayList<>();

  @AfterEach
  void stop() {
    java.util.Collections.reverse(closing);
    for (AutoCloseable c : closing) {
      try {
        c.close();
      } catch (Exception ignored) {
        // the next one still closes
      }
    }
  }

  private <T extends AutoCloseable> T closing(T c) {
    closing.add(c);
    return c;
  }

  private static RedisConnectionOptions.Builder options(String uri) {
    return RedisConnectionOptions.standalone(uri).reconnectDelayMax(Duration.ofMillis(50))
        .connectTimeout(Duration.ofSeconds(10)).commandTimeout(Duration.ofMillis(300));
  }

  private static long requests(RedisBudgetStore store, String name) {
    return new BudgetScripts(store).status(name, BudgetConfig.builder(name).build()).orTimeout(5, TimeUnit.SECONDS)
        .join().requests();
  }

  /** Counts {@code n} first attempts and sends them with one call 10 s later on the fake clock. */
  private void send(RedisRetryBudget budget, int n) throws Exception {
    send(budget, n, 10_000);
  }

  private void send(RedisRetryBudget budget, int n, long afterMillis) throws Exception {
    for (int i = 0; i < n; i++) {
      budget.recordFirstAttempt();
    }
    now.addAndGet(afterMillis);
    budget.flush(true).get(5, TimeUnit.SECONDS);
  }

  /** Flushes a second apart on the fake clock (within the 60 s counts in doubt are kept) until none is held. */
  private void carried(RedisRetryBudget budget, String why) {
    Eventually.await(why, Duration.ofSeconds(10), () -> {
      try {
        send(budget, 0, 1_000);
      } catch (Exception e) {
        return false; // a call that did not end in time: the next try
      }
      return !budget.holdsDoubt();
    });
  }

  private static void reaches(RedisBudgetStore store, String name, long expected, String why) {
    Eventually.await(why + ": " + expected, Duration.ofSeconds(10), () -> requests(store, name) >= expected);
    assertEquals(expected, requests(store, name), why + ": applied once");
  }

  /** Sends {@code n} first attempts in a call that fails of unknown fate, and waits until the budget holds it in doubt. */
  private void sendInDoubt(RedisRetryBudget budget, int n) throws Exception {
    send(budget, n);
    Eventually.await("the call fails of unknown fate (Lettuce's 300 ms command timeout)", Duration.ofSeconds(10),
        budget::holdsDoubt);
  }

  @Test
  void aCallLostOnItsWayIsCountedOnceByTheNext() throws Exception {
    RedisServerProcess redis = closing(RedisServerProcess.start());
    TcpProxy proxy = closing(new TcpProxy(redis.port()));
    RedisBudgetClient client = closing(RedisBudgetClient.builder(options(proxy.uri()).build())
        .callTimeout(Duration.ofSeconds(1)).millisClock(now::get).build());
    RedisBudgetStore store = closing(RedisBudgetStore.connect(options(redis.uri()).build()));
    RedisRetryBudget budget = (RedisRetryBudget) client.budget(BudgetConfig.builder("lost").build());
    send(budget, 5);
    reaches(store, "lost", 5, "the first call");
    proxy.lose();
    sendInDoubt(budget, 7);
    proxy.reset(); // the connection goes: the 7 never reached Redis
    carried(budget, "the client reconnects, and its next call carries the 7");
    send(budget, 3);
    reaches(store, "lost", 15, "5, the 7 carried by the next call, 3");
    assertEquals(0, budget.lostInDoubt());
  }

  @Test
  void aCallThatRanAfterItsTimeoutIsNotCountedAgain() throws Exception {
    RedisServerProcess redis = closing(RedisServerProcess.start());
    RedisBudgetClient client = closing(RedisBudgetClient.builder(options(redis.uri()).build())
        .callTimeout(Duration.ofSeconds(1)).millisClock(now::get).build());
    RedisBudgetStore store = closing(RedisBudgetStore.connect(options(redis.uri()).build()));
    RedisRetryBudget budget = (RedisRetryBudget) client.budget(BudgetConfig.builder("late").build());
    send(budget, 5);
    reaches(store, "late", 5, "the first call");
    redis.pause();
    try {
      sendInDoubt(budget, 7);
    } finally {
      redis.resume(); // the 7 waited in the socket: it runs now, ahead of any later call
    }
    reaches(store, "late", 12, "the call that timed out ran");
    send(budget, 3); // carries the 7, which Redis does not add again
    reaches(store, "late", 15, "5, 7 once, 3");
    assertFalse(budget.holdsDoubt());
  }

  @Test
  void countsInDoubtWaitForTheirWayAndGoWhenTheRouteComesHome() throws Exception {
    RedisServerProcess relay = closing(RedisServerProcess.start());
    RedisServerProcess redis = closing(RedisServerProcess.start());
    TcpProxy proxy = closing(new TcpProxy(relay.port()));
    RedisBudgetClient client = closing(RedisBudgetClient.builder(options(redis.uri()).build())
        .relays(List.of(options(proxy.uri()).build())).relayRetryAfter(Duration.ofSeconds(20))
        .callTimeout(Duration.ofSeconds(1)).millisClock(now::get).build());
    RedisBudgetStore relayStore = closing(RedisBudgetStore.connect(options(relay.uri()).build()));
    RedisBudgetStore redisStore = closing(RedisBudgetStore.connect(options(redis.uri()).build()));
    RedisRetryBudget budget = (RedisRetryBudget) client.budget(BudgetConfig.builder("routed").build());
    send(budget, 5);
    reaches(relayStore, "routed", 5, "the home relay takes the calls");
    proxy.lose();
    sendInDoubt(budget, 7);
    proxy.reset();
    send(budget, 2); // the relay is passed over for 20 s: to Redis, without the relay's counts in doubt
    reaches(redisStore, "routed", 2, "Redis takes the next call");
    assertEquals(5, requests(relayStore, "routed"), "the 7 are not sent to Redis: its numbers are not the relay's");
    now.addAndGet(20_000); // the route comes home
    carried(budget, "the relay takes calls again, and the next carries the 7");
    send(budget, 3);
    reaches(relayStore, "routed", 15, "5, the 7 carried home, 3");
    assertEquals(2, requests(redisStore, "routed"));
    assertEquals(0, budget.lostInDoubt());
  }
}
