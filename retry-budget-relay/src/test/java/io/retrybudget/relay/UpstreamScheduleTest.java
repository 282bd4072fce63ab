package io.retrybudget.relay;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class UpstreamScheduleTest {
  @Test
  void anEarlyCallTakesThePlaceOfTheOneDue() {
    UpstreamSchedule s = new UpstreamSchedule(100, () -> 0.5);
    s.dueNow(0);
    assertTrue(s.due(0));
    s.sent(0, false);
    s.next(0, 100);
    assertEquals(100, s.nextAt(), "an interval on (0.75-1.25 of it: here 1.0)");
    assertTrue(s.cold(30, 2_000), "no draw yet");
    assertTrue(s.bringForward(30, 2_000));
    assertTrue(s.due(30));
    assertEquals(170, s.horizonMillis(30), "to the call after it: an interval after 100");
    s.sent(30, true);
    s.next(31, 100);
    assertEquals(200, s.nextAt(), "calls at 0, 30, 200: as many as at 0, 100, 200");
    assertEquals(100, s.horizonMillis(200));
    assertFalse(s.cold(2_029, 2_000));
    assertTrue(s.cold(2_030, 2_000), "2 s after the last draw");
    assertFalse(s.bringForward(200, 2_000), "due already");
    assertFalse(s.bringForward(150, 2_000), "one brought forward less than 2 s ago");
    s.sent(200, false);
    s.next(2_000, 100);
    assertTrue(s.bringForward(2_030, 2_000), "2 s on");
  }

  /**
   * However often calls are asked to come forward, the calls made by any time are at most two more than
   * the plain schedule makes by then at its fastest (every 0.75 intervals).
   */
  @Test
  void bringingCallsForwardAddsNoneOverTime() {
    SplittableRandom r = new SplittableRandom(11);
    for (int run = 0; run < 200; run++) {
      long interval = 100 + r.nextInt(401);
      UpstreamSchedule s = new UpstreamSchedule(interval, () -> 0.0); // 0.75 intervals: the plain schedule's fastest
      s.dueNow(0);
      long calls = 0;
      long early = 0;
      long end = 20_000;
      for (long t = 0; t < end; t++) {
        long plainMost = t * 4 / (3 * interval) + 1;
        assertTrue(calls <= plainMost + 2, "interval " + interval + " at " + t + ": " + calls + " calls");
        if (r.nextInt(50) == 0 && s.bringForward(t, 2_000)) {
          early++;
        }
        if (s.due(t)) {
          calls++;
          s.sent(t, true);
          s.next(t + r.nextInt(5), interval); // answered within a few ms
        }
      }
      assertTrue(early >= 5, early + " calls brought forward");
    }
  }
}
