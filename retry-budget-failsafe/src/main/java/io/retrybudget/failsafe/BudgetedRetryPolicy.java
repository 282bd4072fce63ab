package io.retrybudget.failsafe;

import dev.failsafe.RetryPolicy;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.retry.RetryBudgetExhaustedException;
import java.util.Objects;

/**
 * A Failsafe {@link RetryPolicy} whose every retry is paid from a {@link RetryBudget}.
 *
 * <pre>{@code
 * RetryPolicy<String> policy = BudgetedRetryPolicy.of(
 *     RetryPolicy.<String>builder().withMaxRetries(2).withBackoff(Duration.ofMillis(10), Duration.ofSeconds(1)).build(),
 *     budgets.budget(BudgetConfig.builder("payments-api").build()));
 * String answer = Failsafe.with(policy).get(() -> client.call());
 * }</pre>
 *
 * <p>Each execution counts one first attempt. When Failsafe has decided to retry (a failure or
 * result the policy handles, retries and duration left, not aborted), and before it publishes
 * {@code onRetryScheduled} and waits, the budget is asked for a permit: synchronous executions wait
 * for the answer (at most the budget's call timeout), asynchronous ones ({@code getAsync},
 * {@code getStageAsync}, {@code runAsyncExecution} …) do not block any thread. A refusal ends the
 * execution at once, without the wait, with a {@link RetryBudgetExhaustedException} whose cause is
 * the last failure ({@code lastResult()} the last result); the policy's {@code onFailure} listener
 * sees it, its {@code onAbort} and {@code onRetriesExceeded} do not fire. Failsafe's own settings
 * (handled failures and results, {@code abortOn}, delays and jitter, {@code maxRetries},
 * {@code maxDuration}, listeners) are kept exactly as configured.
 *
 * <p>Compose it as you would the original policy; inner policies (a {@code Timeout}, a
 * {@code CircuitBreaker}) run on every attempt, outer ones (a {@code Fallback}) see the refusal.
 * An outer policy that runs the whole retry policy again (a second retry policy around this one)
 * makes each of its runs a new execution with its own first attempt.
 *
 * <p>Failsafe 3.3 offers no public hook between "decided to retry" and "waits": the policy extends
 * Failsafe's own retry policy through its {@code dev.failsafe.internal} classes, all in one class
 * that checks, when first used, that the Failsafe on the class path has the methods it relies on,
 * and fails with the version it was built for otherwise.
 */
public final class BudgetedRetryPolicy {
  private BudgetedRetryPolicy() {}

  /**
   * {@code policy} paid from {@code budget}. The result is a {@code RetryPolicy} with the same
   * configuration ({@link RetryPolicy#getConfig()}), so it composes and can be copied with
   * {@link RetryPolicy#builder(dev.failsafe.RetryPolicyConfig)} (the copy is not budgeted).
   *
   * @throws IllegalArgumentException when {@code policy} is already budgeted (one budget per policy)
   * @throws IllegalStateException when the Failsafe on the class path is not one this was built for
   */
  public static <R> RetryPolicy<R> of(RetryPolicy<R> policy, RetryBudget budget) {
    Objects.requireNonNull(policy, "policy");
    Objects.requireNonNull(budget, "budget");
    if (FailsafeInternals.isBudgeted(policy)) {
      throw new IllegalArgumentException("policy is already paid from a retry budget: pass the original policy");
    }
    return FailsafeInternals.budgeted(policy, budget);
  }

  /** The budget {@code policy} pays from, or {@code null} when it is not a budgeted policy. */
  public static RetryBudget budgetOf(RetryPolicy<?> policy) {
    return FailsafeInternals.budgetOf(policy);
  }
}
