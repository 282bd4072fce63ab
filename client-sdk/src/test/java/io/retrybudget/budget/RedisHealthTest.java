package io.retrybudget.budget;

import static io.retrybudget.budget.RedisHealth.Event.BROKEN;
import static io.retrybudget.budget.RedisHealth.Event.FAILURE;
import static io.retrybudget.budget.RedisHealth.Event.REPLY_IN_TIME;
import static io.retrybudget.budget.RedisHealth.Event.REPLY_LATE;
import static io.retrybudget.budget.RedisHealth.State.DEGRADED;
import static io.retrybudget.budget.RedisHealth.State.HEALTHY;
import static io.retrybudget.budget.RedisHealth.State.IN_DOUBT;
import static io.retrybudget.budget.RedisHealth.State.SLOW;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.RedisHealth.Action;
import io.retrybudget.budget.RedisHealth.Event;
import io.retrybudget.budget.RedisHealth.State;
import java.util.EnumMap;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Every (state, event) pair of {@link RedisHealth}, and the rules its Javadoc promises, on all paths. */
class RedisHealthTest {
  /** The whole table, written out: the rules read off it without running the code. */
  private static final Map<State, Map<Event, State>> TABLE = new EnumMap<>(State.class);

  static {
    row(HEALTHY, HEALTHY, HEALTHY, IN_DOUBT, DEGRADED);
    row(IN_DOUBT, HEALTHY, SLOW, DEGRADED, DEGRADED);
    row(SLOW, HEALTHY, SLOW, DEGRADED, DEGRADED);
    row(DEGRADED, HEALTHY, SLOW, DEGRADED, DEGRADED);
  }

  private static void row(State from, State inTime, State late, State failure, State broken) {
    Map<Event, State> r = new EnumMap<>(Event.class);
    r.put(REPLY_IN_TIME, inTime);
    r.put(REPLY_LATE, late);
    r.put(FAILURE, failure);
    r.put(BROKEN, broken);
    TABLE.put(from, r);
  }

  @Test
  void everyPairMovesAsTheTableSaysWithTheActionsOfItsChange() {
    for (State from : State.values()) {
      for (Event event : Event.values()) {
        RedisHealth.Transition t = RedisHealth.next(from, event);
        State to = TABLE.get(from).get(event);
        String pair = from + " + " + event;
        assertEquals(to, t.state(), pair);
        assertEquals(to == DEGRADED && from != DEGRADED, t.actions().contains(Action.LOG_DEGRADED), pair);
        assertEquals(from == DEGRADED && to != DEGRADED, t.actions().contains(Action.LOG_RECOVERED), pair);
        assertEquals(to == HEALTHY && (from != HEALTHY || event == REPLY_IN_TIME),
            t.actions().contains(Action.END_FALLBACK_EPISODE), pair);
        if (to == from && event != REPLY_IN_TIME) {
          assertEquals(Set.of(), t.actions(), pair + " changes nothing and does nothing");
        }
      }
    }
  }

  @Test
  void whoDecidesInEachState() {
    assertTrue(HEALTHY.asksRedis());
    assertTrue(IN_DOUBT.asksRedis());
    assertFalse(SLOW.asksRedis(), "a slow Redis would time every ask out: the fallback's share decides");
    assertFalse(DEGRADED.asksRedis());
  }

  /**
   * Every path of 8 events from HEALTHY against a model written another way, by what happened since
   * the last answer in time: broken keys or two failures in a row degrade; one failure is doubt,
   * unless Redis had been answering late (then the fallback already decides, and it is down); a late
   * answer after any trouble is SLOW, and ends the failures counted before it.
   */
  @Test
  void everyPathOfEightEventsFollowsTheModel() {
    assertEquals(1 << 16, walk(HEALTHY, new Model(0, false, false), 8));
  }

  private record Model(int failures, boolean broken, boolean slow) {
    Model after(Event e) {
      return switch (e) {
        case REPLY_IN_TIME -> new Model(0, false, false);
        case REPLY_LATE -> failures == 0 && !broken && !slow ? this : new Model(0, false, true);
        case FAILURE -> new Model(failures + 1, broken, slow);
        case BROKEN -> new Model(failures, true, slow);
      };
    }

    State expected() {
      if (broken || failures >= 2 || (failures == 1 && slow)) {
        return DEGRADED;
      }
      if (failures == 1) {
        return IN_DOUBT;
      }
      return slow ? SLOW : HEALTHY;
    }
  }

  private static int walk(State state, Model model, int left) {
    assertEquals(model.expected(), state, model.toString());
    assertEquals(HEALTHY, RedisHealth.next(state, REPLY_IN_TIME).state(), "every state is one answer in time from HEALTHY");
    if (left == 0) {
      return 1;
    }
    int paths = 0;
    for (Event e : Event.values()) {
      paths += walk(RedisHealth.next(state, e).state(), model.after(e), left - 1);
    }
    return paths;
  }
}
