package io.retrybudget.retry;

import io.retrybudget.budget.BudgetDecision;
import java.time.Duration;

/**
 * The decisions of a call, shared by the synchronous and the asynchronous path: what an attempt's
 * answer means ({@link #judge}, which runs the policy's user code), whether to retry and after how
 * long ({@link #next}, pure), what a budget answer means ({@link #afterBudget}, pure) and how long
 * the next attempt may take ({@link #attemptBudgetNanos}, pure: none at all means none may start).
 * No clock, no random source, no I/O: the runner passes the time spent and a random number in.
 */
public final class RetryPlanner {

  /** {@code stop == null} means retry after {@code delayNanos}. */
  public record Plan(RetryOutcome stop, long delayNanos) {
    static Plan retryAfter(long nanos) {
      return new Plan(null, nanos);
    }

    static Plan stop(RetryOutcome why) {
      return new Plan(why, -1);
    }

    public boolean retry() {
      return stop == null;
    }

    /** A stop that ends the call even while other attempts of its round still run. */
    boolean endsRound() {
      return stop != null && stop != RetryOutcome.MAX_ATTEMPTS && stop != RetryOutcome.DEADLINE
          && stop != RetryOutcome.SERVER_DELAY_TOO_LONG;
    }
  }

  /** What the policy says about one attempt's answer: the part of a decision that runs user code. */
  public record Verdict(boolean retryable, boolean failed, Duration serverDelay) {
    static final Verdict ACCEPTED = new Verdict(false, false, null);
    static final Verdict FATAL = new Verdict(false, true, null);
    static final Verdict RETRYABLE = new Verdict(true, true, null);
    static final Verdict RETRYABLE_RESULT = new Verdict(true, false, null);
  }

  /** What a budget answer to a planned retry means. */
  public enum AfterBudget {
    /** Granted and the delay still fits: back off, then retry. */
    PROCEED,
    /** Refused (or no answer): end the call with {@link RetryBudgetExhaustedException}. */
    DENIED,
    /** Granted, but the budget call took the time the delay needed. */
    DEADLINE
  }

  private static final Plan SUCCESS = Plan.stop(RetryOutcome.SUCCESS);
  private static final Plan NOT_RETRYABLE = Plan.stop(RetryOutcome.NOT_RETRYABLE);
  private final RetryPolicy policy;

  public RetryPlanner(RetryPolicy policy) {
    this.policy = policy;
  }

  /**
   * Runs the policy's predicates and server-delay extractor on an attempt's answer (user code:
   * the asynchronous executor calls it outside its lock). Allocates nothing for a success.
   */
  public Verdict judge(Object result, Throwable failure) {
    boolean retryable = failure != null ? policy.shouldRetry(failure) : policy.shouldRetryResult(result);
    if (!retryable) {
      return failure == null ? Verdict.ACCEPTED : Verdict.FATAL;
    }
    Duration asked = policy.serverDelay(result, failure);
    if (asked == null) {
      return failure != null ? Verdict.RETRYABLE : Verdict.RETRYABLE_RESULT;
    }
    return new Verdict(true, failure != null, asked);
  }

  /**
   * @param verdict what {@link #judge} said about the attempt's answer
   * @param attemptsMade attempts started so far (1 after the first), hedges included
   * @param previousDelayNanos the delay before the last retry (0 before the first retry)
   * @param elapsedNanos time since the call started
   * @param keyed whether the call carries an idempotency key
   * @param random uniform in [0, 1)
   */
  public Plan next(Verdict verdict, int attemptsMade, long previousDelayNanos, long elapsedNanos, boolean keyed,
      double random) {
    if (!verdict.retryable()) {
      return verdict.failed() ? NOT_RETRYABLE : SUCCESS;
    }
    if (!policy.idempotent() && !keyed) {
      return Plan.stop(RetryOutcome.NOT_IDEMPOTENT);
    }
    Duration asked = verdict.serverDelay();
    if (asked != null && asked.isNegative()) {
      return Plan.stop(RetryOutcome.SERVER_SAYS_NO);
    }
    if (attemptsMade >= policy.maxAttempts()) {
      return Plan.stop(RetryOutcome.MAX_ATTEMPTS);
    }
    long delay = policy.backoff().delayNanos(attemptsMade - 1, previousDelayNanos, random);
    long left = policy.deadline() == null ? Long.MAX_VALUE : policy.deadline().toNanos() - elapsedNanos;
    if (asked != null) {
      // wait at least what the server asked; if that is beyond the cap or the time left, stop now
      // (compared as Durations first: a server may ask for more than a long of nanoseconds holds)
      if (asked.compareTo(policy.backoff().cap()) > 0 || asked.toNanos() >= left) {
        return Plan.stop(RetryOutcome.SERVER_DELAY_TOO_LONG);
      }
      delay = Math.max(delay, asked.toNanos());
    }
    if (delay >= left) {
      return Plan.stop(RetryOutcome.DEADLINE); // never sleep past the deadline, nor start an attempt with no time
    }
    return Plan.retryAfter(delay);
  }

  /** {@link #judge} and {@link #next} in one step. */
  public Plan next(int attemptsMade, long previousDelayNanos, long elapsedNanos, Object result, Throwable failure,
      boolean keyed, double random) {
    return next(judge(result, failure), attemptsMade, previousDelayNanos, elapsedNanos, keyed, random);
  }

  /**
   * The step after the budget answered a planned retry (null: it could not answer), on both paths:
   * a refusal ends the call; a grant whose wait no longer fits the deadline ends it too.
   */
  public AfterBudget afterBudget(BudgetDecision decision, long elapsedNanos, long delayNanos) {
    if (decision == null || !decision.granted()) {
      return AfterBudget.DENIED;
    }
    return fitsDeadline(elapsedNanos, delayNanos) ? AfterBudget.PROCEED : AfterBudget.DEADLINE;
  }

  /** Whether a retry planned now still fits the deadline after {@code delayNanos}. */
  public boolean fitsDeadline(long elapsedNanos, long delayNanos) {
    return policy.deadline() == null || delayNanos < policy.deadline().toNanos() - elapsedNanos;
  }

  /**
   * Time the next attempt may take: the attempt timeout, cut to what the deadline leaves. Zero or
   * less: no attempt may start (checked before every attempt, after every sleep and late timer).
   */
  public long attemptBudgetNanos(long elapsedNanos) {
    long left = policy.deadline() == null ? Long.MAX_VALUE : policy.deadline().toNanos() - elapsedNanos;
    long perAttempt = policy.attemptTimeout() == null ? Long.MAX_VALUE : policy.attemptTimeout().toNanos();
    return Math.min(left, perAttempt);
  }
}
