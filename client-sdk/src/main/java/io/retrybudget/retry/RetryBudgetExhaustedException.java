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
    super("retry budget '" + budget + "' refused a retry (" + decision.reason().tag() + ")", lastFailure);
    this.lastResult = lastResult;
    this.decision = decision;
  }

  public Object lastResult() {
    return lastResult;
  }

  public BudgetDecision decision() {
    return decision;
  }
}
