package io.retrybudget.bench.metastable;

/**
 * One trigger on the common schedule: healthy for {@code warmupSeconds}, then the trigger for
 * {@code triggerSeconds}, then healthy again for {@code afterSeconds}. During the trigger the
 * backend's service time is divided by {@code capacityFactor} (0.5: every request takes twice as
 * long, a slow dependency or a GC storm, so capacity halves) and the fleet's rate of first
 * attempts is multiplied by {@code loadFactor}.
 */
record Scenario(String id, int warmupSeconds, int triggerSeconds, double capacityFactor, double loadFactor,
    int afterSeconds) {

  /** Seconds after the trigger that a recovery may start in and still count ({@code 60}). */
  static final int RECOVERY_LIMIT_SECONDS = 60;
  /** Consecutive seconds of goodput at or above 95 % of the offered rate that make a recovery. */
  static final int RECOVERED_SECONDS = 5;

  Scenario {
    if (id == null || !id.matches("[a-z0-9-]{1,40}")) {
      throw new IllegalArgumentException("id must match [a-z0-9-]{1,40}, was " + id);
    }
    if (warmupSeconds < 1 || triggerSeconds < 1 || afterSeconds < 1) {
      throw new IllegalArgumentException("warmupSeconds, triggerSeconds and afterSeconds must be at least 1, were "
          + warmupSeconds + ", " + triggerSeconds + ", " + afterSeconds);
    }
    if (!(capacityFactor > 0 && capacityFactor <= 1)) {
      throw new IllegalArgumentException("capacityFactor must be in (0, 1], was " + capacityFactor);
    }
    if (!(loadFactor >= 1 && loadFactor <= 10)) {
      throw new IllegalArgumentException("loadFactor must be in [1, 10], was " + loadFactor);
    }
  }

  /** Capacity halves for 10 s. */
  static Scenario capacity(int afterSeconds) {
    return new Scenario("capacity", 6, 10, 0.5, 1.0, afterSeconds);
  }

  /** Twice the first attempts for 5 s. */
  static Scenario spike(int afterSeconds) {
    return new Scenario("spike", 6, 5, 1.0, 2.0, afterSeconds);
  }

  /** Both scenarios, observed long enough to see whether a recovery starts within 60 s. */
  static Scenario byId(String id, int afterSeconds) {
    switch (id.trim()) {
      case "capacity":
        return capacity(afterSeconds);
      case "spike":
        return spike(afterSeconds);
      default:
        throw new IllegalArgumentException("scenario must be capacity or spike, was " + id);
    }
  }

  int triggerStart() {
    return warmupSeconds;
  }

  int triggerEnd() {
    return warmupSeconds + triggerSeconds;
  }

  int totalSeconds() {
    return triggerEnd() + afterSeconds;
  }

  private boolean inTrigger(long millis) {
    return millis >= triggerStart() * 1000L && millis < triggerEnd() * 1000L;
  }

  /** The service time of a request that starts {@code millis} after the run began. */
  double serviceMillis(double baseServiceMillis, long millis) {
    return inTrigger(millis) ? baseServiceMillis / capacityFactor : baseServiceMillis;
  }

  /** The rate of first attempts {@code millis} after the run began. */
  double firstRate(double baseRate, long millis) {
    return inTrigger(millis) ? baseRate * loadFactor : baseRate;
  }
}
