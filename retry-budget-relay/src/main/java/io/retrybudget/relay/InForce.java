package io.retrybudget.relay;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.BudgetMode;
import io.retrybudget.budget.redis.protocol.BudgetReply;

/**
 * A relay's budget as in force ({@link BudgetRelay}): Redis's last applied reply, or until Redis has
 * answered the seed of its first client's call (what that client would create the budget with). Pure,
 * not thread-safe.
 */
final class InForce {
  private BudgetConfig seed;
  private BudgetReply upstream;

  /** Whether a client has called (the relay has a seed, and calls Redis). */
  boolean seeded() {
    return seed != null;
  }

  /** The first client's seed; the later ones' are not kept (Redis holds the budget). */
  void seed(BudgetConfig seed) {
    this.seed = seed;
  }

  BudgetConfig seed() {
    return seed;
  }

  /** Redis applied a call and answered {@code reply}. */
  void upstream(BudgetReply reply) {
    this.upstream = reply;
  }

  /** Redis's last applied reply, null before the first. */
  BudgetReply upstream() {
    return upstream;
  }

  long ratioPpm() {
    return upstream != null ? upstream.ratioPpm() : seed != null ? seed.ratioPpm() : 0;
  }

  int windowSeconds() {
    int w = upstream != null ? upstream.windowSeconds() : seed != null ? seed.windowSeconds() : 10;
    return Math.max(1, Math.min(io.retrybudget.budget.BudgetConfig.MAX_WINDOW_SECONDS, w)); // as budget.lua stores it
  }

  /** The budget's own ceiling, as Redis holds it (the seed's until Redis has answered). */
  int maxCallsPerSecond() {
    return upstream != null ? upstream.maxCallsPerSecond()
        : seed != null ? seed.maxCallsPerSecond() : BudgetConfig.DEFAULT_MAX_CALLS_PER_SECOND;
  }

  int minRetriesPerSecond() {
    return upstream != null ? upstream.minRetriesPerSecond() : seed != null ? seed.minRetriesPerSecond() : 0;
  }

  BudgetMode mode() {
    if (upstream != null) {
      return BudgetMode.SHADOW.wireName().equals(upstream.mode()) ? BudgetMode.SHADOW : BudgetMode.ENFORCE;
    }
    return seed != null ? seed.mode() : BudgetMode.ENFORCE;
  }
}
