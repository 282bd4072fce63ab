package io.retrybudget.bench.metastable;

import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.retry.RetryListener;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * What the clients of one arm saw, per second: first attempts and retries sent (from the
 * executor's {@link RetryListener#onAttempt}), retries their budgets refused, calls that ended
 * with a success (goodput, with their latency from the call's start) or without one.
 */
final class CallStats {
  static final List<String> COLUMNS = List.of("first", "retries", "goodput", "failed", "denied");

  private final PerSecond table;
  private final LongSupplier millisSinceStart;
  private final int first;
  private final int retries;
  private final int goodput;
  private final int failed;
  private final int denied;
  private final RetryListener listener = new RetryListener() {
    @Override
    public void onAttempt(int attempt) {
      table.add(second(), attempt == 1 ? first : retries, 1);
    }

    @Override
    public void onBudgetDenied(BudgetDecision decision) {
      table.add(second(), denied, 1);
    }
  };

  CallStats(PerSecond table, LongSupplier millisSinceStart) {
    this.table = table;
    this.millisSinceStart = millisSinceStart;
    this.first = table.column("first");
    this.retries = table.column("retries");
    this.goodput = table.column("goodput");
    this.failed = table.column("failed");
    this.denied = table.column("denied");
  }

  private int second() {
    return (int) Math.floorDiv(millisSinceStart.getAsLong(), 1000L);
  }

  /** Counts attempts and refusals: attach to every client's executor of the arm. */
  RetryListener listener() {
    return listener;
  }

  /** A call that started at {@code startedMillis} (since the run's start) ended now. */
  void ended(long startedMillis, boolean success) {
    long now = millisSinceStart.getAsLong();
    int s = (int) Math.floorDiv(now, 1000L);
    if (success) {
      table.add(s, goodput, 1);
      table.latency(s, (int) Math.min(Integer.MAX_VALUE, now - startedMillis));
    } else {
      table.add(s, failed, 1);
    }
  }

  PerSecond table() {
    return table;
  }
}
