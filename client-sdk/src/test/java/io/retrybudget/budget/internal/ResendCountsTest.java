package io.retrybudget.budget.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class ResendCountsTest {
  private static long requests(long[][] rows) {
    long n = 0;
    for (long[] row : rows) {
      n += row[1];
    }
    return n;
  }

  @Test
  void countsOfFailedCallsGoBackToWhenTheyWereFirstTakenAndLeaveAfterAWindow() {
    ResendCounts r = new ResendCounts(10_000); // buckets of 1 s
    long[][] first = r.take(0, 100, 1, 2);
    r.keep(first, 100, 1, 2, true); // the call failed: all of it goes again
    long[][] second = r.take(5_000, 50, 0, 0); // with 50 new ones; this call fails too
    assertEquals(150, requests(second));
    r.keep(second, 150, 1, 2, true);
    long[][] third = r.take(10_500, 0, 0, 0);
    assertEquals(50, requests(third), "the 100 of the first call are a window old; the 50 of the second are not");
    assertEquals(100, r.stale());
    assertEquals(0, third[0][2] + third[0][3], "the first call's refusal and grants left with its first attempts");
    assertFalse(r.any(), "taken: nothing kept");
  }

  @Test
  void aCallCutToWhatOneCallMayReportKeepsItsNewestForTheNext() {
    ResendCounts r = new ResendCounts(10_000);
    r.keep(r.take(0, 30, 0, 0), 30, 0, 0, true);
    long[][] rows = r.take(9_500, 20, 0, 0); // 30 from 0 s, 20 from 9.5 s
    r.keep(rows, 20, 0, 0, false); // the call may carry 30: the newest 20 wait
    long[][] next = r.take(10_200, 0, 0, 0);
    assertEquals(20, requests(next), "the 20 kept are the young ones: none is stale");
    assertEquals(0, r.stale());
  }

  @Test
  void aRandomScheduleOfFailedCallsKeepsEveryCountYoungerThanTheWindowAndDropsOnlyOlderOnes() {
    randomSchedules(false);
  }

  @Test
  void aChangedWindowKeepsEachCountByWhenItCameAndDropsThoseOlderThanTheNewWindow() {
    ResendCounts r = new ResendCounts(60_000); // buckets of 6 s
    for (long t = 0; t < 60_000; t += 1_000) {
      r.add(t, 10, 1, 0); // 10 first attempts a second for a minute
    }
    ResendCounts shorter = r.withWindow(10_000); // buckets of 1 s
    assertEquals(10_000, shorter.windowMillis());
    long[][] rows = shorter.take(60_000, 0, 0, 0);
    // buckets that began within the last 10 s: those of 54 s (60 counts) and 48 s (began 12 s ago: stale)
    assertEquals(60, requests(rows), "only what came within the new window");
    assertEquals(540, shorter.stale(), "the rest dropped as stale");
    ResendCounts longer = new ResendCounts(10_000);
    for (long t = 0; t < 10_000; t += 1_000) {
      longer.add(t, 10, 0, 0);
    }
    ResendCounts wider = longer.withWindow(60_000);
    assertEquals(100, requests(wider.take(10_000, 0, 0, 0)), "a longer window keeps every count");
    assertEquals(0, wider.stale());
  }

  @Test
  void randomWindowChangesNeverSendACountOlderThanTheWindowInForceAndLoseNone() {
    randomSchedules(true);
  }

  /**
   * 200 random schedules of calls taking counts, a third applied and the rest kept to go again (the
   * window changed now and then if {@code changeWindow}): nothing older than the window in force is
   * taken, and every count is sent once or dropped as stale.
   */
  private static void randomSchedules(boolean changeWindow) {
    for (long seed = 0; seed < 200; seed++) {
      SplittableRandom random = new SplittableRandom(seed);
      long window = 1_000L * random.nextInt(1, 20);
      ResendCounts r = new ResendCounts(window);
      long now = 0;
      long sent = 0;
      long total = 0;
      for (int step = 0; step < 300; step++) {
        now += random.nextInt(1, changeWindow ? 3_000 : (int) window / 3);
        if (changeWindow && random.nextInt(10) == 0) {
          window = 1_000L * random.nextInt(1, 20);
          r = r.withWindow(window);
        }
        long n = random.nextInt(0, 20);
        total += n;
        long[][] rows = r.take(now, n, 0, 0);
        for (long[] row : rows) {
          // a row's bucket is one of the window in force's last ten (its counts came within it)
          assertTrue(row[0] > Math.floorDiv(now, window / 10) - 10,
              "seed " + seed + ": a count kept a window (in force) or more went");
        }
        if (random.nextInt(3) == 0) {
          sent += requests(rows); // applied
        } else {
          r.keep(rows, requests(rows), 0, 0, true);
        }
      }
      sent += requests(r.take(now, 0, 0, 0));
      assertEquals(total, sent + r.stale(), "seed " + seed + ": every count sent once or dropped as stale");
    }
  }
}
