package io.retrybudget.budget;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.redis.BudgetKeys;
import io.retrybudget.budget.redis.LuaScript;
import io.retrybudget.budget.redis.RedisBudgetStore;
import io.retrybudget.budget.redis.WindowRing;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
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
    // a generous call timeout: this test is about NOSCRIPT, not about a slow shared machine
    try (RedisBudgetClient client = RedisBudgetClient.builder(redis.connectionOptions().build())
        .callTimeout(Duration.ofSeconds(2)).flushInterval(Duration.ofMillis(50)).exhaustedCacheTime(Duration.ZERO).build()) {
      BudgetConfig config = BudgetConfig.builder(NAME).ratio(0.5).windowSeconds(300).minRetriesPerSecond(100).build();
      List<RedisRetryBudget> budgets = new ArrayList<>();
      for (int i = 0; i < STREAMS; i++) {
        budgets.add((RedisRetryBudget) client.budget(config));
      }
      AtomicBoolean running = new AtomicBoolean(true);
      AtomicLong recorded = new AtomicLong();
      AtomicLong granted = new AtomicLong();
      AtomicLong fromFallback = new AtomicLong();
      AtomicLong decisions = new AtomicLong();
      List<Thread> threads = new ArrayList<>();
      for (RedisRetryBudget b : budgets) {
        Thread t = new Thread(() -> {
          while (running.get()) {
            for (int i = 0; i < 4; i++) {
              b.recordFirstAttempt();
            }
            recorded.addAndGet(4);
            List<CompletableFuture<BudgetDecision>> calls = new ArrayList<>();
            for (int i = 0; i < IN_FLIGHT; i++) {
              calls.add(b.acquire().toCompletableFuture());
            }
            for (CompletableFuture<BudgetDecision> c : calls) {
              BudgetDecision d = c.join();
              decisions.incrementAndGet();
              if (d.reason() == BudgetDecision.Reason.GRANTED) {
                granted.incrementAndGet();
              } else if (d.reason() == BudgetDecision.Reason.GRANTED_FALLBACK
                  || d.reason() == BudgetDecision.Reason.DENIED_FALLBACK) {
                fromFallback.incrementAndGet();
              }
            }
          }
        });
        t.setDaemon(true);
        t.start();
        threads.add(t);
      }
      try {
        Eventually.await("the storm runs", Duration.ofSeconds(10), () -> decisions.get() > 2_000);
        long flushes = 0;
        for (int round = 0; round < 5; round++) {
          long before = decisions.get();
          redis.server().call("SCRIPT", "FLUSH");
          flushes++;
          Eventually.await("the storm goes on after flush " + flushes, Duration.ofSeconds(10),
              () -> decisions.get() > before + 1_500);
        }
      } finally {
        running.set(false);
        for (Thread t : threads) {
          t.join(TimeUnit.SECONDS.toMillis(10));
        }
      }
      int degraded = 0;
      for (RedisRetryBudget b : budgets) {
        degraded += b.timesDegraded() > 0 ? 1 : 0;
        b.close(); // the last counts go to Redis
      }
      WindowRing ring = new WindowRing(redis.server(), new BudgetKeys(NAME));
      String report = decisions.get() + " decisions, " + granted.get() + " granted, " + fromFallback.get()
          + " from the fallback, " + degraded + " clients degraded; Redis: " + ring.sum(WindowRing.Q) + " first attempts of "
          + recorded.get() + ", " + ring.sum(WindowRing.G) + " grants";
      System.out.println("SCRIPT FLUSH storm: " + report);
      assertEquals(0, degraded, report);
      assertEquals(0, fromFallback.get(), report);
      assertEquals(recorded.get(), ring.sum(WindowRing.Q), "no first attempt lost or counted twice: " + report);
      assertEquals(granted.get(), ring.sum(WindowRing.G), "Redis counted exactly the grants received: " + report);
      assertTrue(granted.get() > 0, report);
    }
  }
}
