package io.retrybudget.budget;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/** The timers a {@link RedisRetryBudget} uses: injectable, so tests run the engine on fake time. */
interface EngineTimer {
  /** Something scheduled, to be called off. */
  interface Cancel {
    void cancel();
  }

  /** Runs {@code task} every {@code periodMillis}, the first time after {@code initialMillis}. */
  Cancel every(Runnable task, long initialMillis, long periodMillis);

  /** Runs {@code task} soon, on the timer. */
  void execute(Runnable task);

  /**
   * A copy of {@code call} that fails with {@link java.util.concurrent.TimeoutException} unless
   * {@code call} completes within {@code timeoutMillis}; {@code call} itself is left to complete (its
   * late reply can still be used).
   */
  <T> CompletableFuture<T> within(CompletableFuture<T> call, long timeoutMillis);

  /**
   * The timer of a {@link RedisBudgetClient}: its one timer thread, periodic tasks grouped by phase
   * ({@link TickGroups}: one timer task for the budgets whose ticks fall in the same 10 ms), and the
   * JDK's timeouts.
   */
  static EngineTimer of(ScheduledExecutorService scheduler) {
    TickGroups ticks = new TickGroups((task, initialNanos, periodNanos) -> {
      ScheduledFuture<?> f = scheduler.scheduleAtFixedRate(task, initialNanos, periodNanos, TimeUnit.NANOSECONDS);
      return () -> f.cancel(false);
    }, System::nanoTime);
    return new EngineTimer() {
      @Override
      public Cancel every(Runnable task, long initialMillis, long periodMillis) {
        return ticks.every(task, initialMillis, periodMillis);
      }

      @Override
      public void execute(Runnable task) {
        scheduler.execute(task);
      }

      @Override
      public <T> CompletableFuture<T> within(CompletableFuture<T> call, long timeoutMillis) {
        return call.copy().orTimeout(timeoutMillis, TimeUnit.MILLISECONDS);
      }
    };
  }
}
