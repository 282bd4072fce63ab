package io.retrybudget.budget.internal;

import java.util.Arrays;

/**
 * First attempts, retries and refusals over a sliding window of ten buckets, in process: the same
 * window as lua/budget.lua keeps in Redis. The ring holds eleven buckets so that the one leaving
 * the window still counts for the part of it inside: first attempts and refusals by its share,
 * rounded down; retries in full until one window after the last retry in it (the safe side: no
 * retry stops counting before a window has passed). Time comes in as an argument: no clock inside.
 * Not thread-safe; callers synchronize.
 */
public final class SlidingWindowCounts {
  public static final int BUCKETS = 10;
  private static final int RING = BUCKETS + 1;

  private final long bucketMillis;
  private final long[] stamp = new long[RING];
  private final long[] requests = new long[RING];
  private final long[] retries = new long[RING];
  private final long[] denied = new long[RING];
  private final long[] lastRetryAt = new long[RING];

  public SlidingWindowCounts(long windowMillis) {
    if (windowMillis < BUCKETS) {
      throw new IllegalArgumentException("windowMillis must be at least " + BUCKETS + ", was " + windowMillis);
    }
    this.bucketMillis = windowMillis / BUCKETS;
    Arrays.fill(stamp, Long.MIN_VALUE);
    Arrays.fill(lastRetryAt, Long.MIN_VALUE);
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
      lastRetryAt[slot] = Long.MIN_VALUE;
    }
    if (addRetries > 0) {
      lastRetryAt[slot] = nowMillis;
    }
    requests[slot] += addRequests;
    retries[slot] += addRetries;
    denied[slot] += addDenied;
  }

  public long requests(long nowMillis) {
    return sum(requests, nowMillis);
  }

  public long retries(long nowMillis) {
    long cur = Math.floorDiv(nowMillis, bucketMillis);
    long total = 0;
    for (int i = 0; i < RING; i++) {
      if (stamp[i] > cur - BUCKETS && stamp[i] <= cur) {
        total += retries[i];
      } else if (stamp[i] == cur - BUCKETS && lastRetryAt[i] > nowMillis - windowMillis()) {
        total += retries[i];
      }
    }
    return total;
  }

  /**
   * The time the window's first attempts span, as lua/budget.lua reckons it ({@link
   * PaceArithmetic#span}): the whole window once it has had first attempts for that long.
   */
  public long spanMillis(long nowMillis) {
    long cur = Math.floorDiv(nowMillis, bucketMillis);
    long oldest = Long.MIN_VALUE;
    for (int i = 0; i < RING; i++) {
      if (requests[i] > 0 && stamp[i] >= cur - BUCKETS && stamp[i] <= cur && (oldest == Long.MIN_VALUE || stamp[i] < oldest)) {
        oldest = stamp[i];
      }
    }
    return PaceArithmetic.span(oldest, cur, nowMillis, bucketMillis, windowMillis());
  }

  public long denied(long nowMillis) {
    return sum(denied, nowMillis);
  }

  private long sum(long[] values, long nowMillis) {
    long cur = Math.floorDiv(nowMillis, bucketMillis);
    long insideMillis = bucketMillis - (nowMillis - cur * bucketMillis);
    long total = 0;
    for (int i = 0; i < RING; i++) {
      if (stamp[i] > cur - BUCKETS && stamp[i] <= cur) {
        total += values[i];
      } else if (stamp[i] == cur - BUCKETS) {
        total += values[i] * insideMillis / bucketMillis;
      }
    }
    return total;
  }
}
