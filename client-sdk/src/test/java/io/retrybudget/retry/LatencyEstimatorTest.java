package io.retrybudget.retry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class LatencyEstimatorTest {
  private final AtomicLong now = new AtomicLong();

  @Test
  void bucketsAreOrderedAndBoundValuesWithin12AndAHalfPercent() {
    int last = -1;
    for (long v = 0; v < 5_000_000_000L; v = v < 100 ? v + 1 : v + v / 7) {
      int b = LatencyEstimator.bucket(v);
      assertTrue(b >= last, "monotonic at " + v);
      last = b;
      long upper = LatencyEstimator.upperBound(b);
      assertTrue(upper >= v && upper <= Math.max(v, 8) * 1.125 + 1, v + " -> " + upper);
    }
    assertTrue(LatencyEstimator.bucket(Long.MAX_VALUE) < 512);
  }

  @Test
  void quantilesOfKnownData() {
    LatencyEstimator e = new LatencyEstimator(Duration.ofSeconds(10), now::get);
    assertEquals(-1, e.quantileNanos(0.5, 1));
    for (int i = 1; i <= 100; i++) {
      e.record(i * 1_000_000L);
    }
    long median = e.quantileNanos(0.5, 1);
    assertTrue(median >= 50_000_000 && median < 50_000_000 * 1.13, "median " + median);
    long p99 = e.quantileNanos(0.99, 1);
    assertTrue(p99 >= 99_000_000 && p99 < 99_000_000 * 1.13, "p99 " + p99);
    assertEquals(-1, e.quantileNanos(0.5, 101), "not enough samples");
  }

  @Test
  void forgetsWhatIsOlderThanTwoPeriods() {
    LatencyEstimator e = new LatencyEstimator(Duration.ofSeconds(10), now::get);
    for (int i = 0; i < 100; i++) {
      e.record(1_000_000_000L); // 1 s: a slow spell
    }
    now.addAndGet(Duration.ofSeconds(10).toNanos());
    for (int i = 0; i < 100; i++) {
      e.record(1_000_000L);
    }
    assertEquals(200, e.count(), "one period later both are kept");
    now.addAndGet(Duration.ofSeconds(10).toNanos());
    e.record(1_000_000L);
    assertEquals(101, e.count(), "the slow spell is forgotten");
    assertTrue(e.quantileNanos(0.99, 1) < 2_000_000);
    now.addAndGet(Duration.ofSeconds(60).toNanos());
    assertEquals(0, e.count(), "long silence: nothing kept");
  }
}
