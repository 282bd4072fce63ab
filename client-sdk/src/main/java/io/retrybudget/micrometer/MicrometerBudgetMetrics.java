package io.retrybudget.micrometer;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.retrybudget.budget.RetryBudget;

/**
 * Exports a budget client's health: {@code retry.budget.degraded} {budget} is 1 while the client
 * decides from its fallback because Redis is unreachable [retry_budget_degraded];
 * {@code retry.budget.slow} {budget} is 1 while it decides from its fallback's paced share because
 * Redis answers, but slower than the call timeout [retry_budget_slow] (Redis still counts; never 1
 * together with the degraded gauge); {@code retry.budget.available} {budget} is the remaining
 * budget, the extra attempts the budget could grant now as this client last learned it
 * ({@link RetryBudget#remainingPermits()}; NaN until known) [retry_budget_available]. The
 * coordinator's {@code retry.budget.remaining} is another quantity: the window's allowance left.
 */
public final class MicrometerBudgetMetrics {
  private MicrometerBudgetMetrics() {}

  public static void monitor(MeterRegistry registry, RetryBudget budget) {
    Gauge.builder("retry.budget.degraded", budget, b -> b.isDegraded() ? 1 : 0)
        .description("1 while this client's retry budget uses its local fallback (Redis unreachable)")
        .tag(MicrometerRetryMetrics.BUDGET_TAG, budget.name())
        .strongReference(false)
        .register(registry);
    Gauge.builder("retry.budget.slow", budget, b -> b.isSlow() ? 1 : 0)
        .description("1 while this client's retry budget uses its fallback's paced share (Redis answers after the call timeout)")
        .tag(MicrometerRetryMetrics.BUDGET_TAG, budget.name())
        .strongReference(false)
        .register(registry);
    Gauge.builder("retry.budget.available", budget, b -> {
          java.util.OptionalLong r = b.remainingPermits();
          return r.isPresent() ? r.getAsLong() : Double.NaN;
        })
        .description("Extra attempts the retry budget could grant now, as this client last learned it from Redis")
        .tag(MicrometerRetryMetrics.BUDGET_TAG, budget.name())
        .strongReference(false)
        .register(registry);
  }
}
