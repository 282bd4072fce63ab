package io.retrybudget.testing;

/** Reads {@code INFO commandstats}: {@code cmdstat_evalsha:calls=12,usec=...}. */
public final class CommandStats {
  private CommandStats() {}

  public static long calls(String info, String command) {
    String marker = "cmdstat_" + command.toLowerCase() + ":calls=";
    int at = info.indexOf(marker);
    if (at < 0) {
      return 0;
    }
    int from = at + marker.length();
    int to = from;
    while (to < info.length() && Character.isDigit(info.charAt(to))) {
      to++;
    }
    return Long.parseLong(info.substring(from, to));
  }

  /** Total calls of every command. */
  public static long totalCalls(String info) {
    long total = 0;
    int at = 0;
    while ((at = info.indexOf(":calls=", at)) >= 0) {
      int from = at + ":calls=".length();
      int to = from;
      while (to < info.length() && Character.isDigit(info.charAt(to))) {
        to++;
      }
      total += Long.parseLong(info.substring(from, to));
      at = to;
    }
    return total;
  }
}
