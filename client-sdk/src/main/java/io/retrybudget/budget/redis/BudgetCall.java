package io.retrybudget.budget.redis;

import io.retrybudget.budget.BudgetConfig;
import java.util.Objects;

/**
 * One call of budget.lua: counts to add and permits to ask for.
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
  }

  /** A call with no fallback retries to report (the coordinator's). */
  public BudgetCall(String name, long requests, long denied, long need, long want, BudgetConfig seed) {
    this(name, requests, denied, 0, need, want, seed);
  }
}
