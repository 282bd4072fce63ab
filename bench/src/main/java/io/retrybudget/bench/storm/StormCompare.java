package io.retrybudget.bench.storm;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Properties;

/**
 * {@code --mode compare}: two fleet storm runs of the same scenario (two designs of the budget),
 * read back from their files, as one table and one chart (retries per second and per-second retry
 * ratio over time, one line per design).
 */
final class StormCompare {
  private StormCompare() {}

  /** One storm run read back from {@code <prefix>.csv}, {@code -redis.csv} and {@code -run.properties}. */
  record Run(String label, Properties props, StormStats.Series series, long[] fallbackGrants, long[] degradedMax,
      long[] harnessCpu, long[] tickLagMax) {
    int clients() {
      return Integer.parseInt(props.getProperty("clients"));
    }

    int healthySeconds() {
      return Integer.parseInt(props.getProperty("healthy_seconds"));
    }

    int outageSeconds() {
      return Integer.parseInt(props.getProperty("outage_seconds"));
    }

    int floor() {
      return Integer.parseInt(props.getProperty("min_retries_per_sec"));
    }

    double rate() {
      return Double.parseDouble(props.getProperty("rate"));
    }

    double ratio() {
      return Double.parseDouble(props.getProperty("ratio"));
    }

    StormStats.Row row() {
      int from = healthySeconds();
      return StormStats.row(clients(), series, Math.min(1, from), from, from + outageSeconds(), floor(), rate());
    }
  }

  static void run(Options o, String command) throws IOException {
    Run old = read(o.oldPrefix, o.oldLabel);
    Run neu = read(o.newPrefix, o.newLabel);
    for (String key : new String[] {"clients", "rate", "healthy_seconds", "warmup_seconds", "outage_seconds", "ratio", "min_retries_per_sec", "window_seconds"}) {
      if (!old.props.getProperty(key, "").equals(neu.props.getProperty(key, ""))) {
        throw new IllegalArgumentException("the two runs are not the same scenario: " + key + " is " + old.props.getProperty(key)
            + " in " + o.oldPrefix + " and " + neu.props.getProperty(key) + " in " + o.newPrefix);
      }
    }
    Path parent = o.out.toAbsolutePath().getParent();
    if (parent != null) {
      Files.createDirectories(parent);
    }
    int from = old.healthySeconds();
    int to = from + old.outageSeconds();
    String title = String.format(Locale.ROOT, "Retry storm, two designs: %,d clients, %,.0f first attempts/s, backend down %d s, ratio %.2f, floor %d/s",
        old.clients(), old.rate(), old.outageSeconds(), old.ratio(), old.floor());
    Path png = o.out.resolveSibling(o.out.getFileName() + ".png");
    List<Chart.Line> lines = new ArrayList<>();
    lines.add(new Chart.Line(old.label, Chart.OLD_COLOR, old.series.first(), old.series.retries()));
    lines.add(new Chart.Line(neu.label, Chart.NEW_COLOR, neu.series.first(), neu.series.retries()));
    Chart.writeCompare(png, title, lines, from, to, old.ratio());

    StringBuilder sb = new StringBuilder();
    sb.append("<!-- ").append(command).append(" -->\n\n");
    sb.append(String.format(Locale.ROOT, "Storm, %,d clients, %,.0f first attempts/s (%.2f per client), %d s healthy then %d s of total outage,"
        + " ratio %.2f, floor %d retries/s for the fleet (%.2f %% of the first attempts).%n%n", old.clients(), old.rate(),
        old.rate() / old.clients(), from, old.outageSeconds(), old.ratio(), old.floor(), 100.0 * old.floor() / old.rate()));
    sb.append("| design ").append(StormStats.HEADER.lines().findFirst().orElseThrow()).append(" seconds in [0.03, 0.25] | fallback grants | most degraded at once | seconds off pace (harness) |\n");
    sb.append("|---").append(StormStats.HEADER.lines().skip(1).findFirst().orElseThrow()).append("---:|---:|---:|---:|\n");
    for (Run r : List.of(old, neu)) {
      StormStats.Row row = r.row();
      sb.append("| ").append(r.label).append(' ').append(row.markdown())
          .append(String.format(" %d / %d | %,d | %,d | %d |%n", row.secondsInBand(), row.outageSeconds(), sum(r.fallbackGrants),
              max(r.degradedMax, 0, r.degradedMax.length), row.secondsOffPace()));
    }
    StormStats.Row a = old.row();
    StormStats.Row b = neu.row();
    sb.append(String.format(Locale.ROOT, "%n%s / %s: script calls/s healthy %.2fx, storm %.2fx; Redis CPU storm %.2fx.%n",
        neu.label, old.label, b.scriptCallsHealthy() / a.scriptCallsHealthy(), b.scriptCallsStorm() / a.scriptCallsStorm(),
        b.redisCpuStorm() / a.redisCpuStorm()));
    sb.append("\nPer-second retry ratio over the outage (t=").append(from).append("..").append(to - 1).append(" s):\n\n");
    for (Run r : List.of(old, neu)) {
      sb.append("- ").append(r.label).append(": ");
      for (int s = from; s < to; s++) {
        sb.append(String.format(Locale.ROOT, "%s%.2f", s == from ? "" : " ",
            StormStats.perSecondRatio(r.series.first()[s], r.series.retries()[s])));
      }
      sb.append('\n');
    }
    sb.append("\nHarness, per run: JVM CPU mean / busiest second (% of one core), worst 2 ms tick lag (ms):\n\n");
    for (Run r : List.of(old, neu)) {
      sb.append(String.format(Locale.ROOT, "- %s: %.0f %% / %.0f %%, %.1f ms%n", r.label, sum(r.harnessCpu) / 10_000.0 / r.harnessCpu.length,
          max(r.harnessCpu, 0, r.harnessCpu.length) / 10_000.0, max(r.tickLagMax, 0, r.tickLagMax.length) / 1000.0));
    }
    sb.append("\nRuns: ").append(o.oldPrefix).append(" (").append(old.props.getProperty("command")).append("), ")
        .append(o.newPrefix).append(" (").append(neu.props.getProperty("command")).append(").\n");
    Path summary = o.out.resolveSibling(o.out.getFileName() + "-summary.md");
    Files.writeString(summary, sb.toString(), StandardCharsets.UTF_8);
    System.out.print(sb);
    System.out.println("\nwrote " + png + ", " + summary);
  }

  static Run read(Path prefix, String label) throws IOException {
    Properties props = new Properties();
    try (var r = Files.newBufferedReader(prefix.resolveSibling(prefix.getFileName() + "-run.properties"), StandardCharsets.UTF_8)) {
      props.load(r);
    }
    List<String[]> storm = fleetRows(prefix.resolveSibling(prefix.getFileName() + ".csv"));
    List<String[]> redis = fleetRows(prefix.resolveSibling(prefix.getFileName() + "-redis.csv"));
    int n = storm.size() - 1;
    if (n <= 0 || redis.size() - 1 != n) {
      throw new IllegalArgumentException(prefix + ": no fleet rows, or its two CSVs differ in length");
    }
    String[] sh = storm.get(0);
    String[] rh = redis.get(0);
    long[] first = column(storm, sh, "first_attempts");
    long[] retries = column(storm, sh, "retries");
    long[] calls = column(redis, rh, "evalsha_calls");
    long[] cpu = column(redis, rh, "redis_cpu_us");
    // runs before the interval was recorded sampled about every second
    long[] intervals = java.util.Arrays.asList(rh).contains("sample_interval_us") ? column(redis, rh, "sample_interval_us")
        : new StormStats.Series(first, retries, calls, cpu).intervalMicros();
    return new Run(label, props, new StormStats.Series(first, retries, calls, cpu, intervals), column(redis, rh, "fallback_grants"),
        column(redis, rh, "degraded_max"), column(redis, rh, "harness_cpu_us"), column(redis, rh, "tick_lag_max_us"));
  }

  /** The header, then the rows of the fleet strategy, in second order. */
  private static List<String[]> fleetRows(Path csv) throws IOException {
    List<String> lines = Files.readAllLines(csv, StandardCharsets.UTF_8);
    List<String[]> out = new ArrayList<>();
    out.add(lines.get(0).split(","));
    for (String l : lines.subList(1, lines.size())) {
      String[] f = l.split(",");
      if (f.length > 1 && f[1].equals(Strategy.FLEET.id)) {
        out.add(f);
      }
    }
    return out;
  }

  private static long[] column(List<String[]> rows, String[] header, String name) {
    int c = -1;
    for (int i = 0; i < header.length; i++) {
      if (header[i].equals(name)) {
        c = i;
      }
    }
    if (c < 0) {
      throw new IllegalArgumentException("no column " + name + " in " + String.join(",", header));
    }
    long[] out = new long[rows.size() - 1];
    for (int i = 1; i < rows.size(); i++) {
      out[i - 1] = Long.parseLong(rows.get(i)[c]);
    }
    return out;
  }

  private static long sum(long[] a) {
    long s = 0;
    for (long v : a) {
      s += v;
    }
    return s;
  }

  private static long max(long[] a, int from, int to) {
    long m = 0;
    for (int i = from; i < to; i++) {
      m = Math.max(m, a[i]);
    }
    return m;
  }
}
