package io.retrybudget.coordinator;

/** Fields of a PUT (or a budgets-file entry); null means "keep what is stored". */
public record ConfigUpdate(Long ratioPpm, Integer windowSeconds, Integer minRetriesPerSecond, String mode) {

  /** The arguments configure.lua takes: the values, '' for "keep". */
  String[] scriptArgs() {
    return new String[] {
        ratioPpm == null ? "" : Long.toString(ratioPpm),
        windowSeconds == null ? "" : Integer.toString(windowSeconds),
        minRetriesPerSecond == null ? "" : Integer.toString(minRetriesPerSecond),
        mode == null ? "" : mode};
  }
}
