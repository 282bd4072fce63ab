package io.retrybudget.spring;

import io.micrometer.core.instrument.MeterRegistry;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.micrometer.MicrometerBudgetMetrics;
import io.retrybudget.micrometer.MicrometerRetryMetrics;
import io.retrybudget.retry.RetryListener;

/** The SDK's Micrometer metrics, on the application's registry. */
final class MicrometerRetryBudgetMetrics implements RetryBudgetMetricsSupport {
  private final MeterRegistry registry;

  MicrometerRetryBudgetMetrics(MeterRegistry registry) {
    this.registry = registry;
  }

  @Override
  public RetryListener listener(String client) {
    return new MicrometerRetryMetrics(registry, client);
  }

  @Override
  public void monitor(RetryBudget budget) {
    MicrometerBudgetMetrics.monitor(registry, budget);
  }
}
