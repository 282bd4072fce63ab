package io.retrybudget.budget;

import java.util.concurrent.CompletionStage;

/**
 * A retry budget: counts first attempts and grants or refuses extra attempts (retries and hedges).
 *
 * <p>{@link #recordFirstAttempt()} is free of I/O and allocation. {@link #tryAcquire()} and
 * {@link #acquire()} never throw because of the budget's store and never wait longer than the
 * budget's call timeout: when the store fails they answer from a fallback.
 */
public interface RetryBudget extends AutoCloseable {

  /** The dependency this budget protects. */
  String name();

  /** Counts one first attempt. */
  void recordFirstAttempt();

  /** Asks for one extra attempt, waiting at most the call timeout. */
  BudgetDecision tryAcquire();

  /** Asks for one extra attempt without blocking the caller's thread. */
  CompletionStage<BudgetDecision> acquire();

  /** True while decisions come from the fallback because the shared store is unreachable. */
  default boolean isDegraded() {
    return false;
  }

  /** Flushes what is counted locally and releases what this budget holds. Idempotent. */
  @Override
  void close();
}
