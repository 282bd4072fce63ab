package io.retrybudget.bench.relay;

import java.util.concurrent.atomic.AtomicIntegerArray;

/**
 * A bounded histogram of latencies in microseconds, safe to record into from any thread: 1 µs buckets
 * below 1 ms, 100 µs buckets below 100 ms, 10 ms buckets below 10 s, and one bucket above. A
 * percentile is read as its bucket's upper bound, so it errs on the slow side by less than a bucket.
 */
final class LatencyHistogram {
  static final int BUCKETS = 1_000 + 990 + 990 + 1;
  private final AtomicIntegerArray counts = new AtomicIntegerArray(BUCKETS);

  static int bucket(long micros) {
    long v = Math.max(0, micros);
    if (v < 1_000) {
      return (int) v;
    }
    if (v < 100_000) {
      return 1_000 + (int) ((v - 1_000) / 100);
    }
    if (v < 10_000_000) {
      return 1_990 + (int) ((v - 100_000) / 10_000);
    }
    return BUCKETS - 1;
  }

  /** The largest latency bucket {@code b} holds, µs (the overflow bucket: 10 s). */
  static long upperMicros(int b) {
    if (b < 1_000) {
      return b;
    }
    if (b < 1_990) {
      return 1_000 + (b - 1_000 + 1) * 100L - 1;
    }
    if (b < BUCKETS - 1) {
      return 100_000 + (b - 1_990 + 1) * 10_000L - 1;
    }
    return 10_000_000;
  }

  void record(long micros) {
    counts.incrementAndGet(bucket(micros));
  }

  int count(int bucket) {
    return counts.get(bucket);
  }

  void add(int bucket, long n) {
    counts.addAndGet(bucket, (int) n);
  }

  long total() {
    long n = 0;
    for (int b = 0; b < BUCKETS; b++) {
      n += counts.get(b);
    }
    return n;
  }

  /** The latency at quantile {@code q} in (0, 1], µs; 0 when nothing was recorded. */
  long percentile(double q) {
    long total = total();
    if (total == 0) {
      return 0;
    }
    long rank = (long) Math.ceil(q * total);
    long seen = 0;
    for (int b = 0; b < BUCKETS; b++) {
      seen += counts.get(b);
      if (seen >= rank) {
        return upperMicros(b);
      }
    }
    return upperMicros(BUCKETS - 1);
  }

  /** The non-empty buckets as {@code bucket:count} separated by spaces (a CSV field). */
  String encode() {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < BUCKETS; i++) {
      int c = counts.get(i);
      if (c != 0) {
        b.append(b.length() == 0 ? "" : " ").append(i).append(':').append(c);
      }
    }
    return b.toString();
  }

  /** Adds what {@link #encode} wrote. */
  void decodeInto(String field) {
    if (field.isBlank()) {
      return;
    }
    for (String kv : field.trim().split(" ")) {
      int colon = kv.indexOf(':');
      add(Integer.parseInt(kv.substring(0, colon)), Long.parseLong(kv.substring(colon + 1)));
    }
  }
}
