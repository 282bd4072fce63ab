package io.retrybudget.budget.internal;

import java.util.Arrays;

/**
 * First attempts, retries and refusals over a sliding window of ten buckets, in process: the same
 * window as lua/budget.lua keeps in Redis. The ring holds eleven buckets so that the one leaving
 * the window still counts for the part of it inside (first attempts rounded down, retries rounded
 * up: the safe side). Time comes in as an argument: no clock inside. Not thread-safe; callers
 * synchronize.
 */
public final class SlidingWindowCounts {
  public static final int BUCKETS = 10;
  private static final int RING = BUCKETS + 1;

  private final long bucketMillis;
  private final long[] stamp = new long[RING];
  private final long[] requests = new long[RING];
  private final long[] retries = new long[RING];
  private final long[] denied = new long[RING];

  public SlidingWindowCounts(long windowMillis) {
    if (windowMillis < BUCKETS) {
      throw new IllegalArgumentException("windowMillis must be at least " + BUCKETS + ", was " + windowMillis);
    }
    this.bucketMillis = windowMillis / BUCKETS;
    Arrays.fill(stamp, Long.MIN_VALUE);
  }

  public long windowMillis() {
    return bucketMillis * BUCKETS;
  }

  public void add(long nowMillis, long addRequests, long addRetries, long addDenied) {
    long cur = Math.floorDiv(nowMillis, bucketMillis);
    int slot = (int) Math.floorMod(cur, RING);
    if (stamp[slot] != cur) {
      stamp[slot] = cur;
      requests[slot] = 0;
      retries[slot] = 0;
      denied[slot] = 0;
    }
    requests[slot] += addRequests;
    retries[slot] += addRetries;
    denied[slot] += addDenied;
  }

  public long requests(long nowMillis) {
    return sum(requests, nowMillis, false);
  }

  public long retries(long nowMillis) {
    return sum(retries, nowMillis, true);
  }

  public long denied(long nowMillis) {
    return sum(denied, nowMillis, false);
  }

  private long sum(long[] values, long nowMillis, boolean roundUp) {
    long cur = Math.floorDiv(nowMillis, bucketMillis);
    long insideMillis = bucketMillis - (nowMillis - cur * bucketMillis);
    long total = 0;
    for (int i = 0; i < RING; i++) {
      if (stamp[i] > cur - BUCKETS && stamp[i] <= cur) {
        total += values[i];
      } else if (stamp[i] == cur - BUCKETS) {
        long weighted = values[i] * insideMillis;
        total += weighted / bucketMillis + (roundUp && weighted % bucketMillis > 0 ? 1 : 0);
      }
    }
    return total;
  }
}
