package io.retrybudget.server;

import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.budget.RetryBudget;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * The whole service is overloaded when the fleet sheds more than a share of what it admits. Every
 * replica counts what it admits and sheds in one retry budget shared through Redis (the product's
 * own primitive, used through the SDK's public API): an admitted request is a "first attempt"
 * ({@link RetryBudget#recordFirstAttempt()}, no I/O), a shed one asks for a "permit". The budget
 * refuses permits once the fleet's sheds outpace {@code ratio * admitted + floor} (the budget is
 * paced: a rate, with half a second of it saved up; lua/README.md) —
 * that refusal is the service-wide signal. One replica shedding among healthy ones stays far below
 * the fleet's allowance, so it never tells clients to stop retrying.
 *
 * <p>Configure the budget as {@code BudgetConfig.builder("<service>.shed").ratio(0.5)
 * .minRetriesPerSecond(0)}: "overloaded when the fleet sheds more than half as much as it serves".
 * Both counts are sampled alike, one in {@code sampleEvery} (the ratio is kept, Redis sees 1/n of
 * the traffic); a permit request runs asynchronously, at most one at a time per replica (a shed
 * sampled while one is out is not counted: undercounting sheds errs towards "not overloaded").
 * The signal answers from the last decision, which counts for {@code freshnessNanos} (unknown
 * after that: not overloaded). Redis down (the budget's fallback decides) reads as not overloaded.
 */
public final class FleetShedSignal implements ServiceOverloadSignal {
  private final RetryBudget budget;
  private final LongSupplier nanoClock;
  private final long freshnessNanos;
  private final int sampleEvery;
  private final AtomicLong admitted = new AtomicLong();
  private final AtomicLong shed = new AtomicLong();
  private final AtomicBoolean asking = new AtomicBoolean();
  private final AtomicLong decisions = new AtomicLong();
  private volatile boolean overloaded;
  private volatile long decidedAt;

  public FleetShedSignal(RetryBudget budget, int sampleEvery, long freshnessNanos, LongSupplier nanoClock) {
    this.budget = Objects.requireNonNull(budget, "budget must not be null");
    if (sampleEvery < 1) {
      throw new IllegalArgumentException("sampleEvery must be >= 1, was " + sampleEvery);
    }
    this.sampleEvery = sampleEvery;
    if (freshnessNanos <= 0) {
      throw new IllegalArgumentException("freshnessNanos must be positive, was " + freshnessNanos);
    }
    this.freshnessNanos = freshnessNanos;
    this.nanoClock = Objects.requireNonNull(nanoClock, "nanoClock must not be null");
    this.decidedAt = nanoClock.getAsLong() - freshnessNanos - 1;
  }

  /** Every request counted, decisions fresh for one second on the system clock. */
  public FleetShedSignal(RetryBudget budget) {
    this(budget, 1, 1_000_000_000L, System::nanoTime);
  }

  @Override
  public boolean wholeServiceOverloaded() {
    return overloaded && nanoClock.getAsLong() - decidedAt <= freshnessNanos;
  }

  @Override
  public void onAdmitted() {
    if (admitted.incrementAndGet() % sampleEvery == 0) {
      budget.recordFirstAttempt();
    }
  }

  @Override
  public void onShed() {
    if (shed.incrementAndGet() % sampleEvery != 0) {
      return;
    }
    if (!asking.compareAndSet(false, true)) {
      return; // one question at a time; the sheds in between are not counted (undercounting is the safe side)
    }
    try {
      budget.acquire().whenComplete((decision, error) -> {
        if (error == null) {
          decided(decision);
        }
        asking.set(false);
      });
    } catch (RuntimeException e) {
      asking.set(false);
    }
  }

  private void decided(BudgetDecision decision) {
    BudgetDecision.Reason r = decision.reason();
    overloaded = r == BudgetDecision.Reason.DENIED_EXHAUSTED || r == BudgetDecision.Reason.DENIED_EXHAUSTED_CACHED;
    decidedAt = nanoClock.getAsLong();
    decisions.incrementAndGet();
  }

  /** How many budget decisions have come back (monotonic). */
  public long decisions() {
    return decisions.get();
  }
}
