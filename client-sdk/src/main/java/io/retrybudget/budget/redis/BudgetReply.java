package io.retrybudget.budget.redis;

import java.util.List;

/**
 * The reply of lua/budget.lua: {@code status, granted, requests, retries, denied, allowance,
 * active_clients, ratio_ppm, window_s, min_rps, mode}. Built by {@link BudgetScripts} only.
 */
public record BudgetReply(
    String status,
    long granted,
    long requests,
    long retries,
    long denied,
    long allowance,
    long activeClients,
    long ratioPpm,
    int windowSeconds,
    int minRetriesPerSecond,
    String mode) {

  public static final String GRANTED = "granted";
  public static final String DENIED = "denied";
  public static final String SHADOW = "shadow";
  public static final String COUNTED = "counted";
  public static final String STALE = "stale";
  /** The budget has no configuration and the call did not seed one: nothing was written. */
  public static final String MISSING = "missing";

  static BudgetReply parse(List<Object> reply) {
    if (reply == null || reply.size() != 11) {
      throw new IllegalStateException("unexpected budget.lua reply: " + reply);
    }
    return new BudgetReply(
        String.valueOf(reply.get(0)),
        asLong(reply.get(1)),
        asLong(reply.get(2)),
        asLong(reply.get(3)),
        asLong(reply.get(4)),
        asLong(reply.get(5)),
        asLong(reply.get(6)),
        asLong(reply.get(7)),
        (int) asLong(reply.get(8)),
        (int) asLong(reply.get(9)),
        String.valueOf(reply.get(10)));
  }

  /** A script reply element as a long: Redis integers arrive as Long, strings are parsed. */
  public static long asLong(Object value) {
    if (value instanceof Number n) {
      return n.longValue();
    }
    return Long.parseLong(String.valueOf(value));
  }

  /** The configuration this reply was computed with. */
  public BudgetSettings settings() {
    return new BudgetSettings(ratioPpm, windowSeconds, minRetriesPerSecond, mode);
  }

  /** True when the call was applied (counted, granted or denied); false for stale and missing. */
  public boolean applied() {
    return !STALE.equals(status) && !MISSING.equals(status);
  }

  public long remaining() {
    return Math.max(0, allowance - retries);
  }
}
