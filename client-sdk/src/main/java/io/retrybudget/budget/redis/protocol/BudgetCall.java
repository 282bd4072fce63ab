package io.retrybudget.budget.redis.protocol;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.internal.TrustArithmetic;
import java.util.Objects;

/**
 * One call of budget.lua: counts to add and permits to ask for.
 *
 * <p>The counts are validated (never negative, {@code want >= need}) and capped as budget.lua caps
 * them ({@link TrustArithmetic#callCap}, for the seed's {@code max_calls_per_second}, or the default
 * when there is no seed): a client never sends a report the script would not believe. Capping
 * undercounts, the safe side: fewer first attempts mean fewer retries. {@code need} is not capped
 * (all-or-none: an ask above the cap is refused by the script).
 *
 * @param name the budget
 * @param requests first attempts counted since the last call
 * @param denied local refusals counted since the last call
 * @param retries retries granted by the client's fallback since the last call (counted, and spent from
 *     the balance: the first attempts in {@code requests} paid for them)
 * @param need permits required (0: only count)
 * @param want permits wanted, {@code >= need} (a lease)
 * @param seed the configuration stored where the budget has none (marked as a seed), or null: then a
 *     budget without configuration is left alone and the reply is {@link BudgetReply#MISSING}
 */
public record BudgetCall(String name, long requests, long denied, long retries, long need, long want, BudgetConfig seed) {
  public BudgetCall {
    Objects.requireNonNull(name, "name");
    if (requests < 0 || denied < 0 || retries < 0 || need < 0 || want < need) {
      throw new IllegalArgumentException("bad budget call: requests=" + requests + ", denied=" + denied
          + ", retries=" + retries + ", need=" + need + ", want=" + want);
    }
    long cap = callCap(seed);
    requests = Math.min(requests, cap);
    denied = Math.min(denied, cap);
    retries = Math.min(retries, cap);
    want = Math.max(need, Math.min(want, cap));
  }

  /**
   * The least any budget believes of one call's report (budget.lua's cap is this or more, by the
   * budget's {@code max_calls_per_second}): an HTTP caller's count up to this is never counted short.
   */
  public static final long MIN_CALL_CAP = TrustArithmetic.MIN_CALL_CAP;

  /** The most one call reports of each count, for a budget seeded with {@code seed} (or none). */
  public static long callCap(BudgetConfig seed) {
    return TrustArithmetic.callCap(seed == null ? BudgetConfig.DEFAULT_MAX_CALLS_PER_SECOND : seed.maxCallsPerSecond());
  }

  /** A call with no fallback retries to report (the coordinator's). */
  public BudgetCall(String name, long requests, long denied, long need, long want, BudgetConfig seed) {
    this(name, requests, denied, 0, need, want, seed);
  }
}
