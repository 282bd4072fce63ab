package io.retrybudget.retry;

import io.retrybudget.budget.BudgetDecision;

/**
 * Hooks for metrics and logs; every method has a no-op default. Called on the executor's threads
 * (and the caller's, for a synchronous call). Attach several with repeated
 * {@link RetryExecutor.Builder#listener} calls: each is isolated, so what one throws is logged once
 * ({@link System.Logger}, logger {@code io.retrybudget.retry}) and never reaches the call or the others.
 */
public interface RetryListener {
  RetryListener NONE = new RetryListener() {};

  /** An attempt starts; {@code attempt} is 1 for the first. */
  default void onAttempt(int attempt) {}

  /** A retry will run after {@code delayNanos}, because of {@code failure} (or a retryable result). */
  default void onRetryScheduled(int nextAttempt, long delayNanos, Throwable failure) {}

  /** The budget refused a retry (the call then ends with {@link RetryOutcome#BUDGET_EXHAUSTED}). */
  default void onBudgetDenied(BudgetDecision decision) {}

  /** A hedge is sent: attempt {@code attempt} runs beside earlier ones of the same call. */
  default void onHedge(int attempt) {}

  /** A hedge's answer won the call. */
  default void onHedgeWon(int attempt) {}

  /** The budget refused a hedge; the attempts already running go on. */
  default void onHedgeDenied(BudgetDecision decision) {}

  /**
   * The call ended, once per call.
   *
   * @param attempts the attempts the call started, first, retries and hedges included (the same
   *     meaning for {@code call} and {@code callAsync})
   */
  default void onOutcome(RetryOutcome outcome, int attempts) {}
}
