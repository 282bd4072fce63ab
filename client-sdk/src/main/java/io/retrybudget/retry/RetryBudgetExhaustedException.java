package io.retrybudget.retry;

import io.retrybudget.budget.BudgetDecision;

/**
 * A retry was refused by the retry budget: the call ends at once, without sleeping. The cause is
 * the last underlying failure (null when the last attempt returned a result that was retryable,
 * which {@link #lastResult()} holds). When the budget could tell, {@link #nextPermitIn()} says when
 * it expects its next permit, and the message says so too ("...; next permit expected in 250 ms").
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
    return "retry budget '" + budget + "' refused a retry (" + why + ")"
        + decision.nextPermitIn().map(d -> "; next permit expected in " + d.toMillis() + " ms").orElse("");
  }

  /**
   * How long after the refusal the budget expected to grant a permit again, at its refill rate then
   * (an estimate for the fleet: other clients may take that permit first); empty when it could not
   * tell. See {@link BudgetDecision#nextPermitIn()}.
   */
  public java.util.Optional<java.time.Duration> nextPermitIn() {
    return decision.nextPermitIn();
  }

  public Object lastResult() {
    return lastResult;
  }

  /** Why the retry was refused: its {@code reason()} (exhausted, exhausted_cached, fallback, throttled). */
  public BudgetDecision decision() {
    return decision;
  }
}
