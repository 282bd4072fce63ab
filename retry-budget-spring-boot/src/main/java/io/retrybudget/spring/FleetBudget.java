package io.retrybudget.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * The fleet budget that pays for the retries of a Spring Framework 7 {@code @Retryable} method (on
 * the method, or on the class for all its {@code @Retryable} methods; the method's wins). The
 * budget is asked before each retry Spring's policy would make: granted, the retry runs after
 * Spring's own back-off; refused, the call fails at once with
 * {@link io.retrybudget.retry.RetryBudgetExhaustedException} (cause: the last failure). Every call
 * counts one first attempt. A method returning {@code Mono} or {@code Flux} is paid for the same way
 * on Spring's Reactor path: each subscription counts one first attempt, the budget is asked before
 * each resubscription, a refusal fails the subscriber at once.
 *
 * <pre>{@code
 * @Retryable(maxRetries = 2, delay = 100)
 * @FleetBudget("payments-api")
 * public Receipt charge(Order order) { ... }
 * }</pre>
 *
 * <p>Needs {@code @EnableResilientMethods} (whose retry processor the starter replaces with
 * {@link BudgetedRetryAnnotationBeanPostProcessor}). A {@code @Retryable} method without
 * {@code @FleetBudget} is paid for by {@code retrybudget.retryable-budget} when that is set, and
 * otherwise retries as Spring alone says.
 */
@Target({ElementType.TYPE, ElementType.METHOD})
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface FleetBudget {
  /** A budget name under {@code retrybudget.budgets}. */
  String value();
}
