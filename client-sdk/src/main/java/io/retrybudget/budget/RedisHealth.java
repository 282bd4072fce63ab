package io.retrybudget.budget;

import java.util.EnumSet;
import java.util.Set;

/**
 * How one budget sees Redis, as a pure transition function: (state, event) → (new state, actions).
 * Nothing here logs, counts or decides: the returned {@link Action}s say what to do, and
 * {@link RedisRetryBudget} runs them after the transition (which it makes under one lock).
 *
 * <p><b>States</b>, and who decides a permit in each:
 * <ul>
 *   <li>{@link State#HEALTHY}: Redis answers in time; permit requests go to Redis.
 *   <li>{@link State#IN_DOUBT}: one call failed or timed out, cause unknown. Permit requests still go to
 *       Redis; one that fails is refused (Redis may have granted it: a local grant on top would spend
 *       the fleet's allowance twice), and a grant that comes late is kept for the next retry.
 *   <li>{@link State#SLOW}: Redis answers, but after the call timeout. Asking it would make every
 *       permit request time out (and be refused), so decisions come from the fallback (the LOCAL
 *       fallback's paced share); its grants are counted in Redis by the next call. Not degraded:
 *       Redis is up and keeps the fleet's counts.
 *   <li>{@link State#DEGRADED}: Redis is taken for down (two failures in a row, or its keys are
 *       broken); decisions come from the fallback and the timer's flushes are probes.
 * </ul>
 *
 * <p><b>Events</b>: {@link Event#REPLY_IN_TIME} an applied reply within the call timeout;
 * {@link Event#REPLY_LATE} an applied reply after it (a permit request's reply after its caller was
 * answered, or a flush's reply between the call timeout and the flush timeout);
 * {@link Event#FAILURE} a call that failed or got no reply within its timeout;
 * {@link Event#BROKEN} a script error naming broken keys.
 *
 * <p><b>Rules</b>: an answer in time makes any state HEALTHY. A late answer is no failure: it moves
 * IN_DOUBT to SLOW (the call that failed was only slow) and DEGRADED to SLOW (Redis is back, slow),
 * and leaves HEALTHY alone (an answer in time since is newer news; a flush's latency is no caller's).
 * A failure moves HEALTHY to IN_DOUBT and anything else to DEGRADED; broken keys degrade at once.
 * So a Redis that keeps answering, however slowly, never degrades a budget, and one that stops
 * answering degrades it after two calls. Every state can reach HEALTHY by one event.
 */
final class RedisHealth {
  enum State {
    HEALTHY, IN_DOUBT, SLOW, DEGRADED;

    /** Whether permit requests go to Redis in this state (else the fallback decides). */
    boolean asksRedis() {
      return this == HEALTHY || this == IN_DOUBT;
    }
  }

  enum Event { REPLY_IN_TIME, REPLY_LATE, FAILURE, BROKEN }

  enum Action {
    /** The fallback stops deciding: when it decides next, it starts from nothing again. */
    END_FALLBACK_EPISODE,
    /** Say (rate-limited) that decisions now come from the fallback because Redis is down. */
    LOG_DEGRADED,
    /** Say that Redis answers again (in time, or slowly). */
    LOG_RECOVERED
  }

  /**
   * The new state and what to do about it: empty when nothing changed, except that an answer in time
   * always ends a fallback episode (a fallback decision made while HEALTHY, as a blocking caller's
   * guard, starts one).
   */
  record Transition(State state, Set<Action> actions) {
    Transition {
      actions = Set.copyOf(actions);
    }

    boolean changed(State from) {
      return state != from;
    }
  }

  /** A transition function: {@link RedisHealth#next}. */
  @FunctionalInterface
  interface Rule {
    Transition next(State state, Event event);
  }

  private RedisHealth() {}

  static Transition next(State state, Event event) {
    return switch (event) {
      case REPLY_IN_TIME -> to(State.HEALTHY, state, event);
      case REPLY_LATE -> to(state == State.HEALTHY ? State.HEALTHY : State.SLOW, state, event);
      case FAILURE -> to(state == State.HEALTHY ? State.IN_DOUBT : State.DEGRADED, state, event);
      case BROKEN -> to(State.DEGRADED, state, event);
    };
  }

  private static Transition to(State target, State from, Event event) {
    EnumSet<Action> actions = EnumSet.noneOf(Action.class);
    if (target == State.HEALTHY && (from != State.HEALTHY || event == Event.REPLY_IN_TIME)) {
      actions.add(Action.END_FALLBACK_EPISODE);
    }
    if (target == from) {
      return new Transition(target, actions);
    }
    if (target == State.DEGRADED) {
      actions.add(Action.LOG_DEGRADED);
    }
    if (from == State.DEGRADED) {
      actions.add(Action.LOG_RECOVERED);
    }
    return new Transition(target, actions);
  }
}
