package io.retrybudget.budget.redis.protocol;

import java.util.List;

/**
 * The reply of lua/budget.lua: {@code status, granted, requests, retries, denied, allowance,
 * active_clients, ratio_ppm, window_s, min_rps, mode, available, next_ms, refill_ppm,
 * max_calls_per_s}, and from a relay a sixteenth value, {@code call_ceiling}. Built by
 * {@link BudgetScripts} only.
 *
 * @param allowance the window's total, {@code floor(ratio * requests) + min_rps * window_s} (shown;
 *     the decision is the paced balance's)
 * @param available whole permits the paced balance holds after this call: what could be granted now
 * @param nextGrantMillis ms until the balance holds a whole permit (0: it does; -1: it never refills,
 *     no traffic and no floor)
 * @param refillPpm the balance's refill rate and cap, micro-permits a second
 * @param maxCallsPerSecond the budget's ceiling on script calls a second for the whole fleet (its
 *     configuration, as Redis holds it)
 * @param callCeiling the ceiling this client paces its calls against, in the same terms (its flushes
 *     and asks take {@code activeClients / callCeiling} of a second each): Redis's is
 *     {@code maxCallsPerSecond}; a relay's is what it can take from its own clients, scaled to the fleet
 *     (the relay's sixteenth value; a reply of 15 values gives {@code maxCallsPerSecond})
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
    String mode,
    long available,
    long nextGrantMillis,
    long refillPpm,
    int maxCallsPerSecond,
    int callCeiling) {

  /** Budget.lua's reply (15 values): the call ceiling is the budget's own. */
  public BudgetReply(String status, long granted, long requests, long retries, long denied, long allowance,
      long activeClients, long ratioPpm, int windowSeconds, int minRetriesPerSecond, String mode, long available,
      long nextGrantMillis, long refillPpm, int maxCallsPerSecond) {
    this(status, granted, requests, retries, denied, allowance, activeClients, ratioPpm, windowSeconds,
        minRetriesPerSecond, mode, available, nextGrantMillis, refillPpm, maxCallsPerSecond, maxCallsPerSecond);
  }

  public static final String GRANTED = "granted";
  public static final String DENIED = "denied";
  public static final String SHADOW = "shadow";
  public static final String COUNTED = "counted";
  public static final String STALE = "stale";
  /** The budget has no configuration and the call did not seed one: nothing was written. */
  public static final String MISSING = "missing";

  /** The values of a relay's reply (budget.lua's 15 and the call ceiling); a {@link RelayTag} may follow. */
  static final int RELAY_VALUES = 16;

  static BudgetReply parse(List<Object> reply) {
    if (reply == null || (reply.size() != 15 && reply.size() != 16)) {
      throw new IllegalStateException("unexpected budget.lua reply: " + reply);
    }
    int maxCalls = (int) asLong(reply.get(14));
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
        String.valueOf(reply.get(10)),
        asLong(reply.get(11)),
        asLong(reply.get(12)),
        asLong(reply.get(13)),
        maxCalls,
        reply.size() == 16 ? (int) asLong(reply.get(15)) : maxCalls);
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
    return new BudgetSettings(ratioPpm, windowSeconds, minRetriesPerSecond, mode, maxCallsPerSecond);
  }

  /** True when the call was applied (counted, granted or denied); false for stale and missing. */
  public boolean applied() {
    return !STALE.equals(status) && !MISSING.equals(status);
  }

  /** Permits that could be granted now (the paced balance's whole permits). */
  public long remaining() {
    return available;
  }
}
