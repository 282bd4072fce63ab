package io.retrybudget.budget.redis.protocol;

import io.retrybudget.budget.BudgetConfig;

/** A budget's configuration as the scripts answer it. */
public record BudgetSettings(long ratioPpm, int windowSeconds, int minRetriesPerSecond, String mode, int maxCallsPerSecond) {
  /** With the default {@code max_calls_per_s} (a configuration stored before the field existed). */
  public BudgetSettings(long ratioPpm, int windowSeconds, int minRetriesPerSecond, String mode) {
    this(ratioPpm, windowSeconds, minRetriesPerSecond, mode, BudgetConfig.DEFAULT_MAX_CALLS_PER_SECOND);
  }
}
