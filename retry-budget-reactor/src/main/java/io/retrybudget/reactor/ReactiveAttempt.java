package io.retrybudget.reactor;

import java.util.concurrent.TimeUnit;

/**
 * What one attempt of a {@link BudgetRetry#call} knows: its number (1 for the first, counting
 * retries), how long its answer is still waited for (the policy's attempt timeout cut to what the
 * call's deadline leaves: what {@code X-Request-Deadline-Ms} carries) and the call's idempotency
 * key, made on first use and the same on every attempt of the call (as the SDK's
 * {@code AttemptContext}).
 */
public final class ReactiveAttempt {
  private final ReactiveCall call;
  private final int attempt;
  private final long answerByNanos; // on the retry's clock; Long.MAX_VALUE: unbounded

  ReactiveAttempt(ReactiveCall call, int attempt, long answerByNanos) {
    this.call = call;
    this.attempt = attempt;
    this.answerByNanos = answerByNanos;
  }

  /** 1 for the first attempt; what {@code X-Retry-Attempt} carries. */
  public int attempt() {
    return attempt;
  }

  /** The call's idempotency key: the caller's own, else one made now and kept for every later attempt. */
  public String idempotencyKey() {
    return call.idempotencyKey();
  }

  /** Whether the call carries a key, without making one. */
  public boolean hasIdempotencyKey() {
    return call.hasIdempotencyKey();
  }

  /** Whether this attempt's answer is waited for a bounded time (the policy has a deadline or an attempt timeout). */
  public boolean hasDeadline() {
    return answerByNanos != Long.MAX_VALUE;
  }

  /**
   * Whole milliseconds (rounded down, never negative) this attempt's answer is still waited for;
   * {@link Long#MAX_VALUE} when {@link #hasDeadline()} is false.
   */
  public long remainingMillis() {
    if (!hasDeadline()) {
      return Long.MAX_VALUE;
    }
    return TimeUnit.NANOSECONDS.toMillis(Math.max(0, answerByNanos - call.now()));
  }
}
