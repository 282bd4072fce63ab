package io.retrybudget.budget;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.redis.protocol.BudgetKeys;
import io.retrybudget.budget.redis.protocol.LuaScript;
import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A client's own counts, which its LOCAL fallback decides over, against a real Redis: counts Redis
 * did not apply are sent again and counted once; when the budget degrades the fallback starts from
 * about nothing, whatever it saved up, and refills at the client's own pace (after an "exhausted"
 * answer too: not nothing for a window).
 */
class OwnCountsTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();

  private RedisBudgetClient client;

  @BeforeEach
  void start() {
    redis.server().restart();
    client = RedisBudgetClient.builder(redis.connectionOptions().build())
        .callTimeout(Duration.ofMillis(500)).exhaustedCacheTime(Duration.ZERO).build();
  }

  @AfterEach
  void stop() {
    client.close();
  }

  @Test
  void countsRedisDidNotApplyAreSentAgainAndCountedOnceLocally() throws Exception {
    RedisRetryBudget budget = (RedisRetryBudget) client.budget(BudgetConfig.builder("unapplied").build());
    Eventually.await("hello applied", Duration.ofSeconds(5), budget::heardFromRedis);
    BudgetKeys keys = new BudgetKeys("unapplied");
    // Redis takes this client's next calls for replays of one it already applied: every one is stale
    redis.server().call("HSET", keys.clients(), budget.clientId(), "999999999:0");
    for (int i = 0; i < 100; i++) {
      budget.recordFirstAttempt();
    }
    for (int i = 0; i < 3; i++) {
      budget.flush(true).get(5, TimeUnit.SECONDS);
    }
    assertEquals(0, requestsInRedis(keys), "stale calls are not applied");
    assertEquals(100, budget.ownRequests(), "each stale call put its counts back; the client's own window holds them once");
    redis.server().call("HDEL", keys.clients(), budget.clientId());
    budget.flush(true).get(5, TimeUnit.SECONDS);
    assertEquals(100, requestsInRedis(keys), "sent again, applied once");
    assertEquals(100, budget.ownRequests());
    assertFalse(budget.isDegraded(), "a stale reply is no failure of Redis");
  }

  @Test
  void theFallbackRefillsAtItsOwnPaceAfterRedisSaidExhausted() {
    // no floor: only first attempts refill; a one-minute window, so the old rule (nothing for a
    // window after "exhausted") would refuse for the whole test
    RetryBudget budget = client.budget(BudgetConfig.builder("spent-then-paced").minRetriesPerSecond(0)
        .ratio(1.0).windowSeconds(60).build());
    for (int i = 0; i < 50; i++) {
      budget.recordFirstAttempt();
    }
    Eventually.await("exhausted answer from Redis", Duration.ofSeconds(5), () -> {
      for (int i = 0; i < 200; i++) {
        if (budget.acquireBlocking().reason() == BudgetDecision.Reason.DENIED_EXHAUSTED) {
          return true;
        }
      }
      return false;
    });
    degradeThenExpectPacedGrants(budget);
  }

  @Test
  void theFallbackStartsEmptyWhenTheBudgetDegrades() {
    // first attempts that never asked for a retry: a balance saved up here would be granted at once
    // by every client of a fleet whose Redis fails, N retries in one go whatever the ratio
    RetryBudget budget = client.budget(BudgetConfig.builder("saved-up").minRetriesPerSecond(0)
        .ratio(1.0).windowSeconds(60).build());
    for (int i = 0; i < 100; i++) {
      budget.recordFirstAttempt();
    }
    Eventually.await("counted in Redis", Duration.ofSeconds(5), () -> {
      try {
        return requestsInRedis(new BudgetKeys("saved-up")) == 100;
      } catch (Exception e) {
        return false;
      }
    });
    degradeThenExpectPacedGrants(budget);
  }

  /** Kills Redis, waits for the budget to degrade; then no grant until new first attempts pay for one. */
  private static void degradeThenExpectPacedGrants(RetryBudget budget) {
    redis.server().kill();
    java.util.concurrent.atomic.AtomicInteger early = new java.util.concurrent.atomic.AtomicInteger();
    Eventually.await("degraded", Duration.ofSeconds(5), () -> {
      if (budget.acquireBlocking().granted()) {
        early.incrementAndGet();
      }
      return budget.isDegraded();
    });
    for (int i = 0; i < 5; i++) {
      if (budget.acquireBlocking().granted()) {
        early.incrementAndGet();
      }
    }
    assertEquals(0, early.get(), "grants before any new first attempt: the fallback starts from nothing");
    for (int i = 0; i < 20; i++) {
      budget.recordFirstAttempt();
    }
    int granted = 0;
    for (int i = 0; i < 40; i++) {
      BudgetDecision d = budget.acquireBlocking();
      if (d.granted()) {
        assertEquals(BudgetDecision.GRANTED_FALLBACK, d);
        granted++;
      }
    }
    // 20 first attempts at ratio 1.0 deposit 20 permits, under the cap (half a second of the rate),
    // less what an early grant or the starting phase owes
    assertTrue(granted >= 1 && early.get() + granted <= 20, "the fallback pays the new first attempts' share: "
        + granted + " of 20 (" + early.get() + " before)");
  }

  /** First attempts in the budget's window as status.lua reports them. */
  private static long requestsInRedis(BudgetKeys k) throws Exception {
    try (RedisBudgetStore store = RedisBudgetStore.connect(redis.connectionOptions().build())) {
      List<Object> s = store.run(LuaScript.STATUS, new String[] {k.config(), k.window(), k.pace()},
          "100000", "10", "10", "enforce").get(5, TimeUnit.SECONDS);
      return (Long) s.get(1);
    }
  }
}
