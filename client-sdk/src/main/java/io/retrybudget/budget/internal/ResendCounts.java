package io.retrybudget.budget.internal;

/**
 * Counts to be sent again (a call Redis did not apply, or refused unsent), kept by when they were first
 * taken for a call, in buckets of a tenth of the window. Redis puts what a call brings in its window's
 * current bucket, so counts kept longer than the window, sent after an outage, would count as that
 * second's (an outage of a minute: six windows of first attempts at once, six times the ratio's retries
 * for the next window); they are dropped when taken instead ({@link #stale}), as they would have left
 * the window by then. Younger ones are kept to the last, however often their calls fail. Kept by the
 * SDK for its next call ({@code PendingCounts}) and by a relay for its first attempts
 * ({@code PendingSums}). Pure, not thread-safe: its owner guards it.
 */
public final class ResendCounts {
  private static final int BUCKETS = SlidingWindowCounts.BUCKETS;
  private static final int RING = BUCKETS + 1;
  private final long bucketMillis;
  private final long[] stamp = new long[RING];
  private final long[] requests = new long[RING];
  private final long[] denied = new long[RING];
  private final long[] retries = new long[RING];
  private long stale;
  private long staleDenied; // refusals dropped with them

  public ResendCounts(long windowMillis) {
    if (windowMillis < BUCKETS) {
      throw new IllegalArgumentException("windowMillis must be at least " + BUCKETS + ", was " + windowMillis);
    }
    this.bucketMillis = windowMillis / BUCKETS;
    java.util.Arrays.fill(stamp, Long.MIN_VALUE);
  }

  /**
   * Takes every count kept and the new ones ({@code newRequests}, {@code newDenied}, {@code newRetries}, first
   * taken now) for a call at {@code now}: rows {@code {bucket, requests, denied, retries}}, oldest first.
   * Those kept from before the window are dropped.
   */
  public long[][] take(long now, long newRequests, long newDenied, long newRetries) {
    long cur = Math.floorDiv(now, bucketMillis);
    long[][] rows = new long[RING + 1][];
    int n = 0;
    for (int s = 0; s < RING; s++) {
      if (stamp[s] == Long.MIN_VALUE) {
        continue;
      }
      if (stamp[s] <= cur - BUCKETS) {
        stale += requests[s]; // kept from before the window
        staleDenied += denied[s];
      } else if ((requests[s] | denied[s] | retries[s]) != 0) {
        rows[n++] = new long[] {Math.min(stamp[s], cur), requests[s], denied[s], retries[s]};
      }
      clear(s, Long.MIN_VALUE);
    }
    java.util.Arrays.sort(rows, 0, n, java.util.Comparator.comparingLong(row -> row[0]));
    if ((newRequests | newDenied | newRetries) != 0) {
      if (n > 0 && rows[n - 1][0] == cur) {
        rows[n - 1][1] += newRequests;
        rows[n - 1][2] += newDenied;
        rows[n - 1][3] += newRetries;
      } else {
        rows[n++] = new long[] {cur, newRequests, newDenied, newRetries};
      }
    }
    return java.util.Arrays.copyOf(rows, n);
  }

  /**
   * Keeps {@code requests}, {@code denied} and {@code retries} of what {@code rows} took, to go again:
   * spread over its rows oldest first ({@code oldestFirst}: the part a call sent) or newest first (the
   * part beyond what one call may report), each row up to what it had. A row whose bucket has left the
   * ring meanwhile is dropped as stale.
   */
  public void keep(long[][] rows, long requests, long denied, long retries, boolean oldestFirst) {
    keep(rows, windowMillis(), requests, denied, retries, oldestFirst);
  }

  /**
   * As {@link #keep(long[][], long, long, long, boolean)}, for rows taken when the window was
   * {@code rowsWindowMillis}: each row at the time its bucket began, in this window's buckets.
   */
  public void keep(long[][] rows, long rowsWindowMillis, long requests, long denied, long retries,
      boolean oldestFirst) {
    long rowBucket = rowsWindowMillis / BUCKETS;
    long[] left = {requests, denied, retries};
    for (int k = 0; k < rows.length; k++) {
      long[] row = rows[oldestFirst ? k : rows.length - 1 - k];
      long r = Math.min(left[0], row[1]);
      long d = Math.min(left[1], row[2]);
      long g = Math.min(left[2], row[3]);
      left[0] -= r;
      left[1] -= d;
      left[2] -= g;
      addTo(rebucket(row[0], rowBucket, bucketMillis), r, d, g);
    }
  }

  /** Whether anything is kept. */
  public boolean any() {
    for (int s = 0; s < RING; s++) {
      if (stamp[s] != Long.MIN_VALUE && (requests[s] | denied[s] | retries[s]) != 0) {
        return true;
      }
    }
    return false;
  }

  /** First attempts kept (those a window old included, until a take drops them). */
  public long requests() {
    long n = 0;
    for (int s = 0; s < RING; s++) {
      n += stamp[s] == Long.MIN_VALUE ? 0 : requests[s];
    }
    return n;
  }

  /** First attempts dropped for having been kept longer than the window. */
  public long stale() {
    return stale;
  }

  /** Refusals dropped with them (kept longer than the window). */
  public long staleDenied() {
    return staleDenied;
  }

  /** Counts that came at {@code now}, kept to go with a call within the window. */
  public void add(long now, long requests, long denied, long retries) {
    addTo(Math.floorDiv(now, bucketMillis), requests, denied, retries);
  }

  /**
   * The same counts kept for a window of {@code windowMillis} (the budget's window changed): each at the
   * time its bucket began, so those older than the new window are dropped as stale at the next take,
   * as if they had been kept for it all along (a window shrunk from a minute to 10 s would otherwise
   * send a minute's counts kept through an outage as one 10 s window's). The stale count is carried.
   */
  public ResendCounts withWindow(long windowMillis) {
    ResendCounts to = new ResendCounts(windowMillis);
    to.stale = stale;
    to.staleDenied = staleDenied;
    Integer[] order = new Integer[RING];
    for (int s = 0; s < RING; s++) {
      order[s] = s;
    }
    java.util.Arrays.sort(order, java.util.Comparator.comparingLong(s -> stamp[s]));
    for (int s : order) { // oldest first: a newer bucket sharing a slot with an older one keeps the slot
      if (stamp[s] != Long.MIN_VALUE) {
        to.addTo(rebucket(stamp[s], bucketMillis, to.bucketMillis), requests[s], denied[s], retries[s]);
      }
    }
    return to;
  }

  /** The window this keeps counts for. */
  public long windowMillis() {
    return bucketMillis * BUCKETS;
  }

  private void addTo(long bucket, long r, long d, long g) {
    if ((r | d | g) == 0) {
      return;
    }
    int slot = slot(bucket);
    if (stamp[slot] > bucket) {
      stale += r; // its bucket is another's now: older than the window
      staleDenied += d;
      return;
    }
    if (stamp[slot] != bucket) {
      if (stamp[slot] != Long.MIN_VALUE) {
        stale += requests[slot];
        staleDenied += denied[slot];
      }
      clear(slot, bucket);
    }
    requests[slot] += r;
    denied[slot] += d;
    retries[slot] += g;
  }

  private void clear(int slot, long bucket) {
    stamp[slot] = bucket;
    requests[slot] = 0;
    denied[slot] = 0;
    retries[slot] = 0;
  }

  /** Bucket {@code bucket} of {@code fromMillis} as one of {@code toMillis}: the one its start falls in. */
  private static long rebucket(long bucket, long fromMillis, long toMillis) {
    return fromMillis == toMillis ? bucket : Math.floorDiv(bucket * fromMillis, toMillis);
  }

  private static int slot(long bucket) {
    return (int) Math.floorMod(bucket, RING);
  }
}
