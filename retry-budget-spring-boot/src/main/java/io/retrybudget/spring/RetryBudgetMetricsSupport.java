package io.retrybudget.spring;

import io.retrybudget.budget.RetryBudget;
import io.retrybudget.retry.RetryListener;

/** Metrics of budgets and clients, to the application's MeterRegistry when it has one. */
interface RetryBudgetMetricsSupport {
  RetryBudgetMetricsSupport NONE = new RetryBudgetMetricsSupport() {};

  /** The listener of a client's retries ({@code retry.calls}, {@code retry.attempts}, ...). */
  default RetryListener listener(String client) {
    return new RetryListener() {};
  }

  /** Exports a budget's {@code retry.budget.degraded} and {@code retry.budget.slow} gauges. */
  default void monitor(RetryBudget budget) {}
}
