package io.retrybudget.budget.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * Review: {@link ResendCounts#withWindow} on random schedules, each step checked against a history of
 * when every count was made. Calls take and keep within one ResendCounts (as a relay's PendingSums
 * does); several calls may be in flight, each kept or sent later, before the next window change.
 */
class WindowChangeReviewTest {
  private static final long[] WINDOWS = {1_000, 2_000, 5_000, 10_000, 30_000, 60_000, 120_000};

  /** The history: counts made at each time, and the checks' bounds. */
  private static final class History {
    final TreeMap<Long, Long> made = new TreeMap<>();
    long total;
    long sent;

    void made(long at, long n) {
      made.merge(at, n, Long::sum);
      total += n;
    }

    long madeSince(long from) {
      return made.tailMap(from, true).values().stream().mapToLong(Long::longValue).sum();
    }

    long madeBefore(long to) {
      return made.headMap(to, false).values().stream().mapToLong(Long::longValue).sum();
    }
  }

  private static long sum(long[][] rows) {
    long n = 0;
    for (long[] r : rows) {
      n += r[1];
    }
    return n;
  }

  @Test
  void randomSchedulesWithWindowChangesAndCallsInFlight() {
    for (long seed = 0; seed < 2_000; seed++) {
      SplittableRandom random = new SplittableRandom(seed);
      long window = WINDOWS[random.nextInt(WINDOWS.length)];
      ResendCounts r = new ResendCounts(window);
      History h = new History();
      List<long[][]> inFlight = new ArrayList<>();
      long now = random.nextLong(-1_000_000, 1_000_000);
      long dropBound = Long.MIN_VALUE; // counts made before this may have been dropped as stale
      long oldBucket = 0; // the longest bucket a window change re-bucketed from (counts placed at its start)
      for (int step = 0; step < 200; step++) {
        now += random.nextInt(0, (int) Math.min(window * 2, 20_000));
        if (random.nextInt(8) == 0 && inFlight.isEmpty()) {
          long before = r.windowMillis();
          long keptBefore = r.requests();
          long staleBefore = r.stale();
          window = WINDOWS[random.nextInt(WINDOWS.length)];
          r = r.withWindow(window);
          // the change only drops, never adds
          assertEquals(keptBefore + staleBefore, r.requests() + r.stale(), "seed " + seed + ": withWindow adds");
          oldBucket = Math.max(oldBucket, before / 10);
        }
        long n = random.nextInt(0, 30);
        h.made(now, n);
        long[][] rows = r.take(now, n, 0, 0);
        long going = sum(rows);
        long bucket = window / 10;
        // nothing older than the window in force (within one bucket) goes
        long eligible = h.madeSince(now - window - bucket);
        assertTrue(going <= eligible, "seed " + seed + " step " + step + ": " + going
            + " taken at " + now + " but only " + eligible + " made within the window " + window + " and a bucket");
        for (long[] row : rows) {
          assertTrue(row[0] <= Math.floorDiv(now, bucket), "seed " + seed + ": a row from the future");
        }
        dropBound = Math.max(dropBound, now - window + bucket + oldBucket + 1);
        inFlight.add(rows);
        // some calls in flight resolve: applied (sent) or given back (kept)
        while (!inFlight.isEmpty() && random.nextInt(3) != 0) {
          long[][] call = inFlight.remove(random.nextInt(inFlight.size()));
          if (random.nextBoolean()) {
            h.sent += sum(call);
          } else {
            r.keep(call, sum(call), 0, 0, random.nextBoolean());
          }
        }
        // a young count is not dropped (at most one old bucket early)
        assertTrue(r.stale() <= h.madeBefore(dropBound), "seed " + seed + " step " + step + ": " + r.stale()
            + " dropped as stale but only " + h.madeBefore(dropBound) + " made before " + dropBound);
        long flying = inFlight.stream().mapToLong(WindowChangeReviewTest::sum).sum();
        assertEquals(h.total, h.sent + r.stale() + r.requests() + flying, "seed " + seed + ": sent + stale + kept = made");
      }
      for (long[][] call : inFlight) {
        h.sent += sum(call);
      }
      h.sent += sum(r.take(now, 0, 0, 0));
      assertEquals(h.total, h.sent + r.stale(), "seed " + seed + ": sent + stale = made");
    }
  }
}
