package io.retrybudget.budget.redis.protocol;

/** A change of configuration for configure.lua; a null field keeps the stored value. */
public record ConfigChange(Long ratioPpm, Integer windowSeconds, Integer minRetriesPerSecond, String mode,
    Integer maxCallsPerSecond) {
  /** A change that keeps {@code max_calls_per_s}. */
  public ConfigChange(Long ratioPpm, Integer windowSeconds, Integer minRetriesPerSecond, String mode) {
    this(ratioPpm, windowSeconds, minRetriesPerSecond, mode, null);
  }
}
