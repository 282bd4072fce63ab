package io.retrybudget.retry;

import java.time.Duration;

/**
 * The pure decision after an attempt: stop (and why) or retry after how long. No clock, no random
 * source, no I/O: the runner passes the time spent and a random number in.
 */
public final class RetryPlanner {
  /** Why a call stops retrying. */
  public enum Stop {
    SUCCESS, NOT_RETRYABLE, NOT_IDEMPOTENT, MAX_ATTEMPTS, DEADLINE, SERVER_DELAY_TOO_LONG, SERVER_SAYS_NO
  }

  /** {@code stop == null} means retry after {@code delayNanos}. */
  public record Plan(Stop stop, long delayNanos) {
    static Plan retryAfter(long nanos) {
      return new Plan(null, nanos);
    }

    static Plan stop(Stop why) {
      return new Plan(why, -1);
    }

    public boolean retry() {
      return stop == null;
    }
  }

  private static final Plan SUCCESS = Plan.stop(Stop.SUCCESS);
  private final RetryPolicy policy;

  public RetryPlanner(RetryPolicy policy) {
    this.policy = policy;
  }

  /**
   * @param attemptsMade attempts started so far (1 after the first)
   * @param previousDelayNanos the delay before the last retry (0 before the first retry)
   * @param elapsedNanos time since the call started
   * @param result the attempt's result (when it did not fail)
   * @param failure the attempt's failure, or null
   * @param keyed whether the call carries an idempotency key
   * @param random uniform in [0, 1)
   */
  public Plan next(int attemptsMade, long previousDelayNanos, long elapsedNanos, Object result, Throwable failure,
      boolean keyed, double random) {
    boolean retryable = failure != null ? policy.shouldRetry(failure) : policy.shouldRetryResult(result);
    if (!retryable) {
      return failure == null ? SUCCESS : Plan.stop(Stop.NOT_RETRYABLE);
    }
    if (!policy.idempotent() && !keyed) {
      return Plan.stop(Stop.NOT_IDEMPOTENT);
    }
    Duration asked = policy.serverDelay(result, failure);
    if (asked != null && asked.isNegative()) {
      return Plan.stop(Stop.SERVER_SAYS_NO);
    }
    if (attemptsMade >= policy.maxAttempts()) {
      return Plan.stop(Stop.MAX_ATTEMPTS);
    }
    long delay = policy.backoff().delayNanos(attemptsMade - 1, previousDelayNanos, random);
    long left = policy.deadline() == null ? Long.MAX_VALUE : policy.deadline().toNanos() - elapsedNanos;
    if (asked != null) {
      // wait at least what the server asked; if that is beyond the cap or the time left, stop now
      // (compared as Durations first: a server may ask for more than a long of nanoseconds holds)
      if (asked.compareTo(policy.backoff().cap()) > 0 || asked.toNanos() >= left) {
        return Plan.stop(Stop.SERVER_DELAY_TOO_LONG);
      }
      long askedNanos = asked.toNanos();
      delay = Math.max(delay, askedNanos);
    }
    if (delay >= left) {
      return Plan.stop(Stop.DEADLINE); // never sleep past the deadline, nor start an attempt with no time
    }
    return Plan.retryAfter(delay);
  }

  /** Whether a retry planned now still fits the deadline after {@code delayNanos} (rechecked after the budget call). */
  public boolean fitsDeadline(long elapsedNanos, long delayNanos) {
    return policy.deadline() == null || delayNanos < policy.deadline().toNanos() - elapsedNanos;
  }

  /** Time the next attempt may take: the attempt timeout, cut to what the deadline leaves. */
  public long attemptBudgetNanos(long elapsedNanos) {
    long left = policy.deadline() == null ? Long.MAX_VALUE : policy.deadline().toNanos() - elapsedNanos;
    long perAttempt = policy.attemptTimeout() == null ? Long.MAX_VALUE : policy.attemptTimeout().toNanos();
    return Math.min(left, perAttempt);
  }
}
