package io.retrybudget.budget;

import io.retrybudget.budget.internal.PaceArithmetic;
import io.retrybudget.budget.internal.PacedBalance;
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
  private final PacedBalance balance = new PacedBalance();
  private long undeposited; // first attempts not yet deposited into the balance

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
    undeposited++;
  }

  /**
   * The paced rule of lua/budget.lua over this process's counts: first attempts deposit {@code
   * ratio} permits each (here when the next permit is asked for, as a Redis budget's flush does), the
   * floor refills {@code minRetriesPerSecond} a second, the balance is capped at one second of both.
   */
  @Override
  public synchronized BudgetDecision acquireBlocking() {
    long now = millisClock.getAsLong();
    long available = balance.update(now, undeposited, window.requests(now), window.spanMillis(now), config.windowSeconds(),
        config.ratioPpm(), config.minRetriesPerSecond() * PaceArithmetic.PPM);
    undeposited = 0;
    if (available >= 1) {
      balance.take(1);
      window.add(now, 0, 1, 0);
      return BudgetDecision.GRANTED;
    }
    window.add(now, 0, 0, 1);
    if (config.mode() == BudgetMode.SHADOW) {
      window.add(now, 0, 1, 0);
      return BudgetDecision.GRANTED_SHADOW;
    }
    // when the balance holds a whole permit again at its refill rate (none: no first attempts, no floor)
    return BudgetDecision.denied(BudgetDecision.Reason.DENIED_EXHAUSTED, balance.nextMillis());
  }

  @Override
  public CompletionStage<BudgetDecision> acquire() {
    return CompletableFuture.completedFuture(acquireBlocking());
  }

  /** Permits that could be granted now. */
  public synchronized long available() {
    long now = millisClock.getAsLong();
    long available = balance.update(now, undeposited, window.requests(now), window.spanMillis(now), config.windowSeconds(),
        config.ratioPpm(), config.minRetriesPerSecond() * PaceArithmetic.PPM);
    undeposited = 0;
    return available;
  }

  /** {@link #available()}: this process's own balance now. */
  @Override
  public java.util.OptionalLong remainingPermits() {
    return java.util.OptionalLong.of(available());
  }

  /** First attempts, retries and refusals in the current window. */
  public synchronized long[] windowCounts() {
    long now = millisClock.getAsLong();
    return new long[] {window.requests(now), window.retries(now), window.denied(now)};
  }

  @Override
  public void close() {}
}
