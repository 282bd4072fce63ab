package io.retrybudget.spring;

import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.retry.RetryBudgetExhaustedException;
import java.time.Duration;
import java.util.Objects;
import org.springframework.core.retry.RetryException;
import org.springframework.core.retry.RetryPolicy;
import org.springframework.core.retry.RetryTemplate;
import org.springframework.core.retry.Retryable;
import org.springframework.util.backoff.BackOff;
import org.springframework.util.backoff.BackOffExecution;

/**
 * Spring Framework 7's {@link RetryTemplate} with a fleet budget: every {@code execute} counts one
 * first attempt, and the budget is asked each time the policy's back-off has granted one more
 * retry (after {@code shouldRetry} and the back-off's own limit, before the sleep). Refused: the
 * call ends at once with {@link RetryBudgetExhaustedException} (cause: the last failure), without
 * sleeping. The template's policy, back-off, timeout and listener work as configured.
 *
 * <pre>{@code
 * RetryTemplate template = new BudgetedRetryTemplate(
 *     RetryPolicy.builder().maxRetries(2).delay(Duration.ofMillis(100)).build(), retryBudgets.budget("payments-api"));
 * String body = template.execute(() -> client.fetch());
 * }</pre>
 *
 * <p>{@code @Retryable} methods: {@link FleetBudget} and {@link BudgetedRetryAnnotationBeanPostProcessor},
 * which run them in this template.
 */
public class BudgetedRetryTemplate extends RetryTemplate {
  private final RetryBudget budget;

  public BudgetedRetryTemplate(RetryPolicy policy, RetryBudget budget) {
    this.budget = Objects.requireNonNull(budget, "budget must not be null");
    setRetryPolicy(policy);
  }

  /** The budget that pays for this template's retries. */
  public RetryBudget budget() {
    return budget;
  }

  @Override
  public void setRetryPolicy(RetryPolicy policy) {
    Objects.requireNonNull(policy, "policy must not be null");
    super.setRetryPolicy(policy instanceof Gated ? policy : new Gated(policy, budget));
  }

  @Override
  public <R> R execute(Retryable<R> retryable) throws RetryException {
    budget.recordFirstAttempt();
    return super.execute(retryable);
  }

  /** The policy, with the budget behind its back-off; remembers the failure it was asked about. */
  private static final class Gated implements RetryPolicy {
    private final RetryPolicy policy;
    private final RetryBudget budget;
    // shouldRetry(failure) and nextBackOff() run one after the other on the calling thread
    private final ThreadLocal<Throwable> lastFailure = new ThreadLocal<>();

    Gated(RetryPolicy policy, RetryBudget budget) {
      this.policy = policy;
      this.budget = budget;
    }

    @Override
    public boolean shouldRetry(Throwable failure) {
      if (failure instanceof RetryBudgetExhaustedException || !policy.shouldRetry(failure)) {
        lastFailure.remove();
        return false;
      }
      lastFailure.set(failure);
      return true;
    }

    @Override
    public Duration getTimeout() {
      return policy.getTimeout();
    }

    @Override
    public BackOff getBackOff() {
      BackOff backOff = policy.getBackOff();
      return () -> {
        BackOffExecution execution = backOff.start();
        return () -> {
          long wait = execution.nextBackOff();
          Throwable failure = lastFailure.get();
          lastFailure.remove();
          if (wait == BackOffExecution.STOP) {
            return wait;
          }
          BudgetDecision decision = decideBlocking(budget);
          if (decision.granted()) {
            return wait;
          }
          throw new RetryBudgetExhaustedException(budget.name(), decision, failure, null);
        };
      };
    }
  }

  /** The one place a blocking decision is asked for. */
  private static BudgetDecision decideBlocking(RetryBudget budget) {
    return budget.acquireBlocking();
  }
}
