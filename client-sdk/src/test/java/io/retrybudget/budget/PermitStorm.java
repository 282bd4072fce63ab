package io.retrybudget.budget;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One thread per budget that, until closed, records four first attempts and then asks for
 * {@code inFlight} permits at once, counting what comes back: the load of the fault storms.
 */
final class PermitStorm implements AutoCloseable {
  final AtomicLong recorded = new AtomicLong();
  final AtomicLong granted = new AtomicLong();
  final AtomicLong fromFallback = new AtomicLong();
  final AtomicLong decisions = new AtomicLong();
  private final AtomicBoolean running = new AtomicBoolean(true);
  private final List<Thread> threads = new ArrayList<>();
  private final List<RedisRetryBudget> budgets;

  PermitStorm(List<RedisRetryBudget> budgets, int inFlight) {
    this.budgets = budgets;
    for (RedisRetryBudget b : budgets) {
      Thread t = new Thread(() -> {
        while (running.get()) {
          for (int i = 0; i < 4; i++) {
            b.recordFirstAttempt();
          }
          recorded.addAndGet(4);
          List<CompletableFuture<BudgetDecision>> calls = new ArrayList<>();
          for (int i = 0; i < inFlight; i++) {
            calls.add(b.acquire().toCompletableFuture());
          }
          for (CompletableFuture<BudgetDecision> c : calls) {
            count(c.join());
          }
        }
      });
      t.setDaemon(true);
      t.start();
      threads.add(t);
    }
  }

  private void count(BudgetDecision d) {
    decisions.incrementAndGet();
    if (d.reason() == BudgetDecision.Reason.GRANTED) {
      granted.incrementAndGet();
    } else if (d.reason() == BudgetDecision.Reason.GRANTED_FALLBACK
        || d.reason() == BudgetDecision.Reason.DENIED_FALLBACK) {
      fromFallback.incrementAndGet();
    }
  }

  /** Stops the threads (waiting up to 10 s for each). */
  @Override
  public void close() throws InterruptedException {
    running.set(false);
    for (Thread t : threads) {
      t.join(10_000);
    }
  }

  /** How many budgets were ever degraded; closes them, so their last counts go to Redis. */
  int degradedClientsThenClose() {
    int degraded = 0;
    for (RedisRetryBudget b : budgets) {
      degraded += b.timesDegraded() > 0 ? 1 : 0;
      b.close();
    }
    return degraded;
  }

  /**
   * Permits Redis granted that no caller got: leased to a client and dropped unused, or held when it
   * closed (call after {@link #degradedClientsThenClose}). Counted in Redis when granted, as leases
   * are: Redis's grants are exactly those received plus these.
   */
  long unusedPermits() {
    long unused = 0;
    for (RedisRetryBudget b : budgets) {
      unused += b.unusedPermits();
    }
    return unused;
  }

  String report(long firstAttemptsInRedis, long grantsInRedis, int degraded) {
    return decisions.get() + " decisions, " + granted.get() + " granted, " + fromFallback.get()
        + " from the fallback, " + degraded + " clients degraded; Redis: " + firstAttemptsInRedis
        + " first attempts of " + recorded.get() + ", " + grantsInRedis + " grants (" + unusedPermits()
        + " of them leased and never used)";
  }
}
