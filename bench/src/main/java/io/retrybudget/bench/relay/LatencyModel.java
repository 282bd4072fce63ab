package io.retrybudget.bench.relay;

import java.util.ArrayList;
import java.util.List;

/**
 * A permit decision's latency, modelled (the run is on fake time, so it has none of its own): a
 * decision made from what the client holds (a lease, a reused refusal, a sampled-out ask, the
 * fallback) costs {@link #LOCAL_MILLIS}; one that needs a call costs a round trip plus the time in the
 * server's queue, an M/M/1 queue at that second's load: {@code rtt + Exp(mean = service / (1 - rho))},
 * {@code rho = calls a second * service}. A server at {@code rho >= 1} cannot keep up: the decision
 * waits out the call timeout. The p99 is solved from the mixture of every group's distribution.
 */
final class LatencyModel {
  static final double LOCAL_MILLIS = 0.001;
  static final double RTT_MILLIS = 0.2; // one round trip in a zone (assumed; the real-process run measures it)
  static final double REDIS_SERVICE_MILLIS = 0.045; // budget.lua inside Redis (lua/README.md: 42-47 us)
  static final double RELAY_SERVICE_MILLIS = 0.010; // a relay's in-memory answer (assumed)

  private record Group(long decisions, double rtt, double meanWait, boolean saturated) {}

  private final List<Group> groups = new ArrayList<>();
  private long local;
  private final double timeoutMillis;

  LatencyModel(double timeoutMillis) {
    this.timeoutMillis = timeoutMillis;
  }

  void local(long decisions) {
    local += decisions;
  }

  /** {@code decisions} that each made a call to a server that ran {@code callsPerSecond} calls in that second. */
  void remote(long decisions, long callsPerSecond, double serviceMillis) {
    if (decisions <= 0) {
      return;
    }
    double rho = callsPerSecond * serviceMillis / 1000.0;
    groups.add(rho >= 1 ? new Group(decisions, RTT_MILLIS, 0, true)
        : new Group(decisions, RTT_MILLIS, serviceMillis / (1 - rho), false));
  }

  long decisions() {
    long n = local;
    for (Group g : groups) {
      n += g.decisions;
    }
    return n;
  }

  /** The latency that a share {@code q} of decisions exceed (q = 0.01: the p99), ms. */
  double exceededBy(double q) {
    long n = decisions();
    if (n == 0) {
      return 0;
    }
    double lo = 0;
    double hi = timeoutMillis;
    if (tail(hi) > q) {
      return timeoutMillis;
    }
    for (int i = 0; i < 60; i++) {
      double mid = (lo + hi) / 2;
      if (tail(mid) > q) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    return hi;
  }

  /** The share of decisions slower than {@code x} ms. */
  private double tail(double x) {
    double slower = x < LOCAL_MILLIS ? local : 0;
    for (Group g : groups) {
      if (g.saturated) {
        slower += x < timeoutMillis ? g.decisions : 0;
      } else if (x <= g.rtt) {
        slower += g.decisions;
      } else {
        slower += g.decisions * Math.exp(-(x - g.rtt) / g.meanWait);
      }
    }
    return slower / decisions();
  }

  /** The share of decisions that made a call. */
  double remoteShare() {
    long n = decisions();
    return n == 0 ? 0 : (n - local) / (double) n;
  }
}
