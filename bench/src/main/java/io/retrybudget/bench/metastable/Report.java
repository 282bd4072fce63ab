package io.retrybudget.bench.metastable;

import io.retrybudget.bench.layers.LineChart;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** Writes a run's per-second CSV, its summary table and one chart per scenario. */
final class Report {
  static final String CSV_HEADER = "scenario,clients,arm,second,first,retries,goodput,failed,denied,arrived,processed,"
      + "wasted,refused,queue_max,p50_ms,p99_ms,redis_calls,backend_lag_ms,tick_lag_ms,timer_lag_ms,answer_lag_ms";

  private Report() {}

  static void csv(Path file, List<ScenarioRun> runs) throws IOException {
    try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(file))) {
      w.println(CSV_HEADER);
      for (ScenarioRun r : runs) {
        for (Arm arm : r.calls().keySet()) {
          PerSecond c = r.calls().get(arm);
          PerSecond s = r.server().get(arm);
          for (int t = 0; t < c.seconds(); t++) {
            int[] l = c.latencies(t);
            w.printf(Locale.ROOT, "%s,%d,%s,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d%n", r.scenario().id(),
                r.params().clients(), arm.id(), t, c.get(t, "first"), c.get(t, "retries"), c.get(t, "goodput"),
                c.get(t, "failed"), c.get(t, "denied"), s.get(t, "arrived"), s.get(t, "processed"), s.get(t, "wasted"),
                s.get(t, "refused"), s.get(t, "queue_max"), PerSecond.quantile(l, 0.5), PerSecond.quantile(l, 0.99),
                r.redisCalls().containsKey(arm) ? r.redisCalls().get(arm)[t] : 0, s.get(t, "lag_max"),
                c.get(t, "tick_lag_max"), c.get(t, "timer_lag_max"), c.get(t, "answer_lag_max"));
          }
        }
      }
    }
  }

  /** The per-arm table of one scenario, in Markdown. */
  static String table(ScenarioRun r) {
    Scenario sc = r.scenario();
    StringBuilder b = new StringBuilder();
    b.append(String.format(Locale.ROOT, "### %s: %s, %d clients (trigger s %d-%d)%n%n", sc.id(),
        sc.capacityFactor() < 1 ? "capacity x" + sc.capacityFactor() + " for " + sc.triggerSeconds() + " s"
            : "first attempts x" + sc.loadFactor() + " for " + sc.triggerSeconds() + " s",
        r.params().clients(), sc.triggerStart(), sc.triggerEnd()));
    b.append("| arm | recovery after the trigger | goodput in the trigger / reduced capacity | amplification in the "
        + "trigger | amplification after | wasted / processed | p50 / p99 of successes | Redis calls/s |\n");
    b.append("|---|---|---|---|---|---|---|---|\n");
    for (ArmSummary s : r.summaries().values()) {
      b.append(String.format(Locale.ROOT, "| %s | %s | %.0f %% | %.3f | %.3f | %.0f %% | %d / %d ms | %s |%n",
          s.arm().label(), s.recoverySeconds() < 0 ? "none in " + (r.calls().get(s.arm()).seconds() - sc.triggerEnd()) + " s"
              : s.recoverySeconds() + " s", 100 * s.triggerGoodputShare(), s.triggerAmplification(),
          s.afterAmplification(), 100 * s.wastedShare(), s.p50Millis(), s.p99Millis(),
          r.redisCalls().containsKey(s.arm()) ? String.format(Locale.ROOT, "%.1f", s.redisCallsPerSecond()) : "-"));
    }
    return b.toString();
  }

  /** Goodput per second of every arm, with the first attempts offered, the trigger shaded. */
  static void chart(Path file, ScenarioRun r, String what) throws IOException {
    List<LineChart.Series> series = new ArrayList<>();
    PerSecond any = r.calls().values().iterator().next();
    double[] offered = new double[any.seconds()];
    for (int s = 0; s < offered.length; s++) {
      offered[s] = any.get(s, "first");
    }
    series.add(new LineChart.Series("first attempts offered (" + r.calls().keySet().iterator().next().id() + ")",
        offered));
    for (Map.Entry<Arm, PerSecond> e : r.calls().entrySet()) {
      double[] v = new double[e.getValue().seconds()];
      for (int s = 0; s < v.length; s++) {
        v[s] = e.getValue().get(s, "goodput");
      }
      series.add(new LineChart.Series("goodput, " + e.getKey().label(), v));
    }
    LineChart.write(file, "Goodput per second, " + r.scenario().id() + " trigger (shaded), " + r.params().clients()
        + " clients, " + what, "second", "calls/s", series, false, r.scenario().triggerStart(),
        r.scenario().triggerEnd());
  }
}
