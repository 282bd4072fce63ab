package io.retrybudget.budget.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

class SlidingWindowCountsTest {

  @Test
  void countsWithinTheWindowAndForgetsOlderBuckets() {
    SlidingWindowCounts w = new SlidingWindowCounts(10_000); // buckets of 1 s
    w.add(0, 5, 1, 0);
    w.add(999, 5, 0, 2);
    w.add(1_000, 7, 0, 0);
    assertEquals(17, w.requests(1_500));
    assertEquals(1, w.retries(1_500));
    assertEquals(2, w.denied(1_500));
    assertEquals(17, w.requests(9_999));
    assertEquals(17, w.requests(10_000), "the first bucket starts leaving: all of it still inside");
    assertEquals(7 + 5, w.requests(10_500), "half of the leaving bucket's 10, rounded down");
    assertEquals(1, w.retries(9_999), "the retry made at 0 counts for one window");
    assertEquals(0, w.retries(10_000), "then leaves, though its bucket is still leaving");
    assertEquals(7, w.requests(11_000), "the first bucket left the window");
    assertEquals(0, w.retries(11_000));
    assertEquals(0, w.requests(12_000));
  }

  @Test
  void aBurstOfRetriesCountsForOneWindowAfterItsLastRetry() {
    SlidingWindowCounts w = new SlidingWindowCounts(10_000);
    w.add(300, 0, 40, 0);
    w.add(950, 0, 60, 0); // a burst late in the same bucket
    assertEquals(100, w.retries(10_300), "the bucket is leaving, but its last retry is not a window old");
    assertEquals(100, w.retries(10_949));
    assertEquals(0, w.retries(10_950), "one window after the last retry");
  }

  @Test
  void aReusedSlotStartsFromZero() {
    SlidingWindowCounts w = new SlidingWindowCounts(1_000); // buckets of 100 ms
    w.add(50, 10, 0, 0);
    w.add(1_150, 3, 0, 0); // same slot of the ring of 11, 1.1 s later
    assertEquals(3, w.requests(1_150));
  }

  @Test
  void aWindowCoversTenBuckets() {
    SlidingWindowCounts w = new SlidingWindowCounts(10_000);
    for (int s = 0; s < 30; s++) {
      w.add(s * 1_000L, 1, 0, 0);
    }
    assertEquals(10, w.requests(29_999), "ten full buckets; the leaving one has nothing left inside");
    assertEquals(11, w.requests(29_000), "nine full, the current, and all of the leaving one");
    assertEquals(10_000, w.windowMillis());
  }

  @Test
  void countsBeforeTheEpochToo() {
    SlidingWindowCounts w = new SlidingWindowCounts(10_000);
    w.add(-1, 4, 0, 0);
    assertEquals(4, w.requests(0));
  }

  @Test
  void rejectsAWindowTooShortForTenBuckets() {
    assertThrows(IllegalArgumentException.class, () -> new SlidingWindowCounts(9));
  }
}
