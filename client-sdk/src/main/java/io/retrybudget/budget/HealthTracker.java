package io.retrybudget.budget;

import io.retrybudget.budget.redis.protocol.BrokenBudgetException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;

/**
 * One budget's {@link RedisHealth} state, moved only by the rule's transitions, one at a time (under
 * this object's lock), with the transition's actions run: the fallback's episode ended under the
 * lock, the rate-limited log after it.
 */
final class HealthTracker {
  private final String budget;
  private final FallbackPolicy policy;
  private final FleetRegistry fleet;
  private final LocalFallback fallback;
  private final LongSupplier clock;
  private final RedisHealth.Rule rule;
  private volatile RedisHealth.State state = RedisHealth.State.HEALTHY;
  private long degradedSince; // under the lock
  private final AtomicInteger timesDegraded = new AtomicInteger();

  HealthTracker(String budget, FallbackPolicy policy, FleetRegistry fleet, LocalFallback fallback, LongSupplier clock,
      RedisHealth.Rule rule) {
    this.budget = budget;
    this.policy = policy;
    this.fleet = fleet;
    this.fallback = fallback;
    this.clock = clock;
    this.rule = rule;
  }

  RedisHealth.State state() {
    return state;
  }

  /** How often the budget went to DEGRADED. */
  int timesDegraded() {
    return timesDegraded.get();
  }

  /**
   * A call failed or timed out: one puts the budget IN_DOUBT, a second in a row (or broken keys)
   * DEGRADED, where decisions stop asking Redis until a flush gets through.
   */
  RedisHealth.State failure(Throwable error) {
    Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
    // a budget whose keys in Redis are broken will not heal by asking again: fall back at once
    boolean broken = cause instanceof BrokenBudgetException;
    return on(broken ? RedisHealth.Event.BROKEN : RedisHealth.Event.FAILURE, cause);
  }

  /** Moves the state by {@code event} and runs the transition's actions; returns the new state. */
  RedisHealth.State on(RedisHealth.Event event, Throwable cause) {
    RedisHealth.Transition t;
    long now = clock.getAsLong();
    long since;
    synchronized (this) {
      t = rule.next(state, event);
      since = degradedSince;
      if (t.actions().contains(RedisHealth.Action.LOG_DEGRADED)) {
        degradedSince = now;
        timesDegraded.incrementAndGet();
      }
      if (t.actions().contains(RedisHealth.Action.END_FALLBACK_EPISODE)) {
        fallback.endEpisode();
      }
      state = t.state();
    }
    if (t.actions().contains(RedisHealth.Action.LOG_DEGRADED)) {
      fleet.logDegraded(() -> "budget " + budget + " degraded: decisions come from the " + policy
          + " fallback until Redis answers again; cause: " + describe(cause));
    }
    if (t.actions().contains(RedisHealth.Action.LOG_RECOVERED)) {
      long took = now - since;
      fleet.logRecovered(() -> "budget " + budget + " recovered after " + took + " ms on the " + policy + " fallback: "
          + (t.state() == RedisHealth.State.HEALTHY ? "decisions come from Redis again"
              : "Redis answers, slower than the call timeout; decisions come from the fallback's paced share"));
    }
    return t.state();
  }

  private static String describe(Throwable cause) {
    if (cause == null) {
      return "unknown";
    }
    if (cause instanceof TimeoutException) {
      return "no answer within the call timeout";
    }
    return cause.getClass().getSimpleName() + (cause.getMessage() == null ? "" : ": " + cause.getMessage());
  }
}
