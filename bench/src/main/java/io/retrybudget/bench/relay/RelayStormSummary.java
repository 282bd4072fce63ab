package io.retrybudget.bench.relay;

import java.util.Arrays;
import java.util.Map;

/**
 * The figures of one {@link RelayStormRun} against issue 27's targets: every outage second's retry
 * ratio (granted retries / first attempts), their mean less the floor's share, Redis's script calls a
 * second, how far its count of first attempts lags, the modelled p99 of a permit decision, the fleet
 * size the clients learned, and for a killed relay how long its clients waited to be answered again.
 */
record RelayStormSummary(int clients, String design, double ratioMin, double ratioMax, double ratioMean,
    double ratioMeanAfterFloor, double callsHealthy, double callsStorm, long callsMax, double lagMedian,
    double lagMax, double p99Millis, double remoteShare, long fleetMin, long fleetMax, long servedAgainMillis,
    long made, long counted, long lost, double cpuSeconds, long tasks, int ceiling) {

  static RelayStormSummary of(RelayStormRun run) {
    RelayStormOptions o = run.options();
    int healthy = o.healthySeconds();
    int outage = o.outageSeconds();
    double[] ratio = new double[outage];
    for (int s = 0; s < outage; s++) {
      long f = run.first[healthy + s];
      ratio[s] = f == 0 ? 0 : run.grants[healthy + s] / (double) f;
    }
    double mean = Arrays.stream(ratio).average().orElse(0);
    double floorShare = o.floor() / (double) (o.clients() * (long) o.firstPerSecond());
    long[] calls = callsPerRecordedSecond(run);
    double healthyCalls = Arrays.stream(calls, 0, healthy).average().orElse(0);
    double stormCalls = Arrays.stream(calls, healthy, healthy + outage).average().orElse(0);
    double[] lags = run.lagSeconds.clone();
    Arrays.sort(lags);
    LatencyModel latency = latency(run, calls);
    long lost = run.lostAtClients() + run.lostAtKilledRelays;
    for (VirtualRelay r : run.relays()) {
      lost += r.core().lostRequests();
    }
    return new RelayStormSummary(o.clients(), o.design(), Arrays.stream(ratio).min().orElse(0),
        Arrays.stream(ratio).max().orElse(0), mean, mean - floorShare, healthyCalls, stormCalls,
        Arrays.stream(calls).max().orElse(0), lags[lags.length / 2], lags[lags.length - 1],
        latency.exceededBy(0.01), latency.remoteShare(), run.fleetLearned[0], run.fleetLearned[1],
        run.servedAgainMillis(), run.made(), run.redis().requestsCounted(), lost, run.cpuSeconds, run.tasksRun(),
        o.maxCallsPerSecond());
  }

  /** Script calls Redis ran in each recorded second. */
  static long[] callsPerRecordedSecond(RelayStormRun run) {
    long[] calls = new long[run.options().seconds()];
    Map<Long, Long> bySecond = run.redis().callsPerSecond();
    long w = run.t0() / 1000;
    for (int s = 0; s < calls.length; s++) {
      calls[s] = bySecond.getOrDefault(w + s, 0L);
    }
    return calls;
  }

  private static LatencyModel latency(RelayStormRun run, long[] redisCalls) {
    LatencyModel m = new LatencyModel(RelayStormRun.CALL_TIMEOUT_MILLIS);
    for (int s = 0; s < redisCalls.length; s++) {
      m.local(run.localDecisions[s]);
      m.remote(run.redisDecisions[s], redisCalls[s], LatencyModel.REDIS_SERVICE_MILLIS);
      for (int r = 0; r < run.relays().length; r++) {
        m.remote(run.relayDecisions[r][s], run.relays()[r].callsPerSecond[s], LatencyModel.RELAY_SERVICE_MILLIS);
      }
    }
    return m;
  }

  boolean ratioInBand() {
    return ratioMin >= 0.03 && ratioMax <= 0.25;
  }

  boolean meanInBand() {
    return ratioMeanAfterFloor >= 0.095 && ratioMeanAfterFloor <= 0.115;
  }

  boolean callsUnderCeiling() {
    return callsMax <= ceiling;
  }

  boolean lagUnderASecond() {
    return lagMax <= 1.0;
  }

  boolean p99UnderAMillisecond() {
    return p99Millis <= 1.0;
  }

  /** No count applied twice: Redis never counts more first attempts than were made and not lost. */
  boolean countedAtMostOnce() {
    return counted + lost <= made;
  }

  static String header() {
    return "| clients | design | outage ratio min-max | mean (after floor) | calls/s healthy | storm (max) | lag median (max) s "
        + "| p99 ms (remote share) | fleet learned | targets | CPU s |\n"
        + "|---:|---|---|---|---:|---:|---|---|---|---|---:|";
  }

  String row() {
    String targets = (ratioInBand() ? "ratio ok" : "RATIO OUT") + ", " + (meanInBand() ? "mean ok" : "MEAN OUT") + ", "
        + (callsUnderCeiling() ? "calls ok" : "CALLS OVER") + ", " + (lagUnderASecond() ? "lag ok" : "LAG OVER") + ", "
        + (p99UnderAMillisecond() ? "p99 ok" : "P99 OVER");
    return String.format("| %,d | %s | %.3f-%.3f | %.4f (%.4f) | %,.0f | %,.0f (%,d) | %.2f (%.2f) | %.3f (%.2f) | %,d-%,d | %s | %.1f |",
        clients, design, ratioMin, ratioMax, ratioMean, ratioMeanAfterFloor, callsHealthy, callsStorm, callsMax,
        lagMedian, lagMax, p99Millis, remoteShare, fleetMin, fleetMax, targets, cpuSeconds);
  }
}
