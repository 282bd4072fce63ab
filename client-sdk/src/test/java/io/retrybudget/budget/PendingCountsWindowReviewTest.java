package io.retrybudget.budget;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * Review: {@link PendingCounts} as {@link BudgetLink} drives it: each call takes with the window Redis
 * last told, several calls are in flight, and one refused before it ran gives its counts back
 * ({@link PendingCounts#sendAgain}) after another call took with a new window.
 */
class PendingCountsWindowReviewTest {
  private static final long[] WINDOWS = {1_000, 2_000, 5_000, 10_000, 30_000, 60_000, 120_000};

  /** A minute's window shortened to 10 s while a call is in flight; that call is refused after the change. */
  @Test
  void aCallRefusedAfterTheWindowShortenedKeepsItsFreshCounts() {
    PendingCounts p = new PendingCounts(60_000);
    long t = 600_000;
    for (int i = 0; i < 100; i++) {
      p.firstAttempt();
    }
    PendingCounts.Taken a = p.take(t, 60_000); // call A: 100 first attempts made now
    p.take(t + 10, 10_000); // call B: Redis told 10 s meanwhile (another call's reply)
    p.sendAgain(a, a.requests(), a.denied(), a.retries(), true); // A refused at t + 20: never ran
    PendingCounts.Taken c = p.take(t + 30, 10_000); // the next call, 30 ms after they were made
    assertEquals(100, c.requests() + p.stale(), "none lost");
    assertEquals(0, p.stale(), "first attempts made 30 ms ago dropped as older than a 10 s window");
  }

  /** A 10 s window lengthened to a minute; a call refused 100 s after it took its counts. */
  @Test
  void aCallRefusedAfterTheWindowLengthenedSendsNothingOlderThanTheWindow() {
    PendingCounts p = new PendingCounts(10_000);
    long t = 600_000;
    for (int i = 0; i < 100; i++) {
      p.firstAttempt();
    }
    PendingCounts.Taken a = p.take(t, 10_000); // call A: 100 first attempts made at t
    p.take(t + 10, 60_000); // Redis told 60 s meanwhile
    p.sendAgain(a, a.requests(), a.denied(), a.retries(), true); // A refused 100 s later: never ran
    PendingCounts.Taken c = p.take(t + 100_000, 60_000);
    assertEquals(0, c.requests(), "first attempts made 100 s ago sent within a 60 s window (stale "
        + p.stale() + ")");
  }

  @Test
  void randomSchedulesOfCallsInFlightAcrossWindowChanges() {
    StringBuilder failures = new StringBuilder();
    int failed = 0;
    for (long seed = 0; seed < 1_000; seed++) {
      String f = schedule(seed);
      if (f != null) {
        if (failed++ < 3) {
          failures.append(f).append('\n');
        }
      }
    }
    assertEquals(0, failed, failed + " of 1000 schedules broke an invariant, e.g.\n" + failures);
  }

  /** One random schedule: the first invariant it breaks, or null. */
  private static String schedule(long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    long window = WINDOWS[random.nextInt(WINDOWS.length)];
    PendingCounts p = new PendingCounts(window);
    TreeMap<Long, Long> made = new TreeMap<>();
    long total = 0;
    long sent = 0;
    List<PendingCounts.Taken> inFlight = new ArrayList<>();
    long now = 1_000_000;
    long dropBound = Long.MIN_VALUE;
    long oldBucket = 0;
    for (int step = 0; step < 300; step++) {
      now += random.nextInt(0, 3_000);
      if (random.nextInt(10) == 0) {
        oldBucket = Math.max(oldBucket, window / 10);
        window = WINDOWS[random.nextInt(WINDOWS.length)]; // Redis's reply to some call told another window
      }
      int n = random.nextInt(0, 20);
      for (int i = 0; i < n; i++) {
        p.firstAttempt();
      }
      made.merge(now, (long) n, Long::sum);
      total += n;
      PendingCounts.Taken t = p.take(now, window);
      long bucket = window / 10;
      long eligible = made.tailMap(now - window - bucket, true).values().stream().mapToLong(Long::longValue).sum();
      if (t.requests() > eligible) {
        return "seed " + seed + " step " + step + ": " + t.requests() + " taken at " + now + " with only " + eligible
            + " made within the window " + window + " ms and a bucket";
      }
      dropBound = Math.max(dropBound, now - window + bucket + oldBucket + 1);
      inFlight.add(t);
      while (!inFlight.isEmpty() && random.nextInt(3) != 0) {
        PendingCounts.Taken call = inFlight.remove(random.nextInt(inFlight.size()));
        if (random.nextInt(3) == 0) {
          sent += call.requests();
        } else {
          p.sendAgain(call, call.requests(), call.denied(), call.retries(), true); // refused, never ran
        }
      }
      long old = made.headMap(dropBound, false).values().stream().mapToLong(Long::longValue).sum();
      if (p.stale() > old) {
        return "seed " + seed + " step " + step + ": " + p.stale() + " dropped as stale at " + now + ", only " + old
            + " made before " + dropBound + " (window " + window + " ms)";
      }
    }
    for (PendingCounts.Taken call : inFlight) {
      sent += call.requests();
    }
    sent += p.take(now, window).requests();
    if (total != sent + p.stale()) {
      return "seed " + seed + ": made " + total + " != sent " + sent + " + stale " + p.stale();
    }
    return null;
  }
}
