package io.retrybudget.bench.storm;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.budget.LocalRetryBudget;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import io.retrybudget.testing.CommandStats;
import io.retrybudget.testing.RedisServerProcess;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The healthy steady state: what one client costs Redis while every first attempt succeeds, at
 * each given rate (from INFO commandstats), and how long one permit decision takes.
 */
final class SteadyState {
  private final Options o;
  final StringBuilder report = new StringBuilder();

  SteadyState(Options o) {
    this.o = o;
  }

  void run() throws InterruptedException {
    try (RedisServerProcess redis = RedisServerProcess.start();
        RedisBudgetClient client = RedisBudgetClient.builder(RedisConnectionOptions.standalone(redis.uri()).build()).build()) {
      String version = StormRun.info(redis, "server").lines().filter(l -> l.startsWith("redis_version:"))
          .findFirst().orElse("redis_version:?");
      line("Healthy steady state, one client (one RedisBudgetClient, one RetryBudget), every first attempt succeeds");
      line("Redis " + version.substring("redis_version:".length()).trim() + " on 127.0.0.1, budget defaults (ratio 0.10, floor 10/s, window 10 s, flush interval 500 ms)");
      line("");
      line(String.format("%-22s %-14s %-16s %-18s %-22s %s", "first attempts/s", "measured s", "first attempts",
          "EVALSHA/s/client", "EVALSHA per 1,000 req", "all Redis cmds/s (incl. inside the script)"));
      for (double rate : o.steadyRates) {
        RetryBudget budget = client.budget(BudgetConfig.builder("steady").build());
        try {
          pace(budget, rate, 2); // warm-up: the flush timer is running, the script is cached
          redis.call("CONFIG", "RESETSTAT");
          long t0 = System.nanoTime();
          long sent = pace(budget, rate, o.steadySeconds);
          String stats = StormRun.info(redis, "commandstats");
          double secs = (System.nanoTime() - t0) / 1e9;
          long ev = StormRun.scriptCalls(stats);
          long all = StormRun.appCalls(stats);
          line(String.format("%-22s %-14.2f %-16d %-18.2f %-22.3f %.2f", String.format("%.0f", rate), secs, sent,
              ev / secs, 1000.0 * ev / sent, all / secs));
          line("    commandstats: " + summarize(stats));
        } finally {
          budget.close();
        }
      }
      line("");
      line("Permit decision latency: acquireBlocking(), one thread, one call at a time, " + String.format("%,d", o.latencyCalls)
          + " timed calls after " + String.format("%,d", o.latencyCalls / 4) + " warm-up calls,");
      line("on a budget with plenty of allowance (ratio 1.0, floor 1,000,000/s), so every answer is a Redis round trip");
      line("unless the budget is degraded (then it answers from its LOCAL fallback without I/O: reported apart).");
      line("");
      line("a) RedisBudgetClient with the SDK defaults (callTimeout 20 ms):");
      latency(client, "latency");
      try (RedisBudgetClient patient = RedisBudgetClient.builder(RedisConnectionOptions.standalone(redis.uri()).build())
          .callTimeout(java.time.Duration.ofSeconds(1)).build()) {
        line("b) RedisBudgetClient with callTimeout 1 s, so that no call falls back (the round trip itself):");
        latency(patient, "latency-patient");
      }
      localLatency();
    }
  }

  /** Sends first attempts at {@code rate} per second for {@code seconds}; returns how many. */
  private static long pace(RetryBudget budget, double rate, int seconds) {
    long start = System.nanoTime();
    long end = start + TimeUnit.SECONDS.toNanos(seconds);
    long sent = 0;
    long now;
    while ((now = System.nanoTime()) < end) {
      long owed = (long) ((now - start) / 1e9 * rate);
      while (sent < owed) {
        budget.recordFirstAttempt();
        sent++;
      }
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
    }
    return sent;
  }

  private void latency(RedisBudgetClient client, String name) throws InterruptedException {
    int n = o.latencyCalls;
    BudgetConfig plenty = BudgetConfig.builder(name).ratio(1.0).minRetriesPerSecond(1_000_000).build();
    try (RetryBudget budget = client.budget(plenty)) {
      budget.recordFirstAttempt();
      long t0 = System.nanoTime();
      BudgetDecision firstDecision = budget.acquireBlocking();
      line(String.format("  the very first acquireBlocking() of this budget: %.1f ms, %s%s", (System.nanoTime() - t0) / 1e6,
          firstDecision.reason(), budget.isDegraded() ? " (budget now degraded)" : ""));
      // warm up until the JIT has settled and the budget answers from Redis
      for (int i = 0; i < n / 4; i++) {
        budget.recordFirstAttempt();
        budget.acquireBlocking();
      }
      long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
      while (budget.isDegraded() && System.nanoTime() < until) {
        Thread.sleep(10);
      }
      Map<BudgetDecision.Reason, Long> reasons = new EnumMap<>(BudgetDecision.Reason.class);
      long[][] split = new long[2][];
      long[] nanos = time(budget, n, reasons, split);
      line(percentiles("RedisRetryBudget.acquireBlocking(), all calls", nanos) + "  decisions: " + reasons);
      if (split[0].length > 0 && split[0].length < nanos.length) {
        line(percentiles("  answered by Redis (GRANTED) only", split[0]) + "  n=" + split[0].length);
      }
    }
  }

  private void localLatency() {
    int n = o.latencyCalls;
    BudgetConfig plenty = BudgetConfig.builder("latency").ratio(1.0).minRetriesPerSecond(1_000_000).build();
    LocalRetryBudget local = new LocalRetryBudget(plenty);
    for (int i = 0; i < n / 4; i++) {
      local.recordFirstAttempt();
      local.acquireBlocking();
    }
    Map<BudgetDecision.Reason, Long> reasons = new EnumMap<>(BudgetDecision.Reason.class);
    long[] nanos = time(local, n, reasons, new long[2][]);
    line(percentiles("LocalRetryBudget.acquireBlocking() (reference)", nanos) + "  decisions: " + reasons);
  }

  /** Times n calls; split[0] gets the sorted times of GRANTED answers, split[1] of the others. */
  private static long[] time(RetryBudget budget, int n, Map<BudgetDecision.Reason, Long> reasons, long[][] split) {
    long[] nanos = new long[n];
    long[] granted = new long[n];
    long[] other = new long[n];
    int g = 0;
    int x = 0;
    for (int i = 0; i < n; i++) {
      budget.recordFirstAttempt();
      long t0 = System.nanoTime();
      BudgetDecision d = budget.acquireBlocking();
      nanos[i] = System.nanoTime() - t0;
      reasons.merge(d.reason(), 1L, Long::sum);
      if (d.reason() == BudgetDecision.Reason.GRANTED) {
        granted[g++] = nanos[i];
      } else {
        other[x++] = nanos[i];
      }
    }
    Arrays.sort(nanos);
    split[0] = Arrays.copyOf(granted, g);
    split[1] = Arrays.copyOf(other, x);
    Arrays.sort(split[0]);
    Arrays.sort(split[1]);
    return nanos;
  }

  private static String percentiles(String what, long[] sorted) {
    return String.format("  %-44s p50 %7.1f us  p90 %7.1f us  p99 %7.1f us  p99.9 %7.1f us  max %8.1f us", what,
        at(sorted, 0.50), at(sorted, 0.90), at(sorted, 0.99), at(sorted, 0.999), sorted[sorted.length - 1] / 1e3);
  }

  private static double at(long[] sorted, double q) {
    int i = (int) Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1);
    return sorted[Math.max(0, i)] / 1e3;
  }

  private static String summarize(String stats) {
    StringBuilder sb = new StringBuilder();
    for (String l : stats.split("\r?\n")) {
      if (l.startsWith("cmdstat_")) {
        String name = l.substring("cmdstat_".length(), l.indexOf(':'));
        if (name.equals("info") || name.startsWith("config")) {
          continue;
        }
        sb.append(name).append('=').append(CommandStats.calls(stats, name)).append(' ');
      }
    }
    return sb.toString().trim();
  }

  private void line(String s) {
    System.out.println(s);
    report.append(s).append('\n');
  }
}
