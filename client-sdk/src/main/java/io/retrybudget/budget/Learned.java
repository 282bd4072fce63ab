package io.retrybudget.budget;

import io.retrybudget.budget.redis.protocol.BudgetReply;

/**
 * What Redis last said about a budget, one immutable snapshot: its configuration, the fleet's size,
 * the call ceiling this client paces against ({@code callCeiling}: the configuration's
 * {@code maxCallsPerSecond} from Redis, a relay's own from a relay) and the refill rate.
 * {@code activeClients} is 0 until Redis has said how many clients share the budget: no floor share
 * before that.
 */
record Learned(long ratioPpm, int windowSeconds, int minRetriesPerSecond, BudgetMode mode, long activeClients,
    int maxCallsPerSecond, int callCeiling, long refillPpm) {

  /** What a client knows before Redis has answered: the configuration it was built with, no fleet yet. */
  static Learned seed(BudgetConfig seed) {
    return new Learned(seed.ratioPpm(), seed.windowSeconds(), seed.minRetriesPerSecond(), seed.mode(), 0,
        seed.maxCallsPerSecond(), seed.maxCallsPerSecond(), 0);
  }

  /**
   * What an applied reply says (at least one client and one call a second, never a negative refill, a
   * window within {@link BudgetConfig#MAX_WINDOW_SECONDS}: a reply is input like any other, and a relay's
   * window of 0 made every call throw where the window divides it into buckets).
   */
  static Learned of(BudgetReply reply) {
    int window = Math.max(1, Math.min(BudgetConfig.MAX_WINDOW_SECONDS, reply.windowSeconds()));
    return new Learned(reply.ratioPpm(), window, reply.minRetriesPerSecond(),
        BudgetMode.SHADOW.wireName().equals(reply.mode()) ? BudgetMode.SHADOW : BudgetMode.ENFORCE,
        Math.max(1, reply.activeClients()), Math.max(1, reply.maxCallsPerSecond()), Math.max(1, reply.callCeiling()),
        Math.max(0, reply.refillPpm()));
  }

  /** Whether {@code c} is this configuration (ratio, window, floor, mode and call ceiling). */
  boolean sameConfig(BudgetConfig c) {
    return c != null && c.ratioPpm() == ratioPpm && c.windowSeconds() == windowSeconds
        && c.minRetriesPerSecond() == minRetriesPerSecond && c.mode() == mode
        && c.maxCallsPerSecond() == maxCallsPerSecond;
  }
}
