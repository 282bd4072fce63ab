package io.retrybudget.budget;

import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CompletionStage;

/**
 * A retry budget: counts first attempts and grants or refuses extra attempts (retries and hedges).
 *
 * <p>{@link #recordFirstAttempt()} is free of I/O and allocation. {@link #acquireBlocking()} and
 * {@link #acquire()} never throw because of the budget's store and never wait longer than the
 * budget's call timeout: when the store fails they answer from a fallback.
 *
 * <p>A {@code RetryExecutor} (and a {@code RetryingHttpClient}) with this budget attached counts
 * first attempts and asks for permits itself: call these methods only for calls you retry by hand.
 */
public interface RetryBudget extends AutoCloseable {

  /** The dependency this budget protects. */
  String name();

  /** Counts one first attempt (not for calls run through a {@code RetryExecutor}: it counts them). */
  void recordFirstAttempt();

  /** Asks for one extra attempt, blocking this thread for at most the call timeout. */
  BudgetDecision acquireBlocking();

  /**
   * The old name of {@link #acquireBlocking()}: it blocks, unlike the JDK's {@code tryAcquire}.
   *
   * @deprecated use {@link #acquireBlocking()}; removed in the next release
   */
  @Deprecated(forRemoval = true)
  default BudgetDecision tryAcquire() {
    return acquireBlocking();
  }

  /** Asks for one extra attempt without blocking the caller's thread. */
  CompletionStage<BudgetDecision> acquire();

  /**
   * The configuration this budget's decisions follow. For a budget in Redis it is the one Redis
   * holds, empty until Redis has first answered: the first registration of a budget wins, so it can
   * differ from the {@link BudgetConfig} this client was built with (that difference is logged once,
   * at INFO, with both values; change a budget with the coordinator's {@code PUT /v1/budgets/{name}}).
   * A local budget answers with its own configuration.
   */
  default Optional<BudgetConfig> configInForce() {
    return Optional.empty();
  }

  /**
   * The remaining budget: extra attempts the budget could grant now (its paced balance's whole
   * permits), as this client last learned it. For a budget in Redis, what Redis's last applied reply
   * to this client said (a flush or a permit request: at most a flush interval old while the client
   * is busy; the fleet's balance, not a share of it); for a local budget, its own balance now. Empty
   * until known (a Redis budget that has not heard from Redis yet, or a budget that cannot tell).
   * For gauges and diagnostics: a decision is {@link #acquire()}'s, never this.
   */
  default OptionalLong remainingPermits() {
    return OptionalLong.empty();
  }

  /** True while decisions come from the fallback because the shared store is unreachable. */
  default boolean isDegraded() {
    return false;
  }

  /**
   * True while the shared store answers, but slower than the call timeout: decisions come from the
   * fallback's paced share and the store still counts them (its next answer in time ends this).
   * Never true together with {@link #isDegraded()}.
   */
  default boolean isSlow() {
    return false;
  }

  /** Flushes what is counted locally and releases what this budget holds. Idempotent. */
  @Override
  void close();
}
