package io.retrybudget.retry;

import io.retrybudget.budget.BudgetDecision;

/**
 * A retry was refused by the retry budget: the call ends at once, without sleeping. The cause is
 * the last underlying failure (null when the last attempt returned a result that was retryable,
 * which {@link #lastResult()} holds).
 */
public final class RetryBudgetExhaustedException extends RuntimeException {
  private final transient Object lastResult;
  private final BudgetDecision decision;

  public RetryBudgetExhaustedException(String budget, BudgetDecision decision, Throwable lastFailure, Object lastResult) {
    super(message(budget, decision), lastFailure);
    this.lastResult = lastResult;
    this.decision = decision;
  }

  private static String message(String budget, BudgetDecision decision) {
    String why = decision.reason() == BudgetDecision.Reason.DENIED_THROTTLED
        ? "throttled: most of this client's recent retries failed" : decision.reason().tag();
    return "retry budget '" + budget + "' refused a retry (" + why + ")";
  }

  public Object lastResult() {
    return lastResult;
  }

  /** Why the retry was refused: its {@code reason()} (exhausted, exhausted_cached, fallback, throttled). */
  public BudgetDecision decision() {
    return decision;
  }
}
