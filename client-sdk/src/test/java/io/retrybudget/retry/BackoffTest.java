package io.retrybudget.retry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class BackoffTest {
  private static final long MS = 1_000_000L;
  private static final Backoff FULL = Backoff.of(Duration.ofMillis(100), Duration.ofSeconds(10), Jitter.FULL);
  private static final Backoff EQUAL = Backoff.of(Duration.ofMillis(100), Duration.ofSeconds(10), Jitter.EQUAL);
  private static final Backoff DECORRELATED = Backoff.of(Duration.ofMillis(100), Duration.ofSeconds(10), Jitter.DECORRELATED);
  private static final Backoff NONE = Backoff.of(Duration.ofMillis(100), Duration.ofSeconds(10), Jitter.NONE);

  @Test
  void exponentialDoublesUpToTheCap() {
    assertEquals(100 * MS, NONE.delayNanos(0, 0, 0.5));
    assertEquals(200 * MS, NONE.delayNanos(1, 0, 0.5));
    assertEquals(6_400 * MS, NONE.delayNanos(6, 0, 0.5));
    assertEquals(10_000 * MS, NONE.delayNanos(7, 0, 0.5));
  }

  @Test
  void exactValuesWithTheRandomNumberInjected() {
    assertEquals(0, FULL.delayNanos(0, 0, 0.0));
    assertEquals(50 * MS, FULL.delayNanos(0, 0, 0.5));
    assertEquals(300 * MS, FULL.delayNanos(2, 0, 0.75));
    assertEquals(50 * MS, EQUAL.delayNanos(0, 0, 0.0));
    assertEquals(75 * MS, EQUAL.delayNanos(0, 0, 0.5));
    assertEquals(350 * MS, EQUAL.delayNanos(2, 0, 0.75));
    // decorrelated: U(base, prev * 3), the first retry takes prev = base
    assertEquals(100 * MS, DECORRELATED.delayNanos(0, 0, 0.0));
    assertEquals(200 * MS, DECORRELATED.delayNanos(0, 0, 0.5));
    assertEquals(1_550 * MS, DECORRELATED.delayNanos(5, 1_000 * MS, 0.5));
    assertEquals(10_000 * MS, DECORRELATED.delayNanos(9, 9_000 * MS, 0.9), "capped");
  }

  @ParameterizedTest
  @ValueSource(ints = {30, 62, 63, 64, 1_000, Integer.MAX_VALUE})
  void noOverflowAtLargeAttemptNumbers(int attempt) {
    Backoff huge = Backoff.of(Duration.ofSeconds(1), Duration.ofDays(1), Jitter.NONE);
    assertEquals(Duration.ofDays(1).toNanos(), huge.delayNanos(attempt, 0, 0.3));
    for (Jitter j : Jitter.values()) {
      long d = Backoff.of(Duration.ofSeconds(1), Duration.ofDays(1), j).delayNanos(attempt, Long.MAX_VALUE, 0.999999);
      assertTrue(d >= 0 && d <= Duration.ofDays(1).toNanos(), j + " gave " + d);
    }
  }

  @Test
  void validatesEveryValueNamingIt() {
    assertMessage("base", () -> Backoff.of(Duration.ZERO, Duration.ofSeconds(1), Jitter.FULL));
    assertMessage("base", () -> Backoff.of(Duration.ofMillis(-1), Duration.ofSeconds(1), Jitter.FULL));
    assertMessage("cap", () -> Backoff.of(Duration.ofSeconds(2), Duration.ofSeconds(1), Jitter.FULL));
    assertMessage("cap", () -> Backoff.of(Duration.ofSeconds(2), Duration.ofDays(2), Jitter.FULL));
    assertMessage("random", () -> FULL.delayNanos(0, 0, 1.0));
    assertMessage("random", () -> FULL.delayNanos(0, 0, -0.1));
    assertMessage("attempt", () -> FULL.delayNanos(-1, 0, 0.1));
    assertThrows(NullPointerException.class, () -> Backoff.of(Duration.ofSeconds(1), Duration.ofSeconds(1), null));
  }

  // Distribution tests: 200,000 draws per seed; tolerances at 5 standard errors (two-sided
  // alpha below 1e-6), so a correct implementation does not fail on any seed.
  private static final long[] SEEDS = {1, 7, 42, 1234, 987_654_321};
  private static final int N = 200_000;

  @Test
  void fullJitterIsUniformOnZeroToTemp() {
    for (long seed : SEEDS) {
      SplittableRandom r = new SplittableRandom(seed);
      double temp = 800 * MS; // attempt 3
      double[] stats = sample(() -> FULL.delayNanos(3, 0, r.nextDouble()), 0, temp);
      assertClose(temp / 2, stats[0], temp / Math.sqrt(12.0 * N), "mean");
      assertClose(temp * temp / 12, stats[1], varianceTolerance(temp), "variance");
    }
  }

  @Test
  void equalJitterIsUniformOnHalfTempToTemp() {
    for (long seed : SEEDS) {
      SplittableRandom r = new SplittableRandom(seed);
      double temp = 800 * MS;
      double[] stats = sample(() -> EQUAL.delayNanos(3, 0, r.nextDouble()), temp / 2, temp);
      double width = temp / 2;
      assertClose(temp * 0.75, stats[0], width / Math.sqrt(12.0 * N), "mean");
      assertClose(width * width / 12, stats[1], varianceTolerance(width), "variance");
    }
  }

  @Test
  void decorrelatedJitterIsUniformOnBaseToThreeTimesPrevious() {
    for (long seed : SEEDS) {
      SplittableRandom r = new SplittableRandom(seed);
      double base = 100 * MS;
      double upper = 3 * 1_000 * MS;
      double[] stats = sample(() -> DECORRELATED.delayNanos(4, 1_000 * MS, r.nextDouble()), base, upper);
      double width = upper - base;
      assertClose(base + width / 2, stats[0], width / Math.sqrt(12.0 * N), "mean");
      assertClose(width * width / 12, stats[1], varianceTolerance(width), "variance");
    }
  }

  @Test
  void decorrelatedJitterPilesUpAtTheCap() {
    for (long seed : SEEDS) {
      SplittableRandom r = new SplittableRandom(seed);
      long cap = 10_000 * MS;
      // once the previous delay is the cap, U(base, 3 * cap) lands above the cap with p = (2cap)/(3cap - base)
      double p = (3.0 * cap - cap) / (3.0 * cap - 100 * MS);
      int atCap = 0;
      for (int i = 0; i < N; i++) {
        if (DECORRELATED.delayNanos(20, cap, r.nextDouble()) == cap) {
          atCap++;
        }
      }
      assertClose(p * N, atCap, Math.sqrt(N * p * (1 - p)), "draws at the cap");
    }
  }

  @Test
  void fullJitterSpreadsRetriesMoreThanEqualJitter() {
    // the point of full jitter: clients that failed together do not come back together
    SplittableRandom r = new SplittableRandom(3);
    double[] full = sample(() -> FULL.delayNanos(3, 0, r.nextDouble()), 0, 800 * MS);
    double[] equal = sample(() -> EQUAL.delayNanos(3, 0, r.nextDouble()), 400 * MS, 800 * MS);
    assertTrue(full[1] > 3 * equal[1], "full variance " + full[1] + " vs equal " + equal[1]);
  }

  private static double varianceTolerance(double width) {
    // Var of U(0,w) is w^2/12; the variance of the sample variance is (mu4 - sigma^4)/n with
    // mu4 = w^4/80 for the uniform distribution
    double sigma4 = Math.pow(width * width / 12, 2);
    return 5 * Math.sqrt((Math.pow(width, 4) / 80 - sigma4) / N);
  }

  /** {mean, variance}; asserts every draw lies in [lo, hi]. */
  private static double[] sample(java.util.function.LongSupplier draw, double lo, double hi) {
    double sum = 0;
    double sumSq = 0;
    for (int i = 0; i < N; i++) {
      long d = draw.getAsLong();
      assertTrue(d >= lo && d <= hi, d + " outside [" + lo + ", " + hi + "]");
      sum += d;
      sumSq += (double) d * d;
    }
    double mean = sum / N;
    return new double[] {mean, sumSq / N - mean * mean};
  }

  private static void assertClose(double expected, double actual, double standardError, String what) {
    assertTrue(Math.abs(expected - actual) <= 5 * standardError,
        what + ": expected " + expected + " +- " + 5 * standardError + ", was " + actual);
  }

  private static void assertMessage(String field, org.junit.jupiter.api.function.Executable call) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call);
    assertTrue(e.getMessage().startsWith(field + " "), e.getMessage());
  }
}
