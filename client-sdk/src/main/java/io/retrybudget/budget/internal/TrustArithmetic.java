package io.retrybudget.budget.internal;

/**
 * The budget's trust model in Java, the same integers as lua/budget.lua and lua/status.lua
 * ({@code trust_call_cap}, {@code trust_bucket_cap}, {@code trust_add}, {@code trust_slot_ok};
 * parity-tested): what a client reports is believed only up to caps that no honest client reaches,
 * and every sum saturates, so one client's report can neither overflow a budget nor buy the fleet
 * more than the pace rule's largest rate.
 *
 * <ul>
 *   <li>A call's counts (first attempts, local refusals, fallback grants, permits asked for) count up to
 *       {@link #callCap}: the larger of 10^6 and {@code 10^9 / max_calls_per_s}, one second of the
 *       largest rate the pace rule counts ({@link PaceArithmetic#MAX_RATE}) shared by the calls a second
 *       the budget allows.
 *   <li>A bucket holds at most {@link #bucketCap} of each count: what that rate fills it with.
 *   <li>A bucket holding a count out of [0, cap] is broken: it counts as empty and is overwritten when
 *       its bucket comes round, so no reply is ever an error because of it.
 * </ul>
 */
public final class TrustArithmetic {
  /** The smallest {@link #callCap} of any budget: every call's report is believed up to this. */
  public static final long MIN_CALL_CAP = PaceArithmetic.PPM;

  private TrustArithmetic() {}

  /** The most one call's report counts, for a budget whose ceiling is {@code maxCallsPerSecond} (>= 1). */
  public static long callCap(long maxCallsPerSecond) {
    long perCall = (PaceArithmetic.MAX_RATE + maxCallsPerSecond - 1) / maxCallsPerSecond;
    return Math.max(MIN_CALL_CAP, perCall);
  }

  /** The most a bucket of {@code bucketMillis} holds of each count: 10^9 a second's worth. */
  public static long bucketCap(long bucketMillis) {
    return PaceArithmetic.MAX_RATE / 1000 * bucketMillis;
  }

  /** {@code count + add}, at most {@code cap} (both non-negative). */
  public static long add(long count, long add, long cap) {
    return count > cap - add ? cap : count + add;
  }

  /** Whether a bucket's counts can be believed: each in [0, cap], its last grant time not negative. */
  public static boolean slotOk(long requests, long grants, long denied, long clients, long lastGrantMillis, long cap) {
    return requests >= 0 && grants >= 0 && denied >= 0 && clients >= 0 && lastGrantMillis >= 0
        && requests <= cap && grants <= cap && denied <= cap && clients <= cap;
  }
}
