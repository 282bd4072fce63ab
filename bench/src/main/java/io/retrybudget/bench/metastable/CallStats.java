package io.retrybudget.bench.metastable;

import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.retry.RetryListener;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * What the clients of one arm saw, per second: first attempts and retries sent (from the
 * executor's {@link RetryListener#onAttempt}), retries their budgets refused, calls that ended
 * with a success (goodput, with their latency from the call's start) or without one; and how
 * late the client process was, the largest delay in the second in milliseconds: its ticker
 * ({@code tick_lag_max}), its retry timers ({@code timer_lag_max}), and the answers, from the
 * backend's {@value #ANSWERED_HEADER} to the executor seeing them ({@code answer_lag_max}).
 */
final class CallStats {
  static final List<String> COLUMNS = List.of("first", "retries", "goodput", "failed", "denied", "tick_lag_max",
      "timer_lag_max", "answer_lag_max");
  /** The backend's clock when it sent an answer, epoch milliseconds. */
  static final String ANSWERED_HEADER = "X-Answered-Ms";

  private final PerSecond table;
  private final LongSupplier millisSinceStart;
  private final int first;
  private final int retries;
  private final int goodput;
  private final int failed;
  private final int denied;
  private final int answerLag;
  private final RetryListener listener = new RetryListener() {
    @Override
    public void onAttempt(int attempt) {
      table.add(second(), attempt == 1 ? first : retries, 1);
    }

    @Override
    public void onBudgetDenied(BudgetDecision decision) {
      table.add(second(), denied, 1);
    }

    @Override
    public void onAttemptEnded(int attempt, Object result, Throwable failure) {
      if (result instanceof java.net.http.HttpResponse<?> r) {
        String sent = r.headers().firstValue(ANSWERED_HEADER).orElse(null);
        if (sent != null) {
          table.max(second(), answerLag, Math.max(0, System.currentTimeMillis() - Long.parseLong(sent)));
        }
      }
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
    this.answerLag = table.column("answer_lag_max");
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

  /** The client process was {@code millis} late in {@code column} ({@code tick_lag_max}, {@code timer_lag_max}) now. */
  void lag(String column, long millis) {
    table.max(second(), table.column(column), millis);
  }

  PerSecond table() {
    return table;
  }
}
