package io.retrybudget.retry;

import io.retrybudget.budget.AdaptiveThrottle;
import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.budget.RetryBudget;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.DoubleSupplier;
import java.util.function.LongSupplier;

/**
 * A retry budget that also looks at how attempts end: an {@link AdaptiveThrottle} (this client's
 * own view of how many of its attempts the dependency accepts) in front of a fleet budget. An
 * extra attempt is granted only when the throttle lets it through <em>and</em> the fleet budget
 * grants it; a throttled attempt never asks the fleet budget (no I/O).
 *
 * <p>Why both: a budget that is a fixed ratio of first attempts cannot tell a total outage (every
 * retry is wasted) from random failures (most retries succeed). The throttle can: with the
 * dependency accepting nothing its refusal probability approaches 1 and retries stop, whatever
 * the budget's ratio; while it accepts more than 1/K of the attempts (K = 2) it refuses nothing.
 * The fleet budget stays the worst-case cap for everything in between (a flapping backend, many
 * clients that each see a little), so its ratio can be larger (0.5) than a budget that alone must
 * keep an outage cheap (0.1).
 *
 * <p><b>What the throttle counts: retries only, when each has ended.</b> A retry that failed
 * and is followed by another ({@link RetryListener#onRetryScheduled} for attempt 3 or later) counts
 * one request; a call's last attempt, when it was a retry, counts one request, and one accept when
 * the call ended {@link RetryOutcome#SUCCESS} or {@link RetryOutcome#NOT_RETRYABLE}. First
 * attempts are not counted at all, nor the last attempt of a call that was cancelled, closed or
 * broke in user code (no telling how it went). Counting when an attempt has ended, not when it
 * starts, keeps retries still in flight from reading as failures when many calls retry at once;
 * counting each attempt as it ends, not the whole call at its end, lets the throttle learn from
 * the first retries that time out instead of waiting for their calls to run out of attempts.
 * (Hedges are counted only as their call's last attempt.) This departs from the SRE formula, which counts every request: the
 * question here is "is a retry worth sending", and how retries end answers it directly. Healthy
 * first attempts before an outage would otherwise dilute the window, and retries would flow (up to
 * the fleet budget) until failures filled {@code 1 - 1/K} of it; counted this way the throttle
 * closes after a handful of failed retries however healthy the minutes before were. Retries that
 * succeed where first attempts fail (another replica) keep flowing. Refused retries count as
 * requests, as in the formula, so a closed throttle lets through about {@code ln(asks)} retries per
 * window.
 *
 * <p>The throttle learns from the executor: attach {@link #listener()} to the executor or client
 * that uses this budget ({@code RetryingHttpClient.builder(http).budget(b).listener(b.listener())};
 * server-kit's {@code MiddleLayer} attaches it itself). Without the listener the throttle sees
 * nothing and never refuses: the budget is then the fleet budget alone. A throttled attempt is answered
 * {@link BudgetDecision#DENIED_THROTTLED} (the executor ends the call with
 * {@link RetryBudgetExhaustedException}) and is counted in {@link #throttled()}; it is not counted
 * as {@code denied} in the fleet budget, which it never asked.
 */
public final class SuccessAwareBudget implements RetryBudget {
  private final RetryBudget fleet;
  private final AdaptiveThrottle throttle;
  private final LongSupplier nanoClock;
  private final DoubleSupplier random;
  private final AtomicLong throttled = new AtomicLong();
  private final RetryListener listener;

  private SuccessAwareBudget(Builder b) {
    this.fleet = b.fleet;
    this.throttle = new AdaptiveThrottle(b.config);
    this.nanoClock = b.nanoClock;
    this.random = b.random;
    this.listener = new RetryListener() {
      @Override
      public void onRetryScheduled(int nextAttempt, long delayNanos, Throwable failure) {
        if (nextAttempt > 2) {
          throttle.record(nanoClock.getAsLong(), 1, 0); // attempt nextAttempt - 1, a retry, failed
        }
      }

      @Override
      public void onOutcome(RetryOutcome outcome, int attempts) {
        if (attempts <= 1 || outcome == RetryOutcome.CANCELLED || outcome == RetryOutcome.CLOSED
            || outcome == RetryOutcome.ERROR) {
          return; // the last attempt was the first, or there is no telling how it went
        }
        boolean accepted = outcome == RetryOutcome.SUCCESS || outcome == RetryOutcome.NOT_RETRYABLE;
        throttle.record(nanoClock.getAsLong(), 1, accepted ? 1 : 0); // the call's last attempt, a retry
      }
    };
  }

  /** The fleet budget behind a throttle of the default configuration (K 2, 10 s window). */
  public static SuccessAwareBudget wrap(RetryBudget fleet) {
    return builder(fleet).build();
  }

  public static Builder builder(RetryBudget fleet) {
    return new Builder(fleet);
  }

  /** The listener that feeds the throttle: attach it to the executor or client using this budget. */
  public RetryListener listener() {
    return listener;
  }

  /** The throttle's counts and refusal probability now. */
  public AdaptiveThrottle.Snapshot throttleState() {
    return throttle.snapshot(nanoClock.getAsLong());
  }

  /** Extra attempts the throttle refused (never asked of the fleet budget). */
  public long throttled() {
    return throttled.get();
  }

  /** The fleet budget behind the throttle. */
  public RetryBudget fleet() {
    return fleet;
  }

  private boolean throttle() {
    if (throttle.refuse(nanoClock.getAsLong(), random.getAsDouble())) {
      throttled.incrementAndGet();
      return true;
    }
    return false;
  }

  @Override
  public String name() {
    return fleet.name();
  }

  @Override
  public void recordFirstAttempt() {
    fleet.recordFirstAttempt();
  }

  @Override
  public BudgetDecision acquireBlocking() {
    return throttle() ? BudgetDecision.DENIED_THROTTLED : fleet.acquireBlocking();
  }

  @Override
  public CompletionStage<BudgetDecision> acquire() {
    return throttle() ? CompletableFuture.completedFuture(BudgetDecision.DENIED_THROTTLED) : fleet.acquire();
  }

  @Override
  public Optional<BudgetConfig> configInForce() {
    return fleet.configInForce();
  }

  @Override
  public boolean isDegraded() {
    return fleet.isDegraded();
  }

  @Override
  public boolean isSlow() {
    return fleet.isSlow();
  }

  /** The fleet budget's: the throttle holds no permits. */
  @Override
  public java.util.OptionalLong remainingPermits() {
    return fleet.remainingPermits();
  }

  /** Closes the fleet budget. */
  @Override
  public void close() {
    fleet.close();
  }

  @Override
  public String toString() {
    return "SuccessAwareBudget{" + fleet.name() + ", " + throttle.config() + "}";
  }

  public static final class Builder {
    private final RetryBudget fleet;
    private AdaptiveThrottle.Config config = AdaptiveThrottle.Config.defaults();
    private LongSupplier nanoClock = System::nanoTime;
    private DoubleSupplier random = () -> ThreadLocalRandom.current().nextDouble();

    private Builder(RetryBudget fleet) {
      this.fleet = Objects.requireNonNull(fleet, "fleet must not be null");
    }

    public Builder throttle(AdaptiveThrottle.Config config) {
      this.config = Objects.requireNonNull(config, "throttle must not be null");
      return this;
    }

    /** A monotonic nanosecond clock (tests: fake time). */
    public Builder nanoClock(LongSupplier nanoClock) {
      this.nanoClock = Objects.requireNonNull(nanoClock, "nanoClock must not be null");
      return this;
    }

    /** Uniform draws in [0, 1) (tests: a fixed sequence). */
    public Builder random(DoubleSupplier random) {
      this.random = Objects.requireNonNull(random, "random must not be null");
      return this;
    }

    public SuccessAwareBudget build() {
      return new SuccessAwareBudget(this);
    }
  }
}
