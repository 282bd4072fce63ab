package io.retrybudget.okhttp;

import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.retry.RetryBudgetExhaustedException;
import java.io.IOException;
import okhttp3.Response;

/**
 * The fleet's retry budget refused a retry of an OkHttp call, which then ended at once without
 * sleeping. An {@link IOException}, as OkHttp's {@code Call.execute()} and {@code Callback.onFailure}
 * expect; its cause is the {@link RetryBudgetExhaustedException}, whose own cause is the last
 * network failure (if the last attempt failed).
 */
public final class RetryBudgetExhaustedIOException extends IOException {
  private final transient Response lastResponse;
  private final BudgetDecision decision;

  RetryBudgetExhaustedIOException(RetryBudgetExhaustedException refused) {
    super(refused.getMessage(), refused);
    this.lastResponse = refused.lastResult() instanceof Response r ? r : null;
    this.decision = refused.decision();
  }

  /** The last response (a retryable 5xx or 429), its body already closed; null after a failure. */
  public Response lastResponse() {
    return lastResponse;
  }

  public BudgetDecision decision() {
    return decision;
  }
}
