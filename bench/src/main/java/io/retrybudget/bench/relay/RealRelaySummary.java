package io.retrybudget.bench.relay;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;

/**
 * The figures of one {@link RealRelayRun} against issue 27's targets: every outage second's retry ratio
 * (retries granted / first attempts issued), their mean less the floor's share, Redis's script calls a
 * second, how far its count lagged, the permit decisions' p50 and p99 as the clients measured them, what
 * the relays and Redis spent (CPU per answer, per script call), and whether the harness kept pace.
 * The lag is Redis's count against the fleet's first attempts, so counts that never arrive (lost with a
 * call that failed or timed out: never sent twice) stay in it for the rest of the run; the first
 * attempts Redis never counted, read once every client has closed and flushed, tell that part apart
 * ({@code neverCounted}: as seconds of the fleet's rate, a floor under every second's lag).
 */
record RealRelaySummary(String design, int clients, int relays, double ratioMin, double ratioMax, double ratioMean,
    double ratioMeanAfterFloor, double callsHealthy, double callsStorm, long callsMax, double lagMedian, double lagMax,
    long decisions, long p50Micros, long p99Micros, double fallbackShare, long errors, double clientCallsPerSecond,
    double relayMicrosPerAnswer, double relayCpuShare, double redisMicrosPerCall, double clientCpuPerSecondMs,
    double processesCpuPerSecondMs,
    double paceMin, double paceMax, long lateMaxMs, long degradedMax, String loadBefore, String loadAfter,
    long neverCounted, long made) {

  /** Every second's first attempts issued within this share of those scheduled: the harness kept pace. */
  static final double PACE_TOLERANCE = 0.02;
  static final int CEILING = 2_000;
  static final int FLOOR = 10;

  static RealRelaySummary of(RealRelayRun r) {
    RealRelayOptions o = r.options();
    int healthy = o.healthySeconds();
    int outage = o.outageSeconds();
    int seconds = o.seconds();
    double[] ratio = new double[outage];
    LatencyHistogram stormLatency = new LatencyHistogram();
    long fallback = 0;
    long decided = 0;
    long errors = 0;
    for (int s = healthy; s < healthy + outage; s++) {
      ratio[s - healthy] = r.issued[s] == 0 ? 0 : r.grants[s] / (double) r.issued[s];
      for (int b = 0; b < LatencyHistogram.BUCKETS; b++) {
        stormLatency.add(b, r.latency[s].count(b));
      }
      fallback += r.fallback[s];
      decided += r.grants[s] + r.denied[s];
      errors += r.errors[s];
    }
    double mean = Arrays.stream(ratio).average().orElse(0);
    double floorShare = FLOOR / (double) (o.clients() * (long) RelayClientMain.FIRST_PER_SECOND);
    double[] lags = r.lagSeconds.clone();
    Arrays.sort(lags);
    long clientCalls = Arrays.stream(r.clientCalls).sum();
    long relayCpu = Arrays.stream(r.relayCpuMs).sum();
    long redisCalls = Arrays.stream(r.redisCalls).sum();
    boolean relay = r.design().equals("relay");
    double paceMin = Double.MAX_VALUE;
    double paceMax = 0;
    for (int s = 0; s < seconds; s++) {
      double p = r.scheduled[s] == 0 ? 1 : r.issued[s] / (double) r.scheduled[s];
      paceMin = Math.min(paceMin, p);
      paceMax = Math.max(paceMax, p);
    }
    return new RealRelaySummary(r.design(), o.clients(), relay ? o.relays() : 0, Arrays.stream(ratio).min().orElse(0),
        Arrays.stream(ratio).max().orElse(0), mean, mean - floorShare,
        Arrays.stream(r.redisCalls, 0, healthy).average().orElse(0),
        Arrays.stream(r.redisCalls, healthy, healthy + outage).average().orElse(0),
        Arrays.stream(r.redisCalls).max().orElse(0), lags[lags.length / 2], lags[lags.length - 1],
        stormLatency.total(), stormLatency.percentile(0.5), stormLatency.percentile(0.99),
        decided == 0 ? 0 : fallback / (double) decided, errors, clientCalls / (double) seconds,
        relay && clientCalls > 0 ? relayCpu * 1000.0 / clientCalls : 0,
        relay ? relayCpu / (seconds * 1000.0 * o.relays()) : 0,
        redisCalls == 0 ? 0 : Arrays.stream(r.redisCpuMs).sum() * 1000.0 / redisCalls,
        Arrays.stream(r.clientCpuMs).sum() / (double) seconds,
        (Arrays.stream(r.clientCpuMs).sum() + relayCpu + Arrays.stream(r.redisCpuMs).sum()) / (double) seconds,
        paceMin, paceMax,
        Arrays.stream(r.lateMaxMs).max().orElse(0), Arrays.stream(r.degraded).max().orElse(0), r.loadBefore,
        r.loadAfter, Math.max(0, r.madeTotal - r.countedAtEnd), r.madeTotal);
  }

  boolean ratioInBand() {
    return ratioMin >= 0.03 && ratioMax <= 0.25;
  }

  boolean meanInBand() {
    return ratioMeanAfterFloor >= 0.095 && ratioMeanAfterFloor <= 0.115;
  }

  boolean callsUnderCeiling() {
    return callsMax <= CEILING;
  }

  boolean lagUnderASecond() {
    return lagMax <= 1.0;
  }

  /**
   * Seconds of lag that are first attempts Redis never counted: the fleet makes them at a constant rate
   * (2 a second a client, the storm's retries aside), so a deficit of D is D / rate seconds of lag in
   * every second after it was lost; lost in the warm-up (where a run that falls behind loses them), it is
   * the same in every recorded second, and the lag less it is how long a count takes to arrive.
   */
  double neverCountedSeconds() {
    return neverCounted / (double) Math.max(1, clients * (long) RelayClientMain.FIRST_PER_SECOND);
  }

  /** The lag that is delay: the measured lag less {@link #neverCountedSeconds}, at least 0. */
  boolean delayUnderASecond() {
    return lagMax - neverCountedSeconds() <= 1.0;
  }

  boolean p99UnderAMillisecond() {
    return p99Micros <= 1_000;
  }

  /** At most 1 % of the outage's decisions came from the SDK's fallback: the figures are the tier's. */
  boolean decidedByTheTier() {
    return fallbackShare <= 0.01;
  }

  boolean keptPace() {
    return paceMin >= 1 - PACE_TOLERANCE && paceMax <= 1 + PACE_TOLERANCE;
  }

  String label() {
    return relays == 0 ? "direct" : relays + " relays";
  }

  static String header() {
    return "| clients | design | outage ratio min-max | mean (after floor) | Redis calls/s healthy | storm (max) "
        + "| lag median (max) s | decision p50 / p99 ms | targets | harness kept pace |\n"
        + "|---:|---|---|---|---:|---:|---|---|---|---|";
  }

  String row() {
    String targets = (ratioInBand() ? "ratio ok" : "RATIO OUT") + ", " + (meanInBand() ? "mean ok" : "MEAN OUT") + ", "
        + (callsUnderCeiling() ? "calls ok" : "CALLS OVER") + ", " + (lagUnderASecond() ? "lag ok" : "LAG OVER"
        + (neverCounted > 0 ? String.format(Locale.ROOT, " (%s less the %.2f s never counted)",
            delayUnderASecond() ? "ok" : "over", neverCountedSeconds()) : "")) + ", "
        + (p99UnderAMillisecond() ? "p99 ok" : "P99 OVER")
        + (decidedByTheTier() ? "" : String.format(Locale.ROOT, ", FALLBACK decided %.0f %%", fallbackShare * 100));
    String pace = String.format(Locale.ROOT, "%s (issued %.3f-%.3f of scheduled, a send late by %d ms at most)",
        keptPace() ? "yes" : "NO", paceMin, paceMax, lateMaxMs);
    return String.format(Locale.ROOT, "| %,d | %s | %.3f-%.3f | %.4f (%.4f) | %,.0f | %,.0f (%,d) | %.2f (%.2f) | %.3f / %.3f | %s | %s |",
        clients, label(), ratioMin, ratioMax, ratioMean, ratioMeanAfterFloor, callsHealthy, callsStorm, callsMax,
        lagMedian, lagMax, p50Micros / 1000.0, p99Micros / 1000.0, targets, pace);
  }

  static String costHeader() {
    return "| design | decisions in the outage (fallback share, errors) | calls/s to Redis or relays | relay CPU per answer "
        + "| relay CPU (share of a core, each) | Redis CPU per script call | client JVMs' CPU ms/s | all its processes' CPU ms/s "
        + "(of " + Runtime.getRuntime().availableProcessors() * 1000 + ") | most budgets degraded | load before / after "
        + "| first attempts never counted (of made; as seconds of the fleet's rate) |\n"
        + "|---|---|---:|---|---|---|---:|---:|---:|---|---|";
  }

  String costRow() {
    return String.format(Locale.ROOT, "| %s | %,d (%.3f, %d) | %,.0f | %s | %s | %.1f µs | %,.0f | %,.0f | %d | %s / %s "
        + "| %,d (of %,d; %.2f s) |", label(),
        decisions, fallbackShare, errors, clientCallsPerSecond,
        relays == 0 ? "-" : String.format(Locale.ROOT, "%.1f µs", relayMicrosPerAnswer),
        relays == 0 ? "-" : String.format(Locale.ROOT, "%.2f", relayCpuShare), redisMicrosPerCall, clientCpuPerSecondMs,
        processesCpuPerSecondMs, degradedMax, loadBefore, loadAfter, neverCounted, made,
        neverCountedSeconds());
  }

  /** One row a recorded second: what the clients did, what Redis and the relays did. */
  static void writeCsv(Path file, RealRelayRun r) throws IOException {
    try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(file))) {
      w.println("second,scheduled,first_attempts,late_max_ms,asks,retries_granted,ratio,denied,fallback,redis_calls,"
          + "lag_s,client_calls,p50_us,p99_us,relay_cpu_ms,redis_cpu_ms,client_cpu_ms,degraded,waited");
      for (int s = 0; s < r.issued.length; s++) {
        w.printf(Locale.ROOT, "%d,%d,%d,%d,%d,%d,%.4f,%d,%d,%d,%.3f,%d,%d,%d,%d,%d,%d,%d,%d%n", s, r.scheduled[s], r.issued[s],
            r.lateMaxMs[s], r.asks[s], r.grants[s], r.issued[s] == 0 ? 0.0 : r.grants[s] / (double) r.issued[s],
            r.denied[s], r.fallback[s], r.redisCalls[s], r.lagSeconds[s], r.clientCalls[s],
            r.latency[s].percentile(0.5), r.latency[s].percentile(0.99), r.relayCpuMs[s], r.redisCpuMs[s],
            r.clientCpuMs[s], r.degraded[s], r.waited[s]);
      }
    }
  }
}
