package io.retrybudget.bench.metastable;

import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Whether a real run's harness kept pace with its schedule, from its own probes, whatever the arms
 * did: in every second of every arm's schedule, the largest delay of the backend's event loop (a
 * 10 ms probe timer on the loop that serves the arm), of the client processes' ticker (which
 * releases first attempts every 5 ms) and retry timers (a 10 ms probe), and of the answers (from
 * the backend's clock on the answer to the client's executor seeing it). A second in which any of
 * them reached {@link #BOUND_MILLIS} is late: the backend, the clients or the wire ran a whole
 * service time behind the schedule, so what the arms did in it was decided by the machine. The
 * scenario cannot cause such delays (its service time is a timer, not CPU); only the harness's
 * own work, or others' on the same cores, can.
 *
 * @param lateSeconds unit-seconds (an arm's second) with a delay at or over the bound
 * @param worst       the largest delay of each kind over the run, ms: backend loop, ticker,
 *     retry timers, answers
 */
record Pace(int lateSeconds, long[] worst, String firstLate) {
  /** A delay of a whole service time S (100 ms at the defaults) makes a second late. */
  static final long BOUND_MILLIS = 100;

  private static final List<String> CLIENT = List.of("tick_lag_max", "timer_lag_max", "answer_lag_max");

  static Pace of(ScenarioRun r) {
    int late = 0;
    long[] worst = new long[4];
    String first = null;
    for (Map.Entry<Arm, PerSecond> e : r.calls().entrySet()) {
      PerSecond calls = e.getValue();
      PerSecond server = r.server().get(e.getKey());
      for (int s = 0; s < Math.min(calls.seconds(), server.seconds()); s++) {
        long[] lag = {server.get(s, "lag_max"), calls.get(s, CLIENT.get(0)), calls.get(s, CLIENT.get(1)),
            calls.get(s, CLIENT.get(2))};
        boolean isLate = false;
        for (int k = 0; k < lag.length; k++) {
          worst[k] = Math.max(worst[k], lag[k]);
          isLate |= lag[k] >= BOUND_MILLIS;
        }
        if (isLate) {
          late++;
          if (first == null) {
            first = String.format(Locale.ROOT, "%s second %d (backend loop %d ms, ticker %d, timers %d, answers %d)",
                e.getKey().id(), s, lag[0], lag[1], lag[2], lag[3]);
          }
        }
      }
    }
    return new Pace(late, worst, first);
  }

  boolean keptPace() {
    return lateSeconds == 0;
  }

  /** One line for the summary. */
  String describe() {
    return String.format(Locale.ROOT, "Harness delays (largest in any second, ms): backend event loop %d, client ticker"
        + " %d, client retry timers %d, answers %d; unit-seconds with a delay of %d ms or more: %d%s.", worst[0],
        worst[1], worst[2], worst[3], BOUND_MILLIS, lateSeconds, firstLate == null ? "" : ", the first: " + firstLate);
  }
}
