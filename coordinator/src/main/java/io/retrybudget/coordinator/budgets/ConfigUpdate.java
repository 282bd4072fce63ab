package io.retrybudget.coordinator.budgets;

/** Fields of a PUT (or a budgets-file entry); null means "keep what is stored". */
public record ConfigUpdate(Long ratioPpm, Integer windowSeconds, Integer minRetriesPerSecond, String mode,
    Integer maxCallsPerSecond) {
  /** An update that keeps {@code max_calls_per_second}. */
  public ConfigUpdate(Long ratioPpm, Integer windowSeconds, Integer minRetriesPerSecond, String mode) {
    this(ratioPpm, windowSeconds, minRetriesPerSecond, mode, null);
  }
}
