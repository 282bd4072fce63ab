package io.retrybudget.retry;

import io.retrybudget.budget.BudgetDecision;

/** Hooks for metrics and logs; every method has a no-op default. Called on the executor's threads. */
public interface RetryListener {
  RetryListener NONE = new RetryListener() {};

  /** An attempt starts; {@code attempt} is 1 for the first. */
  default void onAttempt(int attempt) {}

  /** A retry will run after {@code delayNanos}, because of {@code failure} (or a retryable result). */
  default void onRetryScheduled(int nextAttempt, long delayNanos, Throwable failure) {}

  /** The budget refused a retry. */
  default void onBudgetDenied(BudgetDecision decision) {}

  /** The call ended. */
  default void onOutcome(RetryPlanner.Stop why, int attempts) {}
}
