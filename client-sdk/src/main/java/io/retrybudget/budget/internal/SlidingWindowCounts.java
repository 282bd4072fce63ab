package io.retrybudget.budget.internal;

/**
 * First attempts, retries and refusals over a sliding window of ten buckets, in process. The same
 * ring as lua/budget.lua keeps in Redis. Time comes in as an argument: no clock inside. Not
 * thread-safe; callers synchronize.
 */
public final class SlidingWindowCounts {
  public static final int BUCKETS = 10;

  private final long bucketMillis;
  private final long[] stamp = new long[BUCKETS];
  private final long[] requests = new long[BUCKETS];
  private final long[] retries = new long[BUCKETS];
  private final long[] denied = new long[BUCKETS];

  public SlidingWindowCounts(long windowMillis) {
    if (windowMillis < BUCKETS) {
      throw new IllegalArgumentException("windowMillis must be at least " + BUCKETS + ", was " + windowMillis);
    }
    this.bucketMillis = windowMillis / BUCKETS;
    java.util.Arrays.fill(stamp, Long.MIN_VALUE);
  }

  public long windowMillis() {
    return bucketMillis * BUCKETS;
  }

  public void add(long nowMillis, long addRequests, long addRetries, long addDenied) {
    long cur = Math.floorDiv(nowMillis, bucketMillis);
    int slot = (int) Math.floorMod(cur, BUCKETS);
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
    return sum(requests, nowMillis);
  }

  public long retries(long nowMillis) {
    return sum(retries, nowMillis);
  }

  public long denied(long nowMillis) {
    return sum(denied, nowMillis);
  }

  private long sum(long[] values, long nowMillis) {
    long cur = Math.floorDiv(nowMillis, bucketMillis);
    long total = 0;
    for (int i = 0; i < BUCKETS; i++) {
      if (stamp[i] > cur - BUCKETS && stamp[i] <= cur) {
        total += values[i];
      }
    }
    return total;
  }
}
