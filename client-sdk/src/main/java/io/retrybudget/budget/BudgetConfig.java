package io.retrybudget.budget;

import io.retrybudget.budget.internal.BudgetArithmetic;
import java.util.Objects;

/**
 * A budget's rule: extra attempts are granted from a paced balance into which every first attempt
 * deposits {@code ratio} permits and the floor {@code minRetriesPerSecond} permits a second, capped at
 * one second of those deposits at the window's rate (lua/README.md; {@code
 * internal.PaceArithmetic}). The window ({@code windowSeconds}, ten buckets) gives the rate and the
 * counts; {@link #allowance} is the window's total, {@code floor(ratio * requests) +
 * minRetriesPerSecond * windowSeconds}. Immutable; build with {@link
 * #builder(String)}. For a Redis budget these values only seed Redis when it has no configuration
 * yet: what is stored in Redis is authoritative for the whole fleet.
 */
public final class BudgetConfig {
  public static final double DEFAULT_RATIO = 0.10;
  public static final int DEFAULT_WINDOW_SECONDS = 10;
  public static final int DEFAULT_MIN_RETRIES_PER_SECOND = 10;
  public static final int MAX_WINDOW_SECONDS = 3600;
  public static final int MAX_MIN_RETRIES_PER_SECOND = 1_000_000;
  /** Script calls a second that one budget's clients aim to stay under together, healthy. */
  public static final int DEFAULT_MAX_CALLS_PER_SECOND = 2_000;
  public static final int MAX_MAX_CALLS_PER_SECOND = 1_000_000;

  private final String name;
  private final long ratioPpm;
  private final int windowSeconds;
  private final int minRetriesPerSecond;
  private final BudgetMode mode;
  private final int maxCallsPerSecond;

  private BudgetConfig(Builder b) {
    this.name = b.name;
    this.ratioPpm = b.ratioPpm;
    this.windowSeconds = b.windowSeconds;
    this.minRetriesPerSecond = b.minRetriesPerSecond;
    this.mode = b.mode;
    this.maxCallsPerSecond = b.maxCallsPerSecond;
  }

  public static Builder builder(String name) {
    return new Builder(name);
  }

  /** A builder holding this configuration's values, for a changed copy. */
  public Builder toBuilder() {
    return new Builder(name)
        .ratioPpm(ratioPpm)
        .windowSeconds(windowSeconds)
        .minRetriesPerSecond(minRetriesPerSecond)
        .mode(mode)
        .maxCallsPerSecond(maxCallsPerSecond);
  }

  public String name() {
    return name;
  }

  public double ratio() {
    return ratioPpm / 1_000_000.0;
  }

  /** The ratio in parts per million, as the scripts hold it. */
  public long ratioPpm() {
    return ratioPpm;
  }

  public int windowSeconds() {
    return windowSeconds;
  }

  public int minRetriesPerSecond() {
    return minRetriesPerSecond;
  }

  public BudgetMode mode() {
    return mode;
  }

  /**
   * The ceiling on script calls a second for this budget's whole fleet (healthy; a storm may add
   * half of it for permit requests): clients stretch their flushes and pace their permit requests by
   * the number of clients Redis counts. Stored in Redis with the rest of the configuration.
   */
  public int maxCallsPerSecond() {
    return maxCallsPerSecond;
  }

  /** Retries this budget allows over a window that saw {@code requests} first attempts. */
  public long allowance(long requests) {
    return BudgetArithmetic.allowance(ratioPpm, requests, minRetriesPerSecond, windowSeconds);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof BudgetConfig c
        && c.name.equals(name)
        && c.ratioPpm == ratioPpm
        && c.windowSeconds == windowSeconds
        && c.minRetriesPerSecond == minRetriesPerSecond
        && c.mode == mode
        && c.maxCallsPerSecond == maxCallsPerSecond;
  }

  @Override
  public int hashCode() {
    return Objects.hash(name, ratioPpm, windowSeconds, minRetriesPerSecond, mode, maxCallsPerSecond);
  }

  @Override
  public String toString() {
    return "BudgetConfig{name=" + name + ", ratio=" + ratio() + ", windowSeconds=" + windowSeconds
        + ", minRetriesPerSecond=" + minRetriesPerSecond + ", mode=" + mode.wireName()
        + ", maxCallsPerSecond=" + maxCallsPerSecond + "}";
  }

  /** Validates every value as it is set, naming the field that is wrong. */
  public static final class Builder {
    private final String name;
    private long ratioPpm = BudgetArithmetic.ratioToPpm(DEFAULT_RATIO);
    private int windowSeconds = DEFAULT_WINDOW_SECONDS;
    private int minRetriesPerSecond = DEFAULT_MIN_RETRIES_PER_SECOND;
    private BudgetMode mode = BudgetMode.ENFORCE;
    private int maxCallsPerSecond = DEFAULT_MAX_CALLS_PER_SECOND;

    private Builder(String name) {
      this.name = BudgetNames.requireValid(name);
    }

    /** The share of first attempts that may be retried, in (0, 1]. */
    public Builder ratio(double ratio) {
      if (!(ratio > 0.0 && ratio <= 1.0)) {
        throw new IllegalArgumentException("ratio must be in (0, 1], was " + ratio);
      }
      long ppm = BudgetArithmetic.ratioToPpm(ratio);
      if (ppm < 1) {
        throw new IllegalArgumentException("ratio must be at least 0.000001, was " + ratio);
      }
      this.ratioPpm = ppm;
      return this;
    }

    /** The ratio in parts per million, in [1, 1000000]. */
    public Builder ratioPpm(long ppm) {
      if (ppm < 1 || ppm > 1_000_000) {
        throw new IllegalArgumentException("ratio_ppm must be in [1, 1000000], was " + ppm);
      }
      this.ratioPpm = ppm;
      return this;
    }

    public Builder windowSeconds(int seconds) {
      if (seconds < 1 || seconds > MAX_WINDOW_SECONDS) {
        throw new IllegalArgumentException(
            "window_seconds must be in [1, " + MAX_WINDOW_SECONDS + "], was " + seconds);
      }
      this.windowSeconds = seconds;
      return this;
    }

    /** Retries per second allowed whatever the request rate: a floor for the whole fleet. */
    public Builder minRetriesPerSecond(int perSecond) {
      if (perSecond < 0 || perSecond > MAX_MIN_RETRIES_PER_SECOND) {
        throw new IllegalArgumentException("min_retries_per_second must be in [0, "
            + MAX_MIN_RETRIES_PER_SECOND + "], was " + perSecond);
      }
      this.minRetriesPerSecond = perSecond;
      return this;
    }

    public Builder mode(BudgetMode mode) {
      this.mode = Objects.requireNonNull(mode, "mode must not be null");
      return this;
    }

    /** Script calls a second the budget's fleet aims to stay under, in [1, 1000000] (default 2000). */
    public Builder maxCallsPerSecond(int perSecond) {
      if (perSecond < 1 || perSecond > MAX_MAX_CALLS_PER_SECOND) {
        throw new IllegalArgumentException("max_calls_per_second must be in [1, " + MAX_MAX_CALLS_PER_SECOND
            + "], was " + perSecond);
      }
      this.maxCallsPerSecond = perSecond;
      return this;
    }

    public BudgetConfig build() {
      return new BudgetConfig(this);
    }
  }
}
