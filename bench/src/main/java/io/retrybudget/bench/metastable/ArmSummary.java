package io.retrybudget.bench.metastable;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * One arm's figures for one scenario, from its per-second tables.
 *
 * @param recoverySeconds  seconds from the trigger's end to the first of {@value Scenario#RECOVERED_SECONDS}
 *     consecutive seconds whose goodput is at least 95 % of the first attempts offered; -1 when no
 *     such run of seconds starts within the observed seconds
 * @param triggerGoodputShare goodput during the trigger over what the backend could serve in it
 *     (the reduced capacity)
 * @param triggerAmplification attempts sent during the trigger over first attempts sent in it
 * @param afterAmplification   the same over the seconds after the trigger
 * @param wastedShare      requests served after their caller gave up, over requests served, from
 *     the trigger's start to the run's end
 * @param p50Millis        median latency of successful calls over the whole run (-1: none)
 * @param p99Millis        99th percentile of the same
 * @param redisCallsPerSecond budget calls Redis served per second, mean over the run
 */
record ArmSummary(Arm arm, int recoverySeconds, double triggerGoodputShare, double triggerAmplification,
    double afterAmplification, double wastedShare, int p50Millis, int p99Millis, double redisCallsPerSecond) {

  /** Goodput over offered that counts a second as recovered. */
  static final double RECOVERED_SHARE = 0.95;

  boolean recoveredWithin(int seconds) {
    return recoverySeconds >= 0 && recoverySeconds <= seconds;
  }

  /**
   * The fleet budget's targets it misses (recovery within 2 s, amplification in the trigger at
   * most 1.15), in words; empty when it meets them.
   */
  List<String> fleetMisses() {
    List<String> m = new ArrayList<>();
    if (!recoveredWithin(2)) {
      m.add("recovery " + recoverySeconds + " s > 2 s");
    }
    if (triggerAmplification > 1.15) {
      m.add(String.format(Locale.ROOT, "amplification in the trigger %.3f > 1.15", triggerAmplification));
    }
    return m;
  }

  /**
   * The targets of the fleet budget with the server half it misses, in words; empty when it meets
   * them: goodput in the trigger at least 90 % of the reduced capacity, wasted work at most 5 %,
   * recovery within 1 s, p99 of successes at most twice the attempt timeout T.
   */
  List<String> serverHalfMisses(Params p) {
    List<String> m = new ArrayList<>();
    if (triggerGoodputShare < 0.90) {
      m.add(String.format(Locale.ROOT, "goodput in the trigger %.0f %% < 90 %%", 100 * triggerGoodputShare));
    }
    if (wastedShare > 0.05) {
      m.add(String.format(Locale.ROOT, "wasted %.1f %% > 5 %%", 100 * wastedShare));
    }
    if (!recoveredWithin(1)) {
      m.add("recovery " + recoverySeconds + " s > 1 s");
    }
    if (p99Millis < 0 || p99Millis > 2L * p.attemptTimeoutMillis()) {
      m.add("p99 " + p99Millis + " ms > 2 T = " + 2 * p.attemptTimeoutMillis() + " ms");
    }
    return m;
  }

  static ArmSummary of(Arm arm, Scenario sc, Params p, PerSecond calls, PerSecond server, long[] redisCalls) {
    int seconds = Math.min(calls.seconds(), server.seconds());
    double reduced = p.capacityPerSecond() * sc.capacityFactor() * sc.triggerSeconds();
    long trigFirst = 0;
    long trigRetries = 0;
    long trigGood = 0;
    for (int s = sc.triggerStart(); s < sc.triggerEnd(); s++) {
      trigFirst += calls.get(s, "first");
      trigRetries += calls.get(s, "retries");
      trigGood += calls.get(s, "goodput");
    }
    long afterFirst = 0;
    long afterRetries = 0;
    for (int s = sc.triggerEnd(); s < seconds; s++) {
      afterFirst += calls.get(s, "first");
      afterRetries += calls.get(s, "retries");
    }
    long processed = 0;
    long wasted = 0;
    for (int s = sc.triggerStart(); s < seconds; s++) {
      processed += server.get(s, "processed");
      wasted += server.get(s, "wasted");
    }
    PerSecond all = new PerSecond(1, CallStats.COLUMNS);
    for (int s = 0; s < seconds; s++) {
      for (int l : calls.latencies(s)) {
        all.latency(0, l);
      }
    }
    int[] lat = all.latencies(0);
    double redis = 0;
    if (redisCalls != null && redisCalls.length > 0) {
      long sum = 0;
      for (long c : redisCalls) {
        sum += c;
      }
      redis = (double) sum / redisCalls.length;
    }
    return new ArmSummary(arm, recoverySeconds(sc, calls), trigGood / reduced,
        ratio(trigFirst + trigRetries, trigFirst), ratio(afterFirst + afterRetries, afterFirst), ratio(wasted, processed),
        PerSecond.quantile(lat, 0.50), PerSecond.quantile(lat, 0.99), redis);
  }

  private static double ratio(long a, long b) {
    return b == 0 ? 0 : (double) a / b;
  }

  /** A second is healthy when its goodput is at least 95 % of the first attempts offered in it. */
  static boolean healthy(PerSecond calls, int second) {
    long offered = calls.get(second, "first");
    return offered > 0 && calls.get(second, "goodput") >= RECOVERED_SHARE * offered;
  }

  /** See {@link #recoverySeconds()}. */
  static int recoverySeconds(Scenario sc, PerSecond calls) {
    for (int start = sc.triggerEnd(); start + Scenario.RECOVERED_SECONDS <= calls.seconds(); start++) {
      boolean ok = true;
      for (int s = start; s < start + Scenario.RECOVERED_SECONDS && ok; s++) {
        ok = healthy(calls, s);
      }
      if (ok) {
        return start - sc.triggerEnd();
      }
    }
    return -1;
  }
}
