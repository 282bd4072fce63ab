package io.retrybudget.retry;

import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongSupplier;

/**
 * Recent latency percentiles in bounded memory, for adaptive hedge delays. A log-linear histogram
 * (8 sub-buckets per power of two: values within 12.5%) in a few stripes to spread contention,
 * over two generations: the current one and the one before, rotated every {@code period}, so data
 * older than two periods is forgotten. Recording is a few array operations; no lock, no allocation.
 */
public final class LatencyEstimator {
  private static final int SUB_BITS = 3;
  private static final int SUB = 1 << SUB_BITS;
  private static final int BUCKETS = 64 * SUB;
  private static final int STRIPES = 4;

  private final long periodNanos;
  private final LongSupplier nanoClock;
  private final AtomicReference<Generation> current;
  private volatile Generation previous;

  private static final class Generation {
    final long startNanos;
    final AtomicLongArray[] counts = new AtomicLongArray[STRIPES];

    Generation(long startNanos) {
      this.startNanos = startNanos;
      for (int i = 0; i < STRIPES; i++) {
        counts[i] = new AtomicLongArray(BUCKETS);
      }
    }
  }

  public LatencyEstimator(java.time.Duration period, LongSupplier nanoClock) {
    if (period == null || period.isNegative() || period.isZero()) {
      throw new IllegalArgumentException("period must be positive, was " + period);
    }
    this.periodNanos = period.toNanos();
    this.nanoClock = nanoClock;
    Generation g = new Generation(nanoClock.getAsLong());
    this.current = new AtomicReference<>(g);
    this.previous = new Generation(g.startNanos - periodNanos);
  }

  static int bucket(long nanos) {
    if (nanos < SUB) {
      return (int) Math.max(0, nanos);
    }
    int exponent = 63 - Long.numberOfLeadingZeros(nanos); // >= SUB_BITS
    int sub = (int) (nanos >>> (exponent - SUB_BITS)) & (SUB - 1);
    return (exponent - SUB_BITS + 1) * SUB + sub;
  }

  /** The largest value that falls in a bucket. */
  static long upperBound(int bucket) {
    if (bucket < SUB) {
      return bucket;
    }
    int exponent = bucket / SUB + SUB_BITS - 1;
    int sub = bucket % SUB;
    long low = (1L << exponent) | ((long) sub << (exponent - SUB_BITS));
    return low + (1L << (exponent - SUB_BITS)) - 1;
  }

  public void record(long nanos) {
    Generation g = rotateIfDue();
    int stripe = (int) (Thread.currentThread().getId() & (STRIPES - 1));
    g.counts[stripe].incrementAndGet(bucket(nanos));
  }

  private Generation rotateIfDue() {
    Generation g = current.get();
    long now = nanoClock.getAsLong();
    if (now - g.startNanos >= periodNanos) {
      Generation fresh = new Generation(now);
      if (current.compareAndSet(g, fresh)) {
        // two periods without data: the old generation is too old to keep
        previous = now - g.startNanos >= 2 * periodNanos ? new Generation(now - periodNanos) : g;
        return fresh;
      }
      return current.get();
    }
    return g;
  }

  /** Samples in the two generations kept. */
  public long count() {
    rotateIfDue();
    return total(current.get()) + total(previous);
  }

  /**
   * The latency at {@code quantile} (in (0, 1)) of the recent samples, or -1 when fewer than
   * {@code minSamples} are known.
   */
  public long quantileNanos(double quantile, long minSamples) {
    if (!(quantile > 0 && quantile < 1)) {
      throw new IllegalArgumentException("quantile must be in (0, 1), was " + quantile);
    }
    rotateIfDue();
    Generation a = current.get();
    Generation b = previous;
    long[] merged = new long[BUCKETS];
    long total = 0;
    for (Generation g : new Generation[] {a, b}) {
      for (AtomicLongArray stripe : g.counts) {
        for (int i = 0; i < BUCKETS; i++) {
          long c = stripe.get(i);
          merged[i] += c;
          total += c;
        }
      }
    }
    if (total < Math.max(1, minSamples)) {
      return -1;
    }
    long rank = (long) Math.ceil(quantile * total);
    long seen = 0;
    for (int i = 0; i < BUCKETS; i++) {
      seen += merged[i];
      if (seen >= rank) {
        return upperBound(i);
      }
    }
    return upperBound(BUCKETS - 1);
  }

  private static long total(Generation g) {
    long t = 0;
    for (AtomicLongArray stripe : g.counts) {
      for (int i = 0; i < BUCKETS; i++) {
        t += stripe.get(i);
      }
    }
    return t;
  }
}
