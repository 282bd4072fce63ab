package io.retrybudget.bench.storm;

import java.util.Locale;

/**
 * The figures of one storm run computed from its per-second series (pure arithmetic, no I/O): the
 * per-second retry ratio over the outage, its mean, and what the budget cost Redis healthy and in
 * the storm. Seconds are seconds since the start of the run; the outage is {@code [outageFrom,
 * outageTo)}.
 */
final class StormStats {
  /**
   * Per-second series of one run, all of the same length. {@code first} and {@code retries} are
   * counted by the second they were sent in; {@code scriptCalls} and {@code redisCpuMicros} are
   * rates per second over Redis sampling intervals that last {@code intervalMicros} each (about one
   * second; longer or shorter when the sampler was starved of CPU).
   */
  record Series(long[] first, long[] retries, long[] scriptCalls, long[] redisCpuMicros, long[] intervalMicros) {
    Series {
      int n = first.length;
      if (retries.length != n || scriptCalls.length != n || redisCpuMicros.length != n || intervalMicros.length != n) {
        throw new IllegalArgumentException("series of different lengths: first " + n + ", retries " + retries.length
            + ", scriptCalls " + scriptCalls.length + ", redisCpuMicros " + redisCpuMicros.length + ", intervalMicros "
            + intervalMicros.length);
      }
    }

    /** Sampling intervals of one second each. */
    Series(long[] first, long[] retries, long[] scriptCalls, long[] redisCpuMicros) {
      this(first, retries, scriptCalls, redisCpuMicros, ones(first.length));
    }

    private static long[] ones(int n) {
      long[] a = new long[n];
      java.util.Arrays.fill(a, 1_000_000L);
      return a;
    }

    int seconds() {
      return first.length;
    }
  }

  /**
   * The summary of one run. Ratios are retries sent / first attempts sent. {@code secondsWithout}
   * counts outage seconds that sent no first attempt (left out of min and max).
   */
  record Row(int clients, double minRatio, double maxRatio, int minSecond, int maxSecond, double meanRatio,
      double meanAfterFloor, long outageFirst, long outageRetries, int secondsWithout,
      double scriptCallsHealthy, double scriptCallsStorm, long scriptCallsStormMax,
      double redisCpuHealthy, double redisCpuStorm, double redisCpuStormMax,
      int secondsInBand, int outageSeconds, int secondsOffPace) {

    /** {@code | clients | per-second ratio min–max | mean ratio | script calls/s healthy | storm | Redis CPU |}. */
    String markdown() {
      return String.format(Locale.ROOT, "| %,d | %.2f–%.2f | %.3f (%.3f after the floor) | %,.0f | %,.0f (max %,d) | %.0f %% healthy, %.0f %% storm (max %.0f %%) |",
          clients, minRatio, maxRatio, meanRatio, meanAfterFloor, scriptCallsHealthy, scriptCallsStorm,
          scriptCallsStormMax, redisCpuHealthy, redisCpuStorm, redisCpuStormMax);
    }
  }

  static final String HEADER = "| clients | per-second ratio min–max | mean ratio | script calls/s healthy | storm | Redis CPU |\n"
      + "|---:|---|---|---:|---:|---|";

  /**
   * A second whose first attempts are further than this from the offered rate shows a harness that
   * did not keep pace (its threads starved), not the budget.
   */
  static final double PACE_TOLERANCE = 0.10;

  /** The paced target of issue 17 for every outage second. */
  static final double BAND_LOW = 0.03;
  static final double BAND_HIGH = 0.25;

  private StormStats() {}

  /**
   * @param floorPerSecond the budget's fleet-wide floor (min retries per second): its share,
   *     {@code floor x outage seconds} retries, is taken out of the mean for {@code meanAfterFloor}
   * @param healthyFrom the first healthy second counted for the healthy cost (1 skips the
   *     start-up second, in which every client makes its first call)
   */
  static Row row(int clients, Series s, int healthyFrom, int outageFrom, int outageTo, int floorPerSecond) {
    return row(clients, s, healthyFrom, outageFrom, outageTo, floorPerSecond, Double.NaN);
  }

  /**
   * As above; {@code offeredPerSecond} (first attempts per second the fleet should send; NaN: not
   * checked) counts the seconds from {@code healthyFrom} to the outage's end whose first attempts
   * missed it by more than {@link #PACE_TOLERANCE}.
   */
  static Row row(int clients, Series s, int healthyFrom, int outageFrom, int outageTo, int floorPerSecond, double offeredPerSecond) {
    if (outageFrom < 0 || outageTo <= outageFrom || outageTo > s.seconds()) {
      throw new IllegalArgumentException("outage [" + outageFrom + ", " + outageTo + ") outside the " + s.seconds() + " s series");
    }
    if (healthyFrom < 0 || healthyFrom > outageFrom) {
      throw new IllegalArgumentException("healthyFrom " + healthyFrom + " not in [0, " + outageFrom + "]");
    }
    double min = Double.POSITIVE_INFINITY;
    double max = Double.NEGATIVE_INFINITY;
    int minSecond = -1;
    int maxSecond = -1;
    int without = 0;
    int inBand = 0;
    long first = 0;
    long retries = 0;
    for (int t = outageFrom; t < outageTo; t++) {
      first += s.first()[t];
      retries += s.retries()[t];
      if (s.first()[t] == 0) {
        without++;
        continue;
      }
      double r = perSecondRatio(s.first()[t], s.retries()[t]);
      if (r >= BAND_LOW && r <= BAND_HIGH) {
        inBand++;
      }
      if (r < min) {
        min = r;
        minSecond = t;
      }
      if (r > max) {
        max = r;
        maxSecond = t;
      }
    }
    int outageSeconds = outageTo - outageFrom;
    double mean = first == 0 ? Double.NaN : (double) retries / first;
    double afterFloor = first == 0 ? Double.NaN
        : Math.max(0, retries - (double) floorPerSecond * outageSeconds) / first;
    if (minSecond < 0) {
      min = Double.NaN;
      max = Double.NaN;
    }
    int offPace = 0;
    if (!Double.isNaN(offeredPerSecond)) {
      for (int t = healthyFrom; t < outageTo; t++) {
        if (Math.abs(s.first()[t] - offeredPerSecond) > PACE_TOLERANCE * offeredPerSecond) {
          offPace++;
        }
      }
    }
    int healthyTo = outageFrom;
    if (healthyFrom == healthyTo && healthyTo > 0) {
      healthyFrom = healthyTo - 1;
    }
    return new Row(clients, min, max, minSecond, maxSecond, mean, afterFloor, first, retries, without,
        mean(s.scriptCalls(), s.intervalMicros(), healthyFrom, healthyTo), mean(s.scriptCalls(), s.intervalMicros(), outageFrom, outageTo),
        max(s.scriptCalls(), s.intervalMicros(), outageFrom, outageTo),
        mean(s.redisCpuMicros(), s.intervalMicros(), healthyFrom, healthyTo) / 10_000.0,
        mean(s.redisCpuMicros(), s.intervalMicros(), outageFrom, outageTo) / 10_000.0,
        max(s.redisCpuMicros(), s.intervalMicros(), outageFrom, outageTo) / 10_000.0, inBand, outageSeconds, offPace);
  }

  /** Retries sent / first attempts sent in one second; NaN when no first attempt was sent. */
  static double perSecondRatio(long first, long retries) {
    return first == 0 ? Double.NaN : (double) retries / first;
  }

  /** The mean rate over the intervals: what they counted in all, over how long they lasted. */
  private static double mean(long[] rate, long[] intervalMicros, int from, int to) {
    double counted = 0;
    double micros = 0;
    for (int i = from; i < to; i++) {
      counted += (double) rate[i] * intervalMicros[i];
      micros += intervalMicros[i];
    }
    return micros == 0 ? Double.NaN : counted / micros;
  }

  /** The highest rate of an interval of at least half a second (a shorter one says little). */
  private static long max(long[] rate, long[] intervalMicros, int from, int to) {
    long m = 0;
    for (int i = from; i < to; i++) {
      if (intervalMicros[i] >= 500_000) {
        m = Math.max(m, rate[i]);
      }
    }
    return m;
  }
}
