package io.retrybudget.observation;

import io.retrybudget.retry.RetryOutcome;

/**
 * Why a call made no further attempt after a failed one: the value of
 * {@value ObservationRetryListener#SUPPRESSED_REASON} that comes with the
 * {@value ObservationRetryListener#SUPPRESSED_EVENT} event.
 */
public enum SuppressedReason {
  /** The retry budget refused the retry ({@link RetryOutcome#BUDGET_EXHAUSTED}). */
  BUDGET("budget"),
  /**
   * The server pushed back: it said not to retry (a negative {@code X-Retry-Pushback-Ms}), or asked
   * for a wait (Retry-After) beyond the backoff cap or the time left ({@link RetryOutcome#SERVER_SAYS_NO},
   * {@link RetryOutcome#SERVER_DELAY_TOO_LONG}).
   */
  PUSHBACK("pushback"),
  /** The deadline left no time for another attempt, or cut the one running ({@link RetryOutcome#DEADLINE}). */
  DEADLINE("deadline"),
  /** Every attempt the policy allows was made ({@link RetryOutcome#MAX_ATTEMPTS}). */
  ATTEMPTS("attempts"),
  /** The answer is one the policy never retries ({@link RetryOutcome#NOT_RETRYABLE}). */
  NOT_RETRYABLE("not_retryable"),
  /** A non-idempotent call without an idempotency key ({@link RetryOutcome#NOT_IDEMPOTENT}). */
  NOT_IDEMPOTENT("not_idempotent");

  /** The value of {@value ObservationRetryListener#SUPPRESSED_REASON} on a call that suppressed no retry. */
  public static final String NONE = "none";

  private final String tag;

  SuppressedReason(String tag) {
    this.tag = tag;
  }

  /** The tag value. */
  public String tag() {
    return tag;
  }

  /** The reason a call that ended this way suppressed its next attempt; null for an outcome that suppressed none. */
  public static SuppressedReason of(RetryOutcome outcome) {
    return switch (outcome) {
      case BUDGET_EXHAUSTED -> BUDGET;
      case SERVER_SAYS_NO, SERVER_DELAY_TOO_LONG -> PUSHBACK;
      case DEADLINE -> DEADLINE;
      case MAX_ATTEMPTS -> ATTEMPTS;
      case NOT_RETRYABLE -> NOT_RETRYABLE;
      case NOT_IDEMPOTENT -> NOT_IDEMPOTENT;
      case SUCCESS, CANCELLED, CLOSED, ERROR -> null;
    };
  }
}
