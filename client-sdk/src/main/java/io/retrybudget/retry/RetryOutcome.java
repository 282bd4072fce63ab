package io.retrybudget.retry;

/**
 * How a call ended, as {@link RetryListener#onOutcome} reports it: exactly once per call, on the
 * synchronous and the asynchronous path alike.
 */
public enum RetryOutcome {
  /** An attempt succeeded (or returned a result the policy does not retry). */
  SUCCESS,
  /** An attempt failed with what the policy does not retry. */
  NOT_RETRYABLE,
  /** A retryable failure of a non-idempotent call that carries no idempotency key. */
  NOT_IDEMPOTENT,
  /** Every attempt the policy allows was made. */
  MAX_ATTEMPTS,
  /** The deadline left no time for another attempt (or cut the one running). */
  DEADLINE,
  /** The server asked for a delay beyond the backoff cap or the time left. */
  SERVER_DELAY_TOO_LONG,
  /** The server said not to retry (a negative pushback). */
  SERVER_SAYS_NO,
  /** The retry budget refused a retry: the call failed with {@link RetryBudgetExhaustedException}. */
  BUDGET_EXHAUSTED,
  /** The caller ended the call: cancelled or completed its future, or interrupted a synchronous call. */
  CANCELLED,
  /** The executor was closed while the call ran. */
  CLOSED,
  /** User code of the policy (a predicate, the server-delay extractor) or the scheduler failed. */
  ERROR
}
