package io.retrybudget.budget;

import io.retrybudget.budget.internal.BudgetArithmetic;
import io.retrybudget.budget.internal.SlidingWindowCounts;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.LongSupplier;

/**
 * A budget kept in this process only, over this client's own counts (what Finagle's
 * RetryBudget does). Every client that uses one enforces its own floor, so a fleet of N such
 * clients allows N floors: use it only where no shared budget can be had, or as a benchmark
 * baseline. Thread-safe.
 */
public final class LocalRetryBudget implements RetryBudget {
  private final BudgetConfig config;
  private final LongSupplier millisClock;
  private final SlidingWindowCounts window;

  public LocalRetryBudget(BudgetConfig config) {
    this(config, System::currentTimeMillis);
  }

  /** With an injected clock in milliseconds, for tests. */
  public LocalRetryBudget(BudgetConfig config, LongSupplier millisClock) {
    this.config = config;
    this.millisClock = millisClock;
    this.window = new SlidingWindowCounts(config.windowSeconds() * 1000L);
  }

  @Override
  public String name() {
    return config.name();
  }

  @Override
  public java.util.Optional<BudgetConfig> configInForce() {
    return java.util.Optional.of(config);
  }

  @Override
  public synchronized void recordFirstAttempt() {
    window.add(millisClock.getAsLong(), 1, 0, 0);
  }

  @Override
  public synchronized BudgetDecision acquireBlocking() {
    long now = millisClock.getAsLong();
    long allowance = config.allowance(window.requests(now));
    if (BudgetArithmetic.admits(allowance, window.retries(now), 1)) {
      window.add(now, 0, 1, 0);
      return BudgetDecision.GRANTED;
    }
    window.add(now, 0, 0, 1);
    if (config.mode() == BudgetMode.SHADOW) {
      window.add(now, 0, 1, 0);
      return BudgetDecision.GRANTED_SHADOW;
    }
    return BudgetDecision.DENIED_EXHAUSTED;
  }

  @Override
  public CompletionStage<BudgetDecision> acquire() {
    return CompletableFuture.completedFuture(acquireBlocking());
  }

  /** First attempts, retries and refusals in the current window. */
  public synchronized long[] windowCounts() {
    long now = millisClock.getAsLong();
    return new long[] {window.requests(now), window.retries(now), window.denied(now)};
  }

  @Override
  public void close() {}
}
