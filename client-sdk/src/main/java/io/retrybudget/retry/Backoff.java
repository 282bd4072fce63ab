package io.retrybudget.retry;

import java.time.Duration;
import java.util.Objects;

/**
 * Capped exponential backoff with jitter, as a pure function of (attempt, previous delay, random
 * number): no clock, no random source inside, so tests can assert exact values. Never overflows,
 * whatever the attempt number.
 */
public final class Backoff {
  private final long baseNanos;
  private final long capNanos;
  private final Jitter jitter;

  private Backoff(long baseNanos, long capNanos, Jitter jitter) {
    this.baseNanos = baseNanos;
    this.capNanos = capNanos;
    this.jitter = jitter;
  }

  /**
   * @param base the first delay before jitter, positive
   * @param cap the longest delay, at least {@code base}, at most one day
   */
  public static Backoff of(Duration base, Duration cap, Jitter jitter) {
    Objects.requireNonNull(jitter, "jitter must not be null");
    if (base == null || base.isNegative() || base.isZero()) {
      throw new IllegalArgumentException("base must be positive, was " + base);
    }
    if (cap == null || cap.compareTo(base) < 0 || cap.compareTo(Duration.ofDays(1)) > 0) {
      throw new IllegalArgumentException("cap must be in [base, 1 day], was " + cap);
    }
    return new Backoff(base.toNanos(), cap.toNanos(), jitter);
  }

  public Duration base() {
    return Duration.ofNanos(baseNanos);
  }

  public Duration cap() {
    return Duration.ofNanos(capNanos);
  }

  public Jitter jitter() {
    return jitter;
  }

  /** {@code min(cap, base * 2^attempt)}, saturating. */
  public long exponentialNanos(int attempt) {
    if (attempt < 0) {
      throw new IllegalArgumentException("attempt must be >= 0, was " + attempt);
    }
    if (attempt >= 62 || baseNanos > (capNanos >> attempt)) {
      return capNanos;
    }
    return Math.min(capNanos, baseNanos << attempt);
  }

  /**
   * The delay before retry number {@code attempt} (0 for the first retry).
   *
   * @param previousDelayNanos the delay before the previous retry (decorrelated jitter only; pass 0
   *     before the first retry, which then counts as {@code base})
   * @param random a uniform random number in [0, 1)
   */
  public long delayNanos(int attempt, long previousDelayNanos, double random) {
    if (!(random >= 0.0 && random < 1.0)) {
      throw new IllegalArgumentException("random must be in [0, 1), was " + random);
    }
    switch (jitter) {
      case NONE:
        return exponentialNanos(attempt);
      case FULL:
        return (long) (random * exponentialNanos(attempt));
      case EQUAL: {
        long temp = exponentialNanos(attempt);
        long half = temp / 2;
        return half + (long) (random * (temp - half));
      }
      case DECORRELATED: {
        long previous = Math.max(baseNanos, previousDelayNanos);
        long upper = previous > Long.MAX_VALUE / 3 ? Long.MAX_VALUE : previous * 3;
        long delay = baseNanos + (long) (random * (upper - baseNanos));
        return Math.min(capNanos, delay);
      }
      default:
        throw new IllegalStateException("unknown jitter " + jitter);
    }
  }

  @Override
  public String toString() {
    return "Backoff{base=" + base() + ", cap=" + cap() + ", jitter=" + jitter + "}";
  }
}
