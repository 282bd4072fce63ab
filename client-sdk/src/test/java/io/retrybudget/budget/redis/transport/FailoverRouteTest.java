package io.retrybudget.budget.redis.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** The route's policy on fake time: examples, then every sequence of events checked against a model. */
class FailoverRouteTest {
  @Test
  void homeThenTheOtherRelaysThenRedisThenNone() {
    FailoverRoute r = new FailoverRoute(3, 1_000); // home relay, another relay, Redis directly
    assertEquals(0, r.pick(0));
    r.failed(0, 0);
    assertEquals(1, r.pick(1));
    r.failed(1, 1);
    assertEquals(2, r.pick(2));
    r.failed(2, 2);
    assertEquals(FailoverRoute.NONE, r.pick(3), "the client's fallback decides");
    assertEquals(FailoverRoute.NONE, r.current());
    assertEquals(0, r.pick(1_000), "after retryAfter the home relay is tried again first");
    r.answered(0);
    assertEquals(0, r.pick(1_001));
  }

  @Test
  void aWayThatAnswersIsKeptAndAFailedOneWaitsItsTurn() {
    FailoverRoute r = new FailoverRoute(2, 500);
    r.failed(0, 100);
    assertEquals(1, r.pick(200));
    r.answered(1);
    assertEquals(1, r.pick(599));
    assertTrue(r.passedOver(0, 599));
    assertEquals(0, r.pick(600), "home again once its wait is over");
  }

  @Test
  void aWayOfAnotherVersionWaitsTheLongerOfItsWaitAndTheRoutes() {
    FailoverRoute r = new FailoverRoute(2, 500);
    r.refused(0, 100, 60_000);
    assertEquals(1, r.pick(600), "not home again after the route's wait");
    assertTrue(r.passedOver(0, 60_099));
    assertEquals(0, r.pick(60_100), "tried again once the longer wait is over (it may have been upgraded)");
    r.refused(0, 100, 10);
    assertTrue(r.passedOver(0, 599), "never shorter than the route's wait");
    assertEquals(0, r.pick(600));
    r.refused(1, Long.MAX_VALUE - 10, 60_000);
    assertTrue(r.passedOver(1, Long.MAX_VALUE - 1), "saturates, not wrapped to the past");
  }

  @Test
  void timeAtTheEndsOfLongNeitherWrapsNorOpensAWayEarly() {
    FailoverRoute r = new FailoverRoute(1, 600_000);
    r.failed(0, Long.MAX_VALUE - 10);
    assertEquals(FailoverRoute.NONE, r.pick(Long.MAX_VALUE - 1), "passed over, not wrapped to the past");
    r.answered(0);
    assertEquals(0, r.pick(Long.MIN_VALUE), "an answered way is open at any time");
  }

  @Test
  void wrongArgumentsAreRefusedByName() {
    assertEquals("ways must be in [1, 1000], was 0",
        assertThrows(IllegalArgumentException.class, () -> new FailoverRoute(0, 1)).getMessage());
    assertEquals("ways must be in [1, 1000], was 1001",
        assertThrows(IllegalArgumentException.class, () -> new FailoverRoute(1_001, 1)).getMessage());
    assertEquals("retryAfterMillis must be in [1, 600000], was 0",
        assertThrows(IllegalArgumentException.class, () -> new FailoverRoute(1, 0)).getMessage());
    FailoverRoute r = new FailoverRoute(1, 1);
    assertEquals("way must be in [0, 1), was 1", assertThrows(IllegalArgumentException.class, () -> r.failed(1, 0)).getMessage());
    assertThrows(IllegalArgumentException.class, () -> r.answered(-1));
    assertThrows(IllegalArgumentException.class, () -> r.passedOver(1, 0));
  }

  private static final int WAYS = 3;
  private static final long RETRY = 2;
  private static final int STEPS = 6;
  // 10^6 sequences of 6 steps: well under a second
  // events: 0 the clock moves 1 ms; 1..WAYS way (e-1) fails now; WAYS+1..2*WAYS way (e-WAYS-1)
  // answers; 2*WAYS+1..3*WAYS way (e-2*WAYS-1)'s connection goes down or comes up
  private static final int EVENTS = 1 + 3 * WAYS;

  /**
   * Every sequence of {@value #STEPS} events over 3 ways (10^6 of them), the pick checked after each
   * step against a model written apart: the first way that is up and whose last failure is at least
   * {@code RETRY} ms old or was answered since, else NONE.
   */
  @Test
  void everySequenceOfEventsPicksWhatTheModelPicks() {
    int[] seq = new int[STEPS];
    long checked = 0;
    for (long n = 0, total = (long) Math.pow(EVENTS, STEPS); n < total; n++) {
      long rest = n;
      for (int i = 0; i < STEPS; i++) {
        seq[i] = (int) (rest % EVENTS);
        rest /= EVENTS;
      }
      checked += run(seq);
    }
    assertEquals((long) Math.pow(EVENTS, STEPS) * STEPS, checked);
  }

  private static int run(int[] seq) {
    FailoverRoute route = new FailoverRoute(WAYS, RETRY);
    Long[] lastFailure = new Long[WAYS]; // the model: null when never failed or answered since
    boolean[] down = new boolean[WAYS];
    long now = 0;
    int steps = 0;
    for (int e : seq) {
      if (e == 0) {
        now++;
      } else if (e <= WAYS) {
        route.failed(e - 1, now);
        lastFailure[e - 1] = now;
      } else if (e <= 2 * WAYS) {
        route.answered(e - WAYS - 1);
        lastFailure[e - WAYS - 1] = null;
      } else {
        down[e - 2 * WAYS - 1] = !down[e - 2 * WAYS - 1];
      }
      int expected = FailoverRoute.NONE;
      for (int w = WAYS - 1; w >= 0; w--) {
        boolean open = lastFailure[w] == null || now - lastFailure[w] >= RETRY;
        assertEquals(!open, route.passedOver(w, now), () -> "way passed over after " + Arrays.toString(seq));
        if (open && !down[w]) {
          expected = w;
        }
      }
      int picked = route.pick(now, w -> !down[w]);
      if (picked != expected) {
        throw new AssertionError("after " + Arrays.toString(seq) + " picked " + picked + ", the model " + expected);
      }
      assertEquals(picked, route.current());
      steps++;
    }
    return steps;
  }
}
