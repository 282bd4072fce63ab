package io.retrybudget.budget;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.redis.protocol.BudgetScripts;
import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A client's close sends every budget's last counts at once and waits for them together: with Redis
 * answering, every count arrives; with Redis stopped (SIGSTOP) the close costs one wait (2 s), not
 * one a budget.
 */
class ClientCloseTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();
  private static final int BUDGETS = 5;

  @Test
  void everyBudgetsLastCountsArriveWhenTheClientCloses() {
    redis.flushAll();
    RedisBudgetClient client = RedisBudgetClient.builder(redis.connectionOptions().build()).build();
    for (int i = 0; i < BUDGETS; i++) {
      RetryBudget b = client.budget(BudgetConfig.builder("close-" + i).build());
      for (int k = 0; k <= i; k++) {
        b.recordFirstAttempt();
      }
    }
    client.close();
    RedisBudgetStore store = RedisBudgetStore.connect(redis.connectionOptions().build());
    try {
      BudgetScripts scripts = new BudgetScripts(store);
      for (int i = 0; i < BUDGETS; i++) {
        BudgetConfig c = BudgetConfig.builder("close-" + i).build();
        assertEquals(i + 1, scripts.status("close-" + i, c).orTimeout(5, TimeUnit.SECONDS).join().requests(), c.name());
      }
    } finally {
      store.close();
    }
  }

  /**
   * One after another, five budgets each waiting out its 2 s for a Redis that does not answer cannot
   * take less than 10 s, however idle the machine; together they take one 2 s wait, plus scheduling
   * (seconds at most at a load of 16), hence the bound of 8 s.
   */
  @Test
  void aRedisThatStoppedAnsweringCostsTheCloseOneWaitNotOneABudget() {
    redis.flushAll();
    AtomicLong now = new AtomicLong(1_000_000); // time stands still: no timer flush takes the counts first
    // Lettuce's own timeout past the close's 2 s, so that each last call waits the close's whole wait
    RedisBudgetClient client = RedisBudgetClient.builder(redis.connectionOptions().commandTimeout(Duration.ofSeconds(5))
        .build()).millisClock(now::get).build();
    List<RedisRetryBudget> budgets = new ArrayList<>();
    for (int i = 0; i < BUDGETS; i++) {
      budgets.add((RedisRetryBudget) client.budget(BudgetConfig.builder("stopped-" + i).build()));
    }
    Eventually.await("every budget's hello answered", Duration.ofSeconds(10),
        () -> budgets.stream().allMatch(b -> b.learned().activeClients() > 0));
    budgets.forEach(RetryBudget::recordFirstAttempt);
    long took;
    redis.server().pause();
    try {
      long start = System.nanoTime();
      client.close();
      took = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    } finally {
      redis.server().resume();
    }
    assertTrue(took >= RedisRetryBudget.CLOSE_FLUSH_TIMEOUT_MILLIS - 100, "it waited for the last calls: " + took + " ms");
    assertTrue(took < 8_000, "one wait for all five, not five waits: " + took + " ms");
  }
}
