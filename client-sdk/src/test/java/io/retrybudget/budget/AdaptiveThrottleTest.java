package io.retrybudget.budget;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The SRE throttle as a pure function of counts, and its window on explicit time. */
class AdaptiveThrottleTest {
  private static final long MS = 1_000_000L;
  private static final long S = 1_000 * MS;

  @Test
  void theFormulaOnItsOwn() {
    assertEquals(0.0, AdaptiveThrottle.rejectProbability(0, 0, 2.0), "nothing seen: nothing refused");
    assertEquals(0.5, AdaptiveThrottle.rejectProbability(1, 0, 2.0), 1e-12);
    assertEquals(100.0 / 101.0, AdaptiveThrottle.rejectProbability(100, 0, 2.0), 1e-12, "accepts none: close to 1");
    assertEquals(0.0, AdaptiveThrottle.rejectProbability(100, 70, 2.0), "70 % accepted (30 % random failures): none refused");
    assertEquals(0.0, AdaptiveThrottle.rejectProbability(100, 50, 2.0), "exactly half: still none");
    assertEquals(20.0 / 101.0, AdaptiveThrottle.rejectProbability(100, 40, 2.0), 1e-12);
    assertEquals(40.0 / 101.0, AdaptiveThrottle.rejectProbability(100, 40, 1.5), 1e-12, "K 1.5 refuses earlier");
    assertEquals(0.0, AdaptiveThrottle.rejectProbability(10, 20, 2.0), "more accepts than requests (window edge): 0");
    assertEquals(0.0, AdaptiveThrottle.rejectProbability(-5, 0, 2.0));
    assertEquals(0.5, AdaptiveThrottle.rejectProbability(1, -3, 2.0), 1e-12, "negative accepts read as none");
    // exhaustively over small counts: in [0, 1), 0 at or above requests / K accepts, monotone in both
    for (long r = 0; r <= 60; r++) {
      double previous = Double.MAX_VALUE;
      for (long a = 0; a <= r; a++) {
        double p = AdaptiveThrottle.rejectProbability(r, a, 2.0);
        assertTrue(p >= 0.0 && p < 1.0, r + "/" + a + " -> " + p);
        assertEquals(2 * a >= r, p == 0.0, r + "/" + a + " -> " + p);
        assertTrue(p <= previous, "more accepts never refuse more: " + r + "/" + a);
        previous = p;
        if (r > 0) {
          assertTrue(AdaptiveThrottle.rejectProbability(r + 1, a, 2.0) >= p, "more requests never refuse less");
        }
      }
    }
  }

  @Test
  void countsLeaveTheWindowBucketByBucket() {
    AdaptiveThrottle t = new AdaptiveThrottle(AdaptiveThrottle.Config.builder().window(Duration.ofSeconds(10)).buckets(10)
        .minRequests(0).build());
    long t0 = 100 * S;
    for (int i = 0; i < 10; i++) {
      t.recordRequest(t0);
    }
    t.recordAccept(t0);
    assertEquals(new AdaptiveThrottle.Snapshot(10, 1, 8.0 / 11.0), t.snapshot(t0));
    t.recordRequest(t0 + 5 * S);
    assertEquals(11, t.snapshot(t0 + 9 * S + 999 * MS).requests(), "still inside 10 s");
    AdaptiveThrottle.Snapshot later = t.snapshot(t0 + 10 * S);
    assertEquals(1, later.requests(), "the first bucket left the window");
    assertEquals(0, later.accepts());
    assertEquals(0, t.snapshot(t0 + 16 * S).requests(), "and then the second");
    assertEquals(0.0, t.snapshot(t0 + 16 * S).rejectProbability());
    t.recordRequest(t0 + 1000 * S);
    assertEquals(1, t.snapshot(t0 + 1000 * S).requests(), "a long gap clears everything at once");
  }

  @Test
  void aCallsCountsAtOnce() {
    AdaptiveThrottle t = new AdaptiveThrottle(AdaptiveThrottle.Config.defaults());
    t.record(S, 2, 1);
    t.record(S, 0, 0);
    assertEquals(new AdaptiveThrottle.Snapshot(2, 1, 0.0), t.snapshot(S));
    assertEquals(0, t.snapshot(20 * S).requests(), "and they leave the window together");
    assertMessage("counts must not be negative, were requests=-1 accepts=0", () -> t.record(S, -1, 0));
    assertMessage("counts must not be negative, were requests=1 accepts=-1", () -> t.record(S, 1, -1));
  }

  @Test
  void aClockThatStepsBackCountsIntoTheNewestBucket() {
    AdaptiveThrottle t = new AdaptiveThrottle(AdaptiveThrottle.Config.defaults());
    t.recordRequest(50 * S);
    t.recordRequest(41 * S); // earlier than the newest bucket
    t.recordAccept(-3 * S);
    assertEquals(new AdaptiveThrottle.Snapshot(2, 1, 0.0), t.snapshot(45 * S));
    assertEquals(0, t.snapshot(60 * S).requests(), "and they leave with the newest bucket");
  }

  @Test
  void refusedAttemptsCountAsRequestsAllowedOnesDoNot() {
    AdaptiveThrottle t = new AdaptiveThrottle(AdaptiveThrottle.Config.builder().minRequests(0).build());
    assertFalse(t.refuse(S, 0.0), "no history: p = 0, even the lowest draw passes");
    assertEquals(0, t.snapshot(S).requests(), "an allowed attempt is counted when it is sent");
    t.recordRequest(S);
    assertTrue(t.refuse(S, 0.49), "p = 1/2");
    assertFalse(t.refuse(S, 0.99), "p = 2/3 now: the refusal counted");
    assertEquals(2, t.snapshot(S).requests());
    assertTrue(t.refuse(S, 0.66));
    assertEquals(3, t.snapshot(S).requests());
  }

  @Test
  void nothingIsRefusedBelowMinRequests() {
    AdaptiveThrottle t = new AdaptiveThrottle(AdaptiveThrottle.Config.builder().minRequests(3).build());
    t.record(S, 2, 0);
    assertEquals(0.0, t.rejectProbability(S), "2 failures of 2: too few to judge");
    assertFalse(t.refuse(S, 0.0));
    t.record(S, 1, 0);
    assertEquals(3.0 / 4.0, t.rejectProbability(S), 1e-12, "3 of 3: the formula");
    assertTrue(t.refuse(S, 0.7));
    assertEquals(new AdaptiveThrottle.Snapshot(4, 0, 4.0 / 5.0), t.snapshot(S));
    assertEquals(5, AdaptiveThrottle.Config.defaults().minRequests());
  }

  @Test
  void aTotalOutageStopsRetriesRandomFailuresDoNot() {
    SplittableRandom random = new SplittableRandom(7);
    for (double failure : new double[] {1.0, 0.3}) {
      AdaptiveThrottle t = new AdaptiveThrottle(AdaptiveThrottle.Config.defaults());
      long now = S;
      int asked = 0;
      int refused = 0;
      for (int call = 0; call < 2_000; call++, now += 5 * MS) {
        for (int attempt = 1; attempt <= 3; attempt++) {
          if (attempt > 1) {
            asked++;
            if (t.refuse(now, random.nextDouble())) {
              refused++;
              break;
            }
          }
          t.recordRequest(now);
          if (random.nextDouble() >= failure) {
            t.recordAccept(now);
            break;
          }
        }
      }
      if (failure == 1.0) {
        assertTrue(asked - refused < 20, "an outage lets through only the first handful: " + (asked - refused));
      } else {
        assertEquals(0, refused, "30 % random failures: nothing refused");
      }
    }
  }

  /** A reference model: every event kept with its time, the window recomputed from scratch. */
  @Test
  void theRingAgreesWithAnEventListOverRandomSchedules() {
    SplittableRandom random = new SplittableRandom(11);
    for (int schedule = 0; schedule < 300; schedule++) {
      int buckets = 1 + random.nextInt(12);
      long bucketMs = 1 + random.nextInt(50);
      AdaptiveThrottle.Config c = AdaptiveThrottle.Config.builder().buckets(buckets)
          .window(Duration.ofMillis(Math.max(100, bucketMs * buckets))).k(1 + random.nextInt(4))
          .minRequests(random.nextInt(4)).build();
      long bucketNanos = c.window().toNanos() / buckets;
      AdaptiveThrottle t = new AdaptiveThrottle(c);
      List<long[]> events = new ArrayList<>(); // {bucket, isAccept}
      long now = random.nextLong(0, 1_000_000 * S);
      long newest = Math.floorDiv(now, bucketNanos);
      t.snapshot(now); // both start at the same bucket
      for (int step = 0; step < 200; step++) {
        now += random.nextInt(10) == 0 ? -random.nextLong(0, 3 * bucketNanos) : random.nextLong(0, 2 * bucketNanos);
        newest = Math.max(newest, Math.floorDiv(now, bucketNanos));
        int op = random.nextInt(3);
        if (op == 0) {
          t.recordRequest(now);
          events.add(new long[] {newest, 0});
        } else if (op == 1) {
          t.recordAccept(now);
          events.add(new long[] {newest, 1});
        }
        long r = 0;
        long a = 0;
        for (long[] e : events) {
          if (e[0] > newest - buckets) {
            if (e[1] == 0) {
              r++;
            } else {
              a++;
            }
          }
        }
        AdaptiveThrottle.Snapshot s = t.snapshot(now);
        assertEquals(r, s.requests(), "schedule " + schedule + " step " + step);
        assertEquals(a, s.accepts(), "schedule " + schedule + " step " + step);
        assertEquals(r < c.minRequests() ? 0.0 : AdaptiveThrottle.rejectProbability(r, a, c.k()), s.rejectProbability());
      }
    }
  }

  @Test
  void theBuilderNamesTheWrongValue() {
    assertMessage("k must be in [1, 100], was 0.5", () -> AdaptiveThrottle.Config.builder().k(0.5));
    assertMessage("k must be in [1, 100], was NaN", () -> AdaptiveThrottle.Config.builder().k(Double.NaN));
    assertMessage("window must be in [100ms, 1h], was PT0.05S", () -> AdaptiveThrottle.Config.builder().window(Duration.ofMillis(50)));
    assertMessage("window must be in [100ms, 1h], was PT2H", () -> AdaptiveThrottle.Config.builder().window(Duration.ofHours(2)));
    assertMessage("buckets must be in [1, 1000], was 0", () -> AdaptiveThrottle.Config.builder().buckets(0));
    assertMessage("min_requests must be in [0, 1000000], was -1", () -> AdaptiveThrottle.Config.builder().minRequests(-1));
    assertMessage("window / buckets must be at least 1 ms", () -> AdaptiveThrottle.Config.builder()
        .window(Duration.ofMillis(100)).buckets(1000).build());
    assertThrows(NullPointerException.class, () -> AdaptiveThrottle.Config.builder().window(null));
    AdaptiveThrottle.Config d = AdaptiveThrottle.Config.defaults();
    assertEquals(2.0, d.k());
    assertEquals(Duration.ofSeconds(10), d.window());
    assertEquals(10, d.buckets());
  }

  private static void assertMessage(String expected, org.junit.jupiter.api.function.Executable e) {
    IllegalArgumentException x = assertThrows(IllegalArgumentException.class, e);
    assertTrue(x.getMessage().startsWith(expected), x.getMessage());
  }
}
