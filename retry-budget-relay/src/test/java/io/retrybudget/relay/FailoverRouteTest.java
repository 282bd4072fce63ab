package io.retrybudget.relay;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

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
    // after retryAfter the home relay is tried again first
    assertEquals(0, r.pick(1_000));
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
    assertEquals(0, r.pick(600), "home again once its wait is over");
  }

  @Test
  void wrongArgumentsAreRefused() {
    assertThrows(IllegalArgumentException.class, () -> new FailoverRoute(0, 1));
    assertThrows(IllegalArgumentException.class, () -> new FailoverRoute(1, 0));
    FailoverRoute r = new FailoverRoute(1, 1);
    assertThrows(IllegalArgumentException.class, () -> r.failed(1, 0));
    assertThrows(IllegalArgumentException.class, () -> r.answered(-1));
  }
}
