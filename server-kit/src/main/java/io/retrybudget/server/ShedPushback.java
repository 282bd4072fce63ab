package io.retrybudget.server;

import java.time.Duration;

/**
 * The {@code X-Retry-Pushback-Ms} of a shed answer, spread so that the clients a queue sheds at
 * the same moment do not all come back at the same moment. The rule:
 *
 * <pre>
 *   base     = clamp(drain time, min, max)     drain time = the queue's estimate of how long the
 *                                              work it holds (running and queued) takes to finish
 *   width    = floor(spread * base)
 *   pushback = base + floor(u * (width + 1)),   u uniform in [0, 1), injected
 * </pre>
 *
 * so a pushback is uniform over the whole milliseconds of {@code [base, base + width]}: nobody
 * comes back before the queue has drained, and the retries of one burst of sheds arrive spread
 * over the next {@code spread} drain times instead of as one wall. A pure function of its inputs.
 */
public final class ShedPushback {
  private final long minMillis;
  private final long maxMillis;
  private final double spread;

  private ShedPushback(long minMillis, long maxMillis, double spread) {
    this.minMillis = minMillis;
    this.maxMillis = maxMillis;
    this.spread = spread;
  }

  /** The default: base in [100 ms, 10 s], spread 1 (uniform over one more drain time). */
  public static ShedPushback defaults() {
    return of(Duration.ofMillis(100), Duration.ofSeconds(10), 1.0);
  }

  /**
   * @param min the least base, positive (a shed request waits at least this)
   * @param max the largest base, at least {@code min}, at most one hour
   * @param spread how many bases the spread covers, in [0, 10]; 0 sends {@code base} to everyone
   */
  public static ShedPushback of(Duration min, Duration max, double spread) {
    if (min == null || min.isNegative() || min.isZero()) {
      throw new IllegalArgumentException("pushback min must be positive, was " + min);
    }
    if (max == null || max.compareTo(min) < 0 || max.compareTo(Duration.ofHours(1)) > 0) {
      throw new IllegalArgumentException("pushback max must be in [min, 1 h] (min " + min + "), was " + max);
    }
    if (!(spread >= 0.0 && spread <= 10.0)) {
      throw new IllegalArgumentException("pushback spread must be in [0, 10], was " + spread);
    }
    return new ShedPushback(min.toMillis(), max.toMillis(), spread);
  }

  /** The base for a drain time: whole milliseconds rounded up, clamped to [min, max]. */
  public long baseMillis(long drainNanos) {
    long ms = drainNanos <= 0 ? 0 : drainNanos / 1_000_000 + (drainNanos % 1_000_000 == 0 ? 0 : 1); // no overflow
    return Math.max(minMillis, Math.min(maxMillis, ms));
  }

  /**
   * The pushback for a drain time and a uniform {@code u} in [0, 1): in
   * {@code [base, base + floor(spread * base)]}.
   */
  public long millis(long drainNanos, double u) {
    if (!(u >= 0.0 && u < 1.0)) {
      throw new IllegalArgumentException("u must be in [0, 1), was " + u);
    }
    long base = baseMillis(drainNanos);
    long width = (long) Math.floor(spread * base);
    return base + Math.min(width, (long) Math.floor(u * (width + 1)));
  }

  public Duration min() {
    return Duration.ofMillis(minMillis);
  }

  public Duration max() {
    return Duration.ofMillis(maxMillis);
  }

  public double spread() {
    return spread;
  }

  @Override
  public String toString() {
    return "ShedPushback[min=" + minMillis + "ms, max=" + maxMillis + "ms, spread=" + spread + "]";
  }
}
