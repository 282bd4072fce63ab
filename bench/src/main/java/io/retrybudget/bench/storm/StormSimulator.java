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

  private static void writeRedisCsv(Path file, List<StormRun> runs) throws IOException {
    try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(file, StandardCharsets.UTF_8))) {
      w.println("second,strategy,evalsha_calls,all_redis_commands");
      for (StormRun r : runs) {
        for (int s = 0; s < r.seconds(); s++) {
          w.println(s + "," + r.strategy().id + "," + r.redisEvalsha(s) + "," + r.redisAll(s));
        }
      }
    }
  }

  private static String summary(Options o, List<StormRun> runs) {
    StringBuilder sb = new StringBuilder();
    int from = o.healthySeconds;
    int to = o.healthySeconds + o.outageSeconds;
    double perClient = o.rate / o.clients;
    double windowRequests = o.rate * 10;
    double fleetExpected = (Math.floor(0.10 * windowRequests) + 10 * 10) / windowRequests;
    double localExpected = Math.min(o.maxAttempts - 1, 0.20 + 10.0 / perClient);
    sb.append(String.format("%,d clients, %,.0f first attempts/s in total (%.2f per client), healthy %d s, outage %d s (t=%d..%d s), healthy %d s;%n",
        o.clients, o.rate, perClient, o.healthySeconds, o.outageSeconds, from, to, o.healthySeconds));
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
    sb.append(String.format("Expected retry ratio during the outage: fleet (0.1 x %,.0f + 10 x 10) / %,.0f = %.4f;"
        + " per-client min(%d, 0.2 + 10 / %.2f) = %.2f; no budget %d.%n%n",
        windowRequests, windowRequests, fleetExpected, o.maxAttempts - 1, perClient, localExpected, o.maxAttempts - 1));

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
        long redisGranted = r.redisGranted();
        long seen = r.decisions(BudgetDecision.Reason.GRANTED);
        sb.append(String.format("         permits Redis counted as granted: %d; GRANTED answers clients received: %d;"
            + " granted in Redis but given up on by the client (call timeout): %d%n", redisGranted, seen, redisGranted - seen));
        sb.append(String.format("         budgets (clients) ever degraded: %d of %d (a 20 ms call timeout on a loaded machine"
            + " degrades some whatever happens to Redis)%n", r.everDegraded(), o.clients));
        sb.append("         most clients degraded at once, per second t=0.." + r.seconds() + ":");
        for (int s = 0; s < r.seconds(); s++) {
          sb.append(' ').append(r.maxDegraded(s));
        }
        sb.append('\n');
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
