package io.retrybudget.reactor;

import io.retrybudget.retry.RetryPlanner;

/**
 * What an attempt of {@link BudgetRetry#call} hands to the retry besides a plain failure, through
 * Reactor's error channel (the only one {@code retryWhen} listens to): a result the policy retries
 * (with the verdict already reached, so the policy's code runs once per answer), the policy's own
 * code failing, or the call's deadline cutting the attempt. Never reaches the caller: the call
 * turns it back into the result or the failure it carries. No stack trace: it is a message.
 */
final class AttemptSignal extends RuntimeException {
  enum Kind { RESULT, POLICY_ERROR, DEADLINE }

  final Kind kind;
  final transient Object value;
  final transient RetryPlanner.Verdict verdict;

  private AttemptSignal(Kind kind, Object value, RetryPlanner.Verdict verdict, Throwable cause) {
    super(null, cause, false, false);
    this.kind = kind;
    this.value = value;
    this.verdict = verdict;
  }

  static AttemptSignal result(Object value, RetryPlanner.Verdict verdict) {
    return new AttemptSignal(Kind.RESULT, value, verdict, null);
  }

  static AttemptSignal policyError(Throwable error) {
    return new AttemptSignal(Kind.POLICY_ERROR, null, null, error);
  }

  static AttemptSignal deadline(Throwable timeout) {
    return new AttemptSignal(Kind.DEADLINE, null, null, timeout);
  }
}
