package io.retrybudget.budget.redis;

import io.retrybudget.budget.BudgetConfig;
import java.util.Objects;

/**
 * One call of budget.lua: counts to add and permits to ask for.
 *
 * @param name the budget
 * @param requests first attempts counted since the last call
 * @param denied local refusals counted since the last call
 * @param need permits required (0: only count)
 * @param want permits wanted, {@code >= need} (a lease)
 * @param seed the configuration stored where the budget has none (marked as a seed), or null: then a
 *     budget without configuration is left alone and the reply is {@link BudgetReply#MISSING}
 */
public record BudgetCall(String name, long requests, long denied, long need, long want, BudgetConfig seed) {
  public BudgetCall {
    Objects.requireNonNull(name, "name");
    if (requests < 0 || denied < 0 || need < 0 || want < need) {
      throw new IllegalArgumentException("bad budget call: requests=" + requests + ", denied=" + denied
          + ", need=" + need + ", want=" + want);
    }
  }
}
