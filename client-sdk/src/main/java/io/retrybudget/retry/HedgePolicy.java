package io.retrybudget.retry;

import java.time.Duration;
import java.util.Objects;
import java.util.function.LongSupplier;

/**
 * When to send a hedged request ("The Tail at Scale"): after a fixed delay, or adaptively after the
 * chosen percentile (default p95) of the call's own recent latency. At most {@code maxHedges} extra
 * attempts per round (default 1), all within the retry policy's max attempts; every hedge asks the
 * retry budget like a retry does, and a refused hedge is simply not sent.
 *
 * <p>One instance per dependency: an adaptive policy learns that dependency's latency.
 */
public final class HedgePolicy {
  private final Duration fixedDelay;
  private final double percentile;
  private final Duration minDelay;
  private final Duration initialDelay;
  private final int maxHedges;
  private final long minSamples;
  private final LatencyEstimator estimator;
  private final LongSupplier nanoClock;
  private static final long REFRESH_NANOS = 50_000_000L;
  private volatile long cachedDelay = -1;
  private volatile long computedAt;

  private HedgePolicy(Builder b) {
    this.fixedDelay = b.fixedDelay;
    this.percentile = b.percentile;
    this.minDelay = b.minDelay;
    this.initialDelay = b.initialDelay;
    this.maxHedges = b.maxHedges;
    this.minSamples = b.minSamples;
    this.estimator = fixedDelay == null ? new LatencyEstimator(b.memory, b.nanoClock) : null;
    this.nanoClock = b.nanoClock;
  }

  /** Hedge after a fixed delay. */
  public static Builder fixedDelay(Duration delay) {
    if (delay == null || delay.isNegative()) {
      throw new IllegalArgumentException("delay must be zero or positive, was " + delay);
    }
    Builder b = new Builder();
    b.fixedDelay = delay;
    return b;
  }

  /**
   * Hedge after the {@code percentile} (in (0, 1), e.g. 0.95) of recent latency; until enough is
   * known, after {@code initialDelay}.
   */
  public static Builder adaptive(double percentile, Duration initialDelay) {
    if (!(percentile > 0 && percentile < 1)) {
      throw new IllegalArgumentException("percentile must be in (0, 1), was " + percentile);
    }
    if (initialDelay == null || initialDelay.isNegative()) {
      throw new IllegalArgumentException("initialDelay must be zero or positive, was " + initialDelay);
    }
    Builder b = new Builder();
    b.percentile = percentile;
    b.initialDelay = initialDelay;
    return b;
  }

  public int maxHedges() {
    return maxHedges;
  }

  public boolean isAdaptive() {
    return estimator != null;
  }

  /** The delay before the next hedge, in nanoseconds. */
  public long delayNanos() {
    if (estimator == null) {
      return fixedDelay.toNanos();
    }
    // the percentile is recomputed at most every REFRESH_NANOS, not on every call
    long now = nanoClock.getAsLong();
    if (now - computedAt >= REFRESH_NANOS || cachedDelay < 0) {
      long q = estimator.quantileNanos(percentile, minSamples);
      cachedDelay = Math.max(minDelay.toNanos(), q < 0 ? initialDelay.toNanos() : q);
      computedAt = now;
    }
    return cachedDelay;
  }

  /** Teaches an adaptive policy one attempt's latency (successful attempts only). */
  public void recordLatency(long nanos) {
    if (estimator != null) {
      estimator.record(nanos);
    }
  }

  public static final class Builder {
    private Duration fixedDelay;
    private double percentile = 0.95;
    private Duration initialDelay = Duration.ofMillis(50);
    private Duration minDelay = Duration.ZERO;
    private int maxHedges = 1;
    private long minSamples = 100;
    private Duration memory = Duration.ofSeconds(30);
    private LongSupplier nanoClock = System::nanoTime;

    private Builder() {}

    /** Extra attempts per round, in [1, 10] (default 1). */
    public Builder maxHedges(int hedges) {
      if (hedges < 1 || hedges > 10) {
        throw new IllegalArgumentException("maxHedges must be in [1, 10], was " + hedges);
      }
      this.maxHedges = hedges;
      return this;
    }

    /** Never hedge sooner than this (adaptive only; default 0). */
    public Builder minDelay(Duration delay) {
      if (delay == null || delay.isNegative()) {
        throw new IllegalArgumentException("minDelay must be zero or positive, was " + delay);
      }
      this.minDelay = delay;
      return this;
    }

    /** Samples needed before the percentile is trusted (adaptive only; default 100). */
    public Builder minSamples(long samples) {
      if (samples < 1) {
        throw new IllegalArgumentException("minSamples must be positive, was " + samples);
      }
      this.minSamples = samples;
      return this;
    }

    /** How long latency is remembered: between one and two of these (adaptive only; default 30 s). */
    public Builder memory(Duration period) {
      if (period == null || period.isNegative() || period.isZero()) {
        throw new IllegalArgumentException("memory must be positive, was " + period);
      }
      this.memory = period;
      return this;
    }

    public Builder nanoClock(LongSupplier clock) {
      this.nanoClock = Objects.requireNonNull(clock, "nanoClock must not be null");
      return this;
    }

    public HedgePolicy build() {
      return new HedgePolicy(this);
    }
  }
}
