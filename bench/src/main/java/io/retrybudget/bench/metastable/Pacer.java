package io.retrybudget.bench.metastable;

/**
 * First attempts due at the rate the schedule sets: asked at any times, it answers how many calls
 * became due since it was last asked (the fractional rest carries over, so no call is lost to
 * rounding). One per arm and process; not thread-safe.
 */
final class Pacer {
  private final Scenario scenario;
  private final double baseRate;
  private long lastMillis;
  private double owed;

  /** @param baseRate first attempts per second outside a spike, for this pacer's share of the fleet */
  Pacer(Scenario scenario, double baseRate) {
    if (!(baseRate >= 0)) {
      throw new IllegalArgumentException("baseRate must not be negative, was " + baseRate);
    }
    this.scenario = scenario;
    this.baseRate = baseRate;
  }

  /** Calls due by {@code millis} (since the run's start) that were not due at the last ask. */
  int due(long millis) {
    if (millis <= lastMillis) {
      return 0;
    }
    owed += scenario.firstRate(baseRate, lastMillis) * (millis - lastMillis) / 1000.0;
    lastMillis = millis;
    int n = (int) Math.floor(owed);
    owed -= n;
    return n;
  }
}
