package io.retrybudget.bench.storm;

import io.retrybudget.budget.BudgetDecision;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.OffsetDateTime;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;

/**
 * Fleet storm simulator: many clients share one retry budget on one real Redis while the backend
 * fails 100% for a while, then recovers. Compares no budget, a per-client local budget (Finagle's
 * defaults) and the fleet-wide Redis budget, counted from attempts actually sent. See
 * bench/README.md.
 *
 * <p>{@code --mode steady} measures instead what a healthy client costs Redis, and the latency of
 * one permit decision.
 */
public final class StormSimulator {
  private StormSimulator() {}

  public static void main(String[] args) throws Exception {
    System.setProperty("java.awt.headless", "true");
    Options o;
    try {
      o = Options.parse(args);
    } catch (IllegalArgumentException e) {
      System.err.println(e.getMessage());
      if (!"help shown".equals(e.getMessage())) {
        throw e;
      }
      return;
    }
    Path parent = o.out.toAbsolutePath().getParent();
    if (parent != null) {
      Files.createDirectories(parent);
    }
    String command = "StormSimulator " + String.join(" ", args);
    if (o.mode.equals("compare")) {
      StormCompare.run(o, command);
      return;
    }
    if (o.mode.equals("steady")) {
      SteadyState steady = new SteadyState(o);
      steady.run();
      Path summary = sibling(o.out, "-summary.txt");
      Files.writeString(summary, header(command) + steady.report, StandardCharsets.UTF_8);
      System.out.println("\nwrote " + summary);
      return;
    }
    List<StormRun> runs = new ArrayList<>();
    for (Strategy s : o.strategies) {
      StormRun run = new StormRun(o, s);
      run.run();
      runs.add(run);
    }
    writeCsv(sibling(o.out, ".csv"), runs);
    writeRedisCsv(sibling(o.out, "-redis.csv"), runs);
    writeRunProperties(sibling(o.out, "-run.properties"), o, command);
    String title = String.format("Retry storm: %,d clients, %,.0f first attempts/s, backend down %d s (max %d attempts per request)",
        o.clients, o.rate, o.outageSeconds, o.maxAttempts);
    Chart.write(sibling(o.out, ".png"), title, runs, o.healthySeconds, o.healthySeconds + o.outageSeconds, o.rate);
    String summary = header(command) + summary(o, runs);
    System.out.println();
    System.out.print(summary);
    Files.writeString(sibling(o.out, "-summary.txt"), summary, StandardCharsets.UTF_8);
    System.out.println("\nwrote " + sibling(o.out, ".csv") + ", " + sibling(o.out, "-redis.csv") + ", "
        + sibling(o.out, ".png") + ", " + sibling(o.out, "-summary.txt"));
  }

  private static Path sibling(Path prefix, String suffix) {
    return prefix.resolveSibling(prefix.getFileName() + suffix);
  }

  private static String header(String command) {
    return "# " + command + "\n# " + OffsetDateTime.now().truncatedTo(ChronoUnit.SECONDS) + ", "
        + Runtime.getRuntime().availableProcessors() + " CPUs, Java " + System.getProperty("java.version") + "\n\n";
  }

  private static void writeCsv(Path file, List<StormRun> runs) throws IOException {
    try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(file, StandardCharsets.UTF_8))) {
      w.println("second,strategy,first_attempts,retries,total_attempts");
      for (StormRun r : runs) {
        for (int s = 0; s < r.seconds(); s++) {
          long f = r.first(s);
          long re = r.retries(s);
          w.println(s + "," + r.strategy().id + "," + f + "," + re + "," + (f + re));
        }
      }
    }
  }

  /**
   * How far Redis's first-attempt counts lagged what the fleet had sent, sampled each second from
   * t=1 to the end of the outage: median and max, in first attempts and in seconds of the fleet's
   * first attempts (the mean rate of the seconds sampled).
   */
  static String countLagLine(StormRun r, long[] first, int from, int to) {
    List<Long> lags = new java.util.ArrayList<>();
    long sent = 0;
    for (int s = 1; s < to; s++) {
      sent += first[s];
      if (r.countLag(s) >= 0) {
        lags.add(r.countLag(s));
      }
    }
    if (lags.isEmpty()) {
      return "Redis's count of first attempts against those sent: not read (no bucket ring in this design).\n";
    }
    java.util.Collections.sort(lags);
    double rate = sent / (double) Math.max(1, to - 1);
    long median = lags.get(lags.size() / 2);
    long max = lags.get(lags.size() - 1);
    return String.format("Redis's count of first attempts lagged those sent (sampled each second, t=1..%d): median %,d (%.2f s of"
        + " first attempts), max %,d (%.2f s).%n", to - 1, median, median / rate, max, max / rate);
  }

  private static void writeRedisCsv(Path file, List<StormRun> runs) throws IOException {
    try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(file, StandardCharsets.UTF_8))) {
      w.println("second,strategy,evalsha_calls,all_redis_commands,redis_cpu_us,harness_cpu_us,tick_lag_max_us,"
          + "tick_run_max_us,degraded_max,fallback_grants,fallback_denials,sample_interval_us,count_lag_first_attempts");
      for (StormRun r : runs) {
        for (int s = 0; s < r.seconds(); s++) {
          w.println(s + "," + r.strategy().id + "," + r.redisEvalsha(s) + "," + r.redisAll(s) + "," + r.redisCpuMicros(s)
              + "," + r.harnessCpuMicros(s) + "," + r.tickLagMaxMicros(s) + "," + r.tickRunMaxMicros(s) + ","
              + r.maxDegraded(s) + "," + r.fallbackGrants(s) + "," + r.fallbackDenials(s) + "," + r.sampleIntervalMicros(s)
              + "," + r.countLag(s));
        }
      }
    }
  }

  /** What a compare run needs to know about a storm run, beside its CSVs. */
  private static void writeRunProperties(Path file, Options o, String command) throws IOException {
    java.util.Properties p = new java.util.Properties();
    p.setProperty("command", command);
    p.setProperty("label", o.label);
    p.setProperty("clients", Integer.toString(o.clients));
    p.setProperty("rate", Double.toString(o.rate));
    p.setProperty("healthy_seconds", Integer.toString(o.healthySeconds));
    p.setProperty("warmup_seconds", Integer.toString(o.warmupSeconds));
    p.setProperty("outage_seconds", Integer.toString(o.outageSeconds));
    p.setProperty("ratio", Double.toString(o.ratio));
    p.setProperty("min_retries_per_sec", Integer.toString(o.minRetriesPerSecond));
    p.setProperty("window_seconds", Integer.toString(o.windowSeconds));
    p.setProperty("budget_clients", Integer.toString(o.budgetClients));
    try (var w = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
      p.store(w, "storm run");
    }
  }

  /** A harness whose 2 ms ticks start later than this at p99 no longer offers the load it should. */
  static final long HARNESS_P99_LAG_MICROS = 50_000;

  /** The issue-17 table row of the fleet run, and the harness's own cost. */
  static String fleetSection(Options o, StormRun r) {
    StringBuilder sb = new StringBuilder();
    int n = r.seconds();
    long[] first = new long[n];
    long[] retries = new long[n];
    long[] calls = new long[n];
    long[] cpu = new long[n];
    long[] harness = new long[n];
    long[] intervals = new long[n];
    long fallbackGrants = 0;
    long fallbackDenials = 0;
    long degradedMax = 0;
    for (int s = 0; s < n; s++) {
      first[s] = r.first(s);
      retries[s] = r.retries(s);
      calls[s] = r.redisEvalsha(s);
      cpu[s] = r.redisCpuMicros(s);
      harness[s] = r.harnessCpuMicros(s);
      intervals[s] = r.sampleIntervalMicros(s);
      fallbackGrants += r.fallbackGrants(s);
      fallbackDenials += r.fallbackDenials(s);
      degradedMax = Math.max(degradedMax, r.maxDegraded(s));
    }
    int from = o.healthySeconds;
    int to = o.healthySeconds + o.outageSeconds;
    StormStats.Row row = StormStats.row(o.clients, new StormStats.Series(first, retries, calls, cpu, intervals), Math.min(1, from), from, to,
        o.minRetriesPerSecond, o.rate);
    sb.append(String.format("%nFleet budget%s: ratio %.2f, floor %d retries/s for the whole fleet (%.2f %% of %,.0f first attempts/s),"
        + " window %d s.%n", o.label.isEmpty() ? "" : " (" + o.label + ")", o.ratio, o.minRetriesPerSecond,
        100.0 * o.minRetriesPerSecond / o.rate, o.rate, o.windowSeconds));
    sb.append(StormStats.HEADER).append('\n').append(row.markdown()).append('\n');
    sb.append(String.format("per-second ratio over the %d outage seconds t=%d..%d (first outage second included): min %.3f at t=%d s,"
        + " max %.3f at t=%d s; %d of %d seconds within [%.2f, %.2f]; %d seconds sent no first attempt.%n",
        row.outageSeconds(), from, to - 1, row.minRatio(), row.minSecond(), row.maxRatio(), row.maxSecond(),
        row.secondsInBand(), row.outageSeconds(), StormStats.BAND_LOW, StormStats.BAND_HIGH, row.secondsWithout()));
    sb.append(String.format("mean %.4f = %,d retries / %,d first attempts; after the floor's share (%d x %d s = %,d retries): %.4f.%n",
        row.meanRatio(), row.outageRetries(), row.outageFirst(), o.minRetriesPerSecond, row.outageSeconds(),
        (long) o.minRetriesPerSecond * row.outageSeconds(), row.meanAfterFloor()));
    sb.append(String.format("script calls/s (EVALSHA + EVAL in INFO commandstats, per sampling interval of about 1 s): healthy %,.0f"
        + " (mean of t=%d..%d), storm %,.0f (mean of the outage), max %,d in one storm interval of at least 0.5 s.%n", row.scriptCallsHealthy(), Math.min(1, from),
        from - 1, row.scriptCallsStorm(), row.scriptCallsStormMax()));
    sb.append(String.format("Redis CPU (INFO cpu used_cpu_sys + used_cpu_user, per-second deltas, %% of one core): healthy %.1f %%,"
        + " storm %.1f %%, max %.1f %%.%n", row.redisCpuHealthy(), row.redisCpuStorm(), row.redisCpuStormMax()));
    sb.append(String.format("degraded budgets: at most %,d of %,d at once, %,d ever; fallback decisions: %,d grants, %,d refusals.%n",
        degradedMax, o.clients, r.everDegraded(), fallbackGrants, fallbackDenials));
    sb.append(countLagLine(r, first, from, to));
    sb.append(String.format("per-second ratio: "));
    for (int s = from; s < to; s++) {
      sb.append(String.format(java.util.Locale.ROOT, "%s%.2f", s == from ? "" : " ", StormStats.perSecondRatio(first[s], retries[s])));
    }
    sb.append('\n');
    sb.append(harnessSection(o, r, harness));
    long[] lag = r.tickLagPercentiles();
    boolean kept = row.secondsOffPace() == 0 && lag[1] <= HARNESS_P99_LAG_MICROS;
    sb.append(String.format("  harness kept pace: %s (%d of the seconds t=%d..%d sent first attempts more than %.0f %% off %,.0f/s;"
        + " p99 tick lag %,d us against at most %,d us)%s%n", kept ? "YES" : "NO", row.secondsOffPace(), Math.min(1, from), to - 1,
        100 * StormStats.PACE_TOLERANCE, o.rate, lag[1], HARNESS_P99_LAG_MICROS,
        kept ? "" : ": this run measured a starved harness (the machine), not the budget alone"));
    return sb.toString();
  }

  private static String harnessSection(Options o, StormRun r, long[] harness) {
    StringBuilder sb = new StringBuilder();
    long sum = 0;
    long max = 0;
    for (int s = 0; s < harness.length; s++) {
      sum += harness[s];
      max = Math.max(max, harness[s]);
    }
    long[] lag = r.tickLagPercentiles();
    long runMax = 0;
    for (int s = 0; s < r.seconds(); s++) {
      runMax = Math.max(runMax, r.tickRunMaxMicros(s));
    }
    if (r.strategy() == Strategy.FLEET) {
      sb.append(String.format("%nHarness: 1 OS process (this JVM) simulating %,d clients = %,d budgets (RetryBudget, each with its own client id,"
          + " counters and flush timer) in %,d RedisBudgetClient(s) (one per simulated process: its own Lettuce connection, event loops"
          + " and timer thread), plus one redis-server process.%n", o.clients, o.clients, Math.max(1, r.budgetClients)));
    } else {
      sb.append(String.format("%nHarness: 1 OS process (this JVM) simulating %,d clients in %d simulated processes (ticker threads),"
          + " no Redis client; one redis-server process (idle).%n", o.clients, r.tickers()));
    }
    if (r.strategy() == Strategy.FLEET) {
      sb.append(String.format("  before the clock started: waited %.2f s until the RedisBudgetClients reached Redis (%d of %d had).%n",
          r.connectWaitSeconds, r.connectedAtStart, Math.max(1, r.budgetClients)));
    }
    sb.append(String.format("  built in %.1f s, closed in %.1f s; heap %,d MB before, %,d MB after building (%,.1f KB per client); threads"
        + " %d after building, %d at most during the run.%n", r.buildSeconds, r.closeSeconds, r.heapBytesBefore >> 20,
        r.heapBytesAfter >> 20, (r.heapBytesAfter - r.heapBytesBefore) / 1024.0 / o.clients, r.threadsAfterBuild, r.peakThreads));
    sb.append(String.format("  JVM CPU (simulated fleet + SDK + harness): %.0f %% of one core on average, %.0f %% in the busiest second"
        + " (the machine has %d cores, shared with Redis and other work).%n", sum / 10_000.0 / harness.length, max / 10_000.0,
        Runtime.getRuntime().availableProcessors()));
    sb.append(String.format("  scheduler lag: %d ticker threads (one per simulated process), %,d ticks of 2 ms; a tick started late by"
        + " p50 %,d us, p99 %,d us, p99.9 %,d us, max %,d us; the longest tick ran %,d us.%n", r.tickers(), r.ticks(), lag[0], lag[1],
        lag[2], lag[3], runMax));
    sb.append("  backoff timers fired late by: ").append(r.timerLagHistogram()).append('\n');
    sb.append(String.format("  load average (1, 5, 15 min) before the run: %s; after: %s.%n", r.loadBefore, r.loadAfter));
    return sb.toString();
  }

  private static String summary(Options o, List<StormRun> runs) {
    StringBuilder sb = new StringBuilder();
    int from = o.healthySeconds;
    int to = o.healthySeconds + o.outageSeconds;
    double perClient = o.rate / o.clients;
    double windowRequests = o.rate * o.windowSeconds;
    double fleetExpected = (Math.floor(o.ratio * windowRequests) + (double) o.minRetriesPerSecond * o.windowSeconds) / windowRequests;
    double localExpected = Math.min(o.maxAttempts - 1, 0.20 + 10.0 / perClient);
    sb.append(String.format("%,d clients, %,.0f first attempts/s in total (%.2f per client), warm-up %d s (healthy, not recorded),"
        + " healthy %d s, outage %d s (t=%d..%d s), healthy %d s;%n",
        o.clients, o.rate, perClient, o.warmupSeconds, o.healthySeconds, o.outageSeconds, from, to, o.healthySeconds));
    sb.append(String.format("at most %d attempts per request, backoff U[%d, %d] ms after the permit; redis %s, fresh per strategy.%n",
        o.maxAttempts, o.backoffMinMillis, o.backoffMaxMillis, runs.isEmpty() ? "?" : runs.get(0).redisVersion));
    sb.append("Redis: ").append(o.redis.equals("cluster") ? "a Cluster of 3 masters, each with a replica" : "standalone")
        .append(". ");
    sb.append(o.fault.equals("none") ? "No fault injected into Redis.\n"
        : String.format("Fault: %s at t=%d s (second %d of the outage).%n",
            o.fault.equals("scriptflush") ? "SCRIPT FLUSH" : "kill -9 of the budget's master", o.healthySeconds + o.faultAtOutageSecond,
            o.faultAtOutageSecond));
    sb.append(String.format("fleet budget client: callTimeout %s, fallback %s.%n",
        o.callTimeoutMillis == null ? "20 ms (SDK default)" : o.callTimeoutMillis + " ms",
        o.fallback == null ? "LOCAL (SDK default)" : o.fallback));
    sb.append(String.format("Expected retry ratio during the outage: fleet (%.2f x %,.0f + %d x %d) / %,.0f = %.4f;"
        + " per-client min(%d, 0.2 + 10 / %.2f) = %.2f; no budget %d.%n%n",
        o.ratio, windowRequests, o.minRetriesPerSecond, o.windowSeconds, windowRequests, fleetExpected, o.maxAttempts - 1,
        perClient, localExpected, o.maxAttempts - 1));

    sb.append("During the outage (attempts sent in t=" + from + ".." + to + " s):\n");
    sb.append(String.format("%-8s %12s %10s %12s %14s %14s %16s%n", "strategy", "first", "retries", "retry ratio",
        "amplification", "EVALSHA/s", "all redis cmd/s"));
    for (StormRun r : runs) {
      long f = r.firstTotal(from, to);
      long re = r.retriesTotal(from, to);
      sb.append(String.format("%-8s %12d %10d %12.4f %14.3f %14.1f %16.1f%n", r.strategy().id, f, re, ratio(re, f),
          ratio(f + re, f), r.evalshaCallsOutage / (double) o.outageSeconds, r.allCallsOutage / (double) o.outageSeconds));
    }
    sb.append("\nWhole run (" + runs.get(0).seconds() + " s, incl. healthy traffic before and after):\n");
    sb.append(String.format("%-8s %12s %10s %12s %14s %14s %16s%n", "strategy", "first", "retries", "retry ratio",
        "amplification", "EVALSHA/s", "all redis cmd/s"));
    for (StormRun r : runs) {
      long f = r.firstTotal(0, r.seconds() + 1);
      long re = r.retriesTotal(0, r.seconds() + 1);
      sb.append(String.format("%-8s %12d %10d %12.4f %14.3f %14.1f %16.1f%n", r.strategy().id, f, re, ratio(re, f),
          ratio(f + re, f), r.evalshaCalls / r.measuredSeconds, r.allCalls / r.measuredSeconds));
    }
    sb.append("\nPermit decisions (budget strategies):\n");
    for (StormRun r : runs) {
      if (r.strategy() == Strategy.NONE) {
        continue;
      }
      sb.append(String.format("%-8s", r.strategy().id));
      for (BudgetDecision.Reason reason : BudgetDecision.Reason.values()) {
        sb.append(String.format(" %s=%d", reason.name(), r.decisions(reason)));
      }
      sb.append(" errors=").append(r.acquireErrors()).append('\n');
      sb.append("         acquire() latency: ").append(r.acquireLatencyHistogram()).append('\n');
      if (r.strategy() == Strategy.FLEET) {
        sb.append("         EVALSHA time inside Redis: ").append(r.evalshaUsecPerCall).append(" us per call\n");
        long seen = r.decisions(BudgetDecision.Reason.GRANTED);
        if (r.redisGrantedKnown()) {
          long redisGranted = r.redisGranted();
          long local = r.decisions(BudgetDecision.Reason.GRANTED_FALLBACK);
          // since the fallback's grants are reported to Redis with the client's next call (budget.lua
          // ARGV[12]), Redis counts them too; an older design counts only its own
          sb.append(String.format("         permits Redis counted as granted: %d; GRANTED answers clients received: %d,"
              + " GRANTED_FALLBACK %d; counted minus GRANTED: %d, minus both: %d (positive: granted in Redis but given up"
              + " on at the call timeout; the fallback's count in Redis only where the design reports them)%n",
              redisGranted, seen, local, redisGranted - seen, redisGranted - seen - local));
        } else {
          sb.append(String.format("         GRANTED answers clients received: %d (the grants Redis counted are not read: this design"
              + " has no v2 bucket ring)%n", seen));
        }
        sb.append(String.format("         budgets (clients) ever degraded: %d of %d (a 20 ms call timeout on a loaded machine"
            + " degrades some whatever happens to Redis)%n", r.everDegraded(), o.clients));
        sb.append("         most clients degraded at once, per second t=0.." + r.seconds() + ":");
        for (int s = 0; s < r.seconds(); s++) {
          sb.append(' ').append(r.maxDegraded(s));
        }
        sb.append('\n');
      }
    }
    for (StormRun r : runs) {
      if (r.strategy() == Strategy.FLEET) {
        sb.append(fleetSection(o, r));
      } else {
        long[] harness = new long[r.seconds()];
        for (int s = 0; s < harness.length; s++) {
          harness[s] = r.harnessCpuMicros(s);
        }
        sb.append("\nStrategy ").append(r.strategy().id).append(" (no Redis budget: the harness's own cost):");
        sb.append(harnessSection(o, r, harness));
      }
    }
    sb.append("\nretry ratio = retries sent / first attempts sent; amplification = all attempts sent / first attempts sent;\n"
        + "EVALSHA/s = budget script calls Redis executed (client round trips); all redis cmd/s also counts the commands\n"
        + "the script runs inside Redis (GET, SETRANGE, TIME, HMGET of the config, PEXPIRE...), which INFO commandstats reports separately.\n");
    return sb.toString();
  }

  private static double ratio(long a, long b) {
    return b == 0 ? 0 : (double) a / b;
  }
}
