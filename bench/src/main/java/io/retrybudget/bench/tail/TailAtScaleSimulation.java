package io.retrybudget.bench.tail;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.budget.LocalRetryBudget;
import io.retrybudget.retry.HedgePolicy;
import io.retrybudget.retry.RetryExecutor;
import io.retrybudget.retry.RetryListener;
import io.retrybudget.retry.RetryPolicy;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.function.LongSupplier;

/**
 * "The Tail at Scale" (Dean and Barroso, CACM 2013) hedged requests, measured on the product's real
 * {@link RetryExecutor#callAsync} with {@link HedgePolicy}, in a discrete-event simulation in virtual
 * time: the executor gets the virtual clock and scheduler, so its hedge timers, the adaptive latency
 * estimator and the replicas all live on one simulated timeline and a run is deterministic for a seed.
 *
 * <p>Callers send Poisson arrivals; each call goes to a uniformly random replica ({@code ctx.replica()}
 * 0), and its hedge, if any, to the next one ({@code (offset + ctx.replica()) % replicas}). Every call
 * runs with {@code maxAttempts(2)} (primary + one hedge), nothing fails, no retries. Two backends:
 * <ul>
 *   <li>{@code pauses}: unbounded parallelism per replica, service U(min, max) ms, each replica
 *       independently paused now and then (GC-like: exponential healthy periods, uniform pauses);
 *   <li>{@code saturated}: each replica a single-server FIFO queue with exponential service at a
 *       given utilization, no pauses: every replica uniformly slow, hedges add queue load.
 * </ul>
 * The random draws of call i (arrival gap, replica, both service times) are the same in every
 * configuration of a seed, and so are the pause schedules: configurations are compared on the same
 * requests (common random numbers).
 */
public final class TailAtScaleSimulation {
  private TailAtScaleSimulation() {}

  static final class Options {
    List<Long> seeds = List.of(1L, 2L);
    int requests = 1_000_000;
    int warmup = 50_000;
    int replicas = 10;
    double rate = 2_000;
    double serviceMinMs = 1;
    double serviceMaxMs = 3;
    double healthyMeanMs = 10_000;
    double pauseMinMs = 50;
    double pauseMaxMs = 300;
    double utilization = 0.9;
    double saturatedServiceMs = 2;
    boolean abortInService;
    List<Double> fixedMs = List.of(5.0, 10.0, 20.0);
    List<Double> percentiles = List.of(0.90, 0.95, 0.99);
    double initialDelayMs = 10;
    double budgetRatio;
    String out = "bench/results/tail/tail";
    List<String> scenarios = List.of("pauses", "saturated");

    static Options parse(String[] args) {
      Options o = new Options();
      for (int i = 0; i < args.length; i++) {
        String a = args[i];
        if (a.equals("--help") || a.equals("-h")) {
          System.out.println(usage());
          System.exit(0);
        }
        if (a.equals("--abort-in-service")) {
          o.abortInService = true;
          continue;
        }
        if (i + 1 >= args.length) {
          throw new IllegalArgumentException("missing value for " + a + "\n" + usage());
        }
        String v = args[++i];
        switch (a) {
          case "--seeds" -> o.seeds = Arrays.stream(v.split(",")).map(String::trim).map(Long::parseLong).toList();
          case "--requests" -> o.requests = Integer.parseInt(v);
          case "--warmup" -> o.warmup = Integer.parseInt(v);
          case "--replicas" -> o.replicas = Integer.parseInt(v);
          case "--rate" -> o.rate = Double.parseDouble(v);
          case "--service-min-ms" -> o.serviceMinMs = Double.parseDouble(v);
          case "--service-max-ms" -> o.serviceMaxMs = Double.parseDouble(v);
          case "--healthy-mean-ms" -> o.healthyMeanMs = Double.parseDouble(v);
          case "--pause-min-ms" -> o.pauseMinMs = Double.parseDouble(v);
          case "--pause-max-ms" -> o.pauseMaxMs = Double.parseDouble(v);
          case "--utilization" -> o.utilization = Double.parseDouble(v);
          case "--saturated-service-ms" -> o.saturatedServiceMs = Double.parseDouble(v);
          case "--fixed-ms" -> o.fixedMs = doubles(v);
          case "--percentiles" -> o.percentiles = doubles(v);
          case "--initial-delay-ms" -> o.initialDelayMs = Double.parseDouble(v);
          case "--budget-ratio" -> o.budgetRatio = Double.parseDouble(v);
          case "--scenarios" -> o.scenarios = Arrays.stream(v.split(",")).map(String::trim).toList();
          case "--out" -> o.out = v;
          default -> throw new IllegalArgumentException("unknown option " + a + "\n" + usage());
        }
      }
      if (o.requests < 1 || o.warmup < 0 || o.replicas < 2 || o.seeds.isEmpty() || !(o.rate > 0)
          || !(o.utilization > 0 && o.utilization < 1) || o.serviceMaxMs < o.serviceMinMs
          || o.pauseMaxMs < o.pauseMinMs) {
        throw new IllegalArgumentException("bad options\n" + usage());
      }
      return o;
    }

    private static List<Double> doubles(String v) {
      if (v.isBlank()) {
        return List.of();
      }
      return Arrays.stream(v.split(",")).map(String::trim).map(Double::parseDouble).toList();
    }

    static String usage() {
      return """
          TailAtScaleSimulation: hedged requests (fixed and adaptive) of the real RetryExecutor, in virtual time
            --seeds 1,2               one full set of runs per seed
            --requests 1000000        measured calls per configuration (after the warm-up)
            --warmup 50000            calls before measuring (the adaptive estimator learns)
            --replicas 10
            --rate 2000               calls/s, Poisson, pauses backend (saturated: from --utilization)
            --service-min-ms 1 --service-max-ms 3      pauses backend: service U(min, max)
            --healthy-mean-ms 10000   pauses backend: mean healthy period per replica (exponential)
            --pause-min-ms 50 --pause-max-ms 300       pauses backend: pause length U(min, max)
            --utilization 0.9 --saturated-service-ms 2 saturated backend: M/M/1 per replica, load before hedges
            --abort-in-service        saturated: a cancelled attempt in service frees the server at once
                                      (default: it keeps the server busy until done; queued ones are removed)
            --fixed-ms 5,10,20        fixed hedge delays
            --percentiles 0.9,0.95,0.99 adaptive hedge percentiles
            --initial-delay-ms 10     adaptive: delay until 100 samples are known
            --budget-ratio 0          > 0: hedges ask a LocalRetryBudget with this ratio (floor 0)
            --scenarios pauses,saturated
            --out bench/results/tail/tail  writes <out>-summary.txt and <out>-runs.csv""";
    }
  }

  /** A hedging configuration: none, fixed delay, or adaptive percentile. */
  record Config(String name, double fixedMs, double percentile) {
    static Config none() {
      return new Config("none", -1, -1);
    }

    HedgePolicy policy(LongSupplier clock, double initialDelayMs) {
      if (fixedMs >= 0) {
        return HedgePolicy.fixedDelay(nanos(fixedMs)).build();
      }
      if (percentile > 0) {
        return HedgePolicy.adaptive(percentile, nanos(initialDelayMs)).nanoClock(clock).build();
      }
      return null;
    }
  }

  static Duration nanos(double ms) {
    return Duration.ofNanos(Math.round(ms * 1e6));
  }

  /** One configuration's measurements. */
  record Result(String scenario, String config, long seed, int calls, long p50, long p90, long p95, long p99,
      long p999, long max, double mean, long hedges, long hedgesWon, long hedgesDenied, long delayMin,
      long delayMedian, long delayMax, double wastedWorkPct, double busyPct, double pausedPct,
      long losersNotCancelled, long timersLeft, long hedgeTimersFiredForNothing) {
    double extraPct() {
      return 100.0 * hedges / calls;
    }

    double wonPct() {
      return hedges == 0 ? 0 : 100.0 * hedgesWon / hedges;
    }
  }

  /** Per-call bookkeeping, shared by the call's attempts. */
  private static final class Call {
    boolean done;
    int winner;
  }

  static Result run(Options o, String scenario, Config config, long seed) {
    VirtualTime time = new VirtualTime();
    boolean saturated = scenario.equals("saturated");
    Backends.Backend backend;
    double rate;
    Backends.Pausing pausing = null;
    if (saturated) {
      backend = new Backends.Queues(time, o.replicas, o.abortInService);
      rate = o.utilization * o.replicas / (o.saturatedServiceMs / 1000.0);
    } else {
      pausing = new Backends.Pausing(time, o.replicas, seed, (long) (o.healthyMeanMs * 1e6),
          (long) (o.pauseMinMs * 1e6), (long) (o.pauseMaxMs * 1e6));
      backend = pausing;
      rate = o.rate;
    }
    HedgePolicy hedging = config.policy(time::nanos, o.initialDelayMs);
    RetryPolicy policy = RetryPolicy.builder().maxAttempts(2).retryOn(t -> false).build();
    long[] hedgesDenied = new long[1];
    RetryExecutor.Builder eb = RetryExecutor.builder(policy)
        .nanoClock(time::nanos)
        .scheduler(time)
        .random(new SplittableRandom(seed ^ 0x5DEECE66DL)::nextDouble)
        .listener(new RetryListener() {
          @Override
          public void onHedgeDenied(BudgetDecision decision) {
            hedgesDenied[0]++;
          }
        });
    if (hedging != null) {
      eb.hedging(hedging);
    }
    if (o.budgetRatio > 0) {
      eb.budget(new LocalRetryBudget(BudgetConfig.builder("tail-sim").ratio(o.budgetRatio).minRetriesPerSecond(0)
          .build(), () -> time.nanos() / 1_000_000));
    }
    RetryExecutor executor = eb.build();

    int total = o.warmup + o.requests;
    long[] latencies = new long[o.requests];
    long[] counts = new long[4]; // measured hedges, measured hedges won, all hedges, completed calls
    long[] losers = new long[1];
    long[] failures = new long[1];
    List<Long> delays = new ArrayList<>();
    SplittableRandom draws = new SplittableRandom(seed);
    double meanGapNanos = 1e9 / rate;
    long[] measureStart = {-1};
    long[] lastArrival = {0};

    Runnable[] arrive = new Runnable[1];
    int[] next = {0};
    arrive[0] = () -> {
      int i = next[0]++;
      long now = time.nanos();
      // the same four draws for call i in every configuration
      int offset = draws.nextInt(o.replicas);
      long s1;
      long s2;
      if (saturated) {
        s1 = exp(draws, o.saturatedServiceMs * 1e6);
        s2 = exp(draws, o.saturatedServiceMs * 1e6);
      } else {
        s1 = (long) ((o.serviceMinMs + draws.nextDouble() * (o.serviceMaxMs - o.serviceMinMs)) * 1e6);
        s2 = (long) ((o.serviceMinMs + draws.nextDouble() * (o.serviceMaxMs - o.serviceMinMs)) * 1e6);
      }
      long gap = Math.max(1, exp(draws, meanGapNanos));
      boolean measured = i >= o.warmup;
      if (i == o.warmup) {
        measureStart[0] = now;
      }
      if (i + 1 < total) {
        time.at(now + gap, arrive[0]);
      } else {
        lastArrival[0] = now;
      }
      Call call = new Call();
      executor.<Integer>callAsync(ctx -> {
        if (ctx.isHedge()) {
          counts[2]++;
          if (measured) {
            counts[0]++;
          }
        }
        Backends.Request r = new Backends.Request(ctx.attempt() == 1 ? s1 : s2, ctx.attempt());
        r.future.whenComplete((v, e) -> {
          if (e == null && call.done && v != call.winner) {
            losers[0]++; // an attempt that finished normally after its call was over: it was not cancelled
          }
        });
        backend.submit((offset + ctx.replica()) % o.replicas, r);
        return r.future;
      }).whenComplete((winner, error) -> {
        call.done = true;
        call.winner = winner == null ? -1 : winner;
        counts[3]++;
        if (error != null) {
          failures[0]++;
          return;
        }
        if (measured) {
          latencies[i - o.warmup] = time.nanos() - now;
          if (winner == 2) {
            counts[1]++;
          }
        }
      });
    };
    time.at(VirtualTime.EPOCH, arrive[0]);
    if (hedging != null && hedging.isAdaptive()) {
      // the delay the executor would use now, sampled every 100 ms of the measured period
      Runnable[] sample = new Runnable[1];
      sample[0] = () -> {
        if (measureStart[0] >= 0) {
          delays.add(hedging.delayNanos());
        }
        if (next[0] < total) {
          time.at(time.nanos() + 100_000_000L, sample[0]);
        }
      };
      time.at(VirtualTime.EPOCH + 100_000_000L, sample[0]);
    }
    while (time.step()) {
      // run to the end
    }
    executor.close();
    if (counts[3] != total || failures[0] != 0) {
      throw new IllegalStateException("only " + counts[3] + " of " + total + " calls completed, " + failures[0] + " failed");
    }
    long fired = time.executorFired;
    long hedgeTimersForNothing = fired - counts[2] - hedgesDenied[0];

    long[] sorted = latencies.clone();
    Arrays.sort(sorted);
    double sum = 0;
    for (long l : sorted) {
      sum += l;
    }
    long delayMin = -1;
    long delayMed = -1;
    long delayMax = -1;
    if (!delays.isEmpty()) {
      long[] d = delays.stream().mapToLong(Long::longValue).sorted().toArray();
      delayMin = d[0];
      delayMed = d[d.length / 2];
      delayMax = d[d.length - 1];
    }
    long measureEnd = Math.max(lastArrival[0], measureStart[0] + 1);
    double busyPct = 100.0 * backend.busyNanos() / ((double) o.replicas * (time.nanos() - VirtualTime.EPOCH));
    double wastedPct = backend.busyNanos() == 0 ? 0 : 100.0 * backend.wastedBusyNanos() / backend.busyNanos();
    double pausedPct = pausing == null ? 0 : 100.0 * pausing.pausedFraction(measureStart[0], measureEnd);
    return new Result(scenario, config.name(), seed, o.requests, pct(sorted, 0.50), pct(sorted, 0.90),
        pct(sorted, 0.95), pct(sorted, 0.99), pct(sorted, 0.999), sorted[sorted.length - 1], sum / sorted.length,
        counts[0], counts[1], hedgesDenied[0], delayMin, delayMed, delayMax, wastedPct, busyPct, pausedPct,
        losers[0], time.live(), hedgeTimersForNothing);
  }

  static long exp(SplittableRandom r, double mean) {
    return (long) (-Math.log(1 - r.nextDouble()) * mean);
  }

  /** The nearest-rank percentile of sorted values. */
  static long pct(long[] sorted, double q) {
    int rank = (int) Math.ceil(q * sorted.length);
    return sorted[Math.max(0, Math.min(sorted.length - 1, rank - 1))];
  }

  static List<Config> configs(Options o) {
    List<Config> list = new ArrayList<>();
    list.add(Config.none());
    for (double ms : o.fixedMs) {
      list.add(new Config("fixed " + fmtMs(ms) + " ms", ms, -1));
    }
    for (double p : o.percentiles) {
      list.add(new Config("adaptive p" + fmtPct(p), -1, p));
    }
    return list;
  }

  static String fmtMs(double ms) {
    return ms == Math.rint(ms) ? String.valueOf((long) ms) : String.valueOf(ms);
  }

  static String fmtPct(double p) {
    double v = p * 100;
    return v == Math.rint(v) ? String.valueOf((long) v) : String.valueOf(v);
  }

  static String ms(long nanos) {
    if (nanos < 0) {
      return "-";
    }
    double v = nanos / 1e6;
    return String.format(Locale.ROOT, v >= 100 ? "%,.0f" : "%.1f", v);
  }

  public static void main(String[] args) throws IOException {
    Options o = Options.parse(args);
    List<Config> configs = configs(o);
    List<Result> results = new ArrayList<>();
    long wallStart = System.nanoTime();
    for (long seed : o.seeds) {
      for (String scenario : o.scenarios) {
        for (Config c : configs) {
          long t0 = System.nanoTime();
          Result r = run(o, scenario, c, seed);
          results.add(r);
          System.err.printf(Locale.ROOT, "seed %d %-9s %-16s p50 %s p99 %s p99.9 %s max %s extra %.2f%% (%.1fs)%n",
              seed, scenario, c.name(), ms(r.p50()), ms(r.p99()), ms(r.p999()), ms(r.max()), r.extraPct(),
              (System.nanoTime() - t0) / 1e9);
        }
      }
    }
    double wallSeconds = (System.nanoTime() - wallStart) / 1e9;
    String summary = summary(o, results, wallSeconds, args);
    System.out.print(summary);
    Path out = Path.of(o.out);
    if (out.getParent() != null) {
      Files.createDirectories(out.getParent());
    }
    Files.writeString(Path.of(o.out + "-summary.txt"), summary);
    Files.writeString(Path.of(o.out + "-runs.csv"), csv(results));
    boolean ok = targetHolds(o, results).values().stream().allMatch(b -> b);
    if (!ok && o.scenarios.contains("pauses")) {
      System.exit(1);
    }
  }

  /** Per seed: does some configuration cut p99.9 at least 10x for at most 5 % extra requests? */
  static Map<Long, Boolean> targetHolds(Options o, List<Result> results) {
    Map<Long, Boolean> map = new LinkedHashMap<>();
    for (long seed : o.seeds) {
      Result none = find(results, seed, "pauses", "none");
      boolean holds = false;
      for (Result r : results) {
        if (none != null && r.seed() == seed && r.scenario().equals("pauses") && !r.config().equals("none")
            && r.extraPct() <= 5.0 && (double) none.p999() / r.p999() >= 10.0) {
          holds = true;
        }
      }
      map.put(seed, holds);
    }
    return map;
  }

  static Result find(List<Result> results, long seed, String scenario, String config) {
    for (Result r : results) {
      if (r.seed() == seed && r.scenario().equals(scenario) && r.config().equals(config)) {
        return r;
      }
    }
    return null;
  }

  static String summary(Options o, List<Result> results, double wallSeconds, String[] args) {
    StringWriter sw = new StringWriter();
    PrintWriter w = new PrintWriter(sw);
    w.println("# Tail at Scale: hedged requests of RetryExecutor.callAsync in virtual time");
    w.println();
    w.println("args: " + String.join(" ", args));
    w.printf(Locale.ROOT, "%d measured calls per configuration after %d warm-up calls; %d replicas; seeds %s;"
        + " wall time %.0f s%n", o.requests, o.warmup, o.replicas, o.seeds, wallSeconds);
    w.printf(Locale.ROOT, "pauses: Poisson %.0f calls/s, unbounded parallelism, service U(%s, %s) ms, healthy"
            + " Exp(mean %s ms), pause U(%s, %s) ms per replica, independently%n",
        o.rate, fmtMs(o.serviceMinMs), fmtMs(o.serviceMaxMs), fmtMs(o.healthyMeanMs), fmtMs(o.pauseMinMs),
        fmtMs(o.pauseMaxMs));
    w.printf(Locale.ROOT, "saturated: each replica one FIFO server, service Exp(mean %s ms), load %.0f%% before"
            + " hedges (%.0f calls/s); a cancelled attempt is removed from the queue; in service it %s%n",
        fmtMs(o.saturatedServiceMs), o.utilization * 100, o.utilization * o.replicas / (o.saturatedServiceMs / 1000),
        o.abortInService ? "is aborted at once" : "keeps the server busy until done");
    w.println("executor: RetryPolicy maxAttempts(2), no retries; hedge to the next replica; "
        + (o.budgetRatio > 0 ? "LocalRetryBudget ratio " + o.budgetRatio : "no budget")
        + "; adaptive: HedgePolicy.adaptive(p, " + fmtMs(o.initialDelayMs) + " ms), defaults otherwise");
    w.println("extra = hedges sent / calls; won = hedges that answered first / hedges sent; cut = p99.9(none) /"
        + " p99.9; delay = the adaptive hedge delay sampled every 100 ms (min / median / max)"
        + (o.budgetRatio > 0 ? "; denied = hedges the budget refused / calls (warm-up included)" : ""));
    for (long seed : o.seeds) {
      for (String scenario : o.scenarios) {
        Result none = find(results, seed, scenario, "none");
        w.println();
        w.printf(Locale.ROOT, "## seed %d, %s", seed, scenario);
        if (none != null && scenario.equals("pauses")) {
          w.printf(Locale.ROOT, " (replicas paused %.2f%% of the time; no hedging: p90 %s, p95 %s, p99 %s ms)",
              none.pausedPct(), ms(none.p90()), ms(none.p95()), ms(none.p99()));
        }
        if (none != null && scenario.equals("saturated")) {
          w.printf(Locale.ROOT, " (no hedging: p90 %s, p95 %s, p99 %s ms)", ms(none.p90()), ms(none.p95()),
              ms(none.p99()));
        }
        w.println();
        w.println();
        w.println("| hedging | p50 ms | p99 ms | p99.9 ms | max ms | extra % | won % | p99.9 cut | adaptive delay ms |"
            + (scenario.equals("saturated") ? " server busy % | wasted work % |" : "")
            + (o.budgetRatio > 0 ? " hedges denied % |" : ""));
        w.println("|---|---:|---:|---:|---:|---:|---:|---:|---:|" + (scenario.equals("saturated") ? "---:|---:|" : "")
            + (o.budgetRatio > 0 ? "---:|" : ""));
        for (Result r : results) {
          if (r.seed() != seed || !r.scenario().equals(scenario)) {
            continue;
          }
          String cut = none == null ? "-" : String.format(Locale.ROOT, "%.1fx", (double) none.p999() / r.p999());
          String delay = r.delayMin() < 0 ? "-" : ms(r.delayMin()) + " / " + ms(r.delayMedian()) + " / "
              + ms(r.delayMax());
          w.printf(Locale.ROOT, "| %s | %s | %s | %s | %s | %.2f | %.1f | %s | %s |%s%n", r.config(), ms(r.p50()),
              ms(r.p99()), ms(r.p999()), ms(r.max()), r.extraPct(), r.wonPct(), cut, delay,
              (scenario.equals("saturated")
                  ? String.format(Locale.ROOT, " %.1f | %.2f |", r.busyPct(), r.wastedWorkPct()) : "")
                  + (o.budgetRatio > 0 ? String.format(Locale.ROOT, " %.2f |", 100.0 * r.hedgesDenied() / (o.warmup + r.calls())) : ""));
        }
      }
    }
    w.println();
    w.println("## target: in the best configuration (pauses), p99.9 cut >= 10x for <= 5 % extra requests");
    Map<Long, Boolean> holds = targetHolds(o, results);
    for (long seed : o.seeds) {
      Result none = find(results, seed, "pauses", "none");
      if (none == null) {
        continue;
      }
      Result best = null;
      for (Result r : results) {
        if (r.seed() == seed && r.scenario().equals("pauses") && !r.config().equals("none") && r.extraPct() <= 5.0
            && (best == null || r.p999() < best.p999())) {
          best = r;
        }
      }
      if (best == null) {
        w.printf(Locale.ROOT, "seed %d: no hedged configuration stays within 5 %% extra: NOT MET%n", seed);
      } else {
        w.printf(Locale.ROOT, "seed %d: best within 5 %% extra is %s: p99.9 %s -> %s ms (%.1fx) for +%.2f%%"
                + " requests: %s%n", seed, best.config(), ms(none.p999()), ms(best.p999()),
            (double) none.p999() / best.p999(), best.extraPct(), holds.get(seed) ? "MET" : "NOT MET");
      }
    }
    w.println();
    w.println("## executor checks (every configuration, warm-up included)");
    long losers = results.stream().mapToLong(Result::losersNotCancelled).sum();
    long left = results.stream().mapToLong(Result::timersLeft).sum();
    long idle = results.stream().mapToLong(Result::hedgeTimersFiredForNothing).sum();
    w.printf(Locale.ROOT, "losing attempts that finished without being cancelled: %d%n", losers);
    w.printf(Locale.ROOT, "events still scheduled after every call ended: %d%n", left);
    w.printf(Locale.ROOT, "executor timers that fired without sending a hedge: %d%n", idle);
    w.flush();
    return sw.toString();
  }

  static String csvMs(long nanos) {
    return nanos < 0 ? "" : String.format(Locale.ROOT, "%.3f", nanos / 1e6);
  }

  static String csv(List<Result> results) {
    StringBuilder b = new StringBuilder("seed,scenario,hedging,calls,p50_ms,p90_ms,p95_ms,p99_ms,p999_ms,max_ms,"
        + "mean_ms,hedges,hedges_won,hedges_denied,extra_pct,won_pct,delay_min_ms,delay_median_ms,delay_max_ms,"
        + "busy_pct,wasted_work_pct,paused_pct,losers_not_cancelled,timers_left,timers_for_nothing\n");
    for (Result r : results) {
      b.append(String.format(Locale.ROOT,
          "%d,%s,%s,%d,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%d,%d,%d,%.4f,%.3f,%s,%s,%s,%.3f,%.4f,%.4f,%d,%d,%d%n",
          r.seed(), r.scenario(), r.config(), r.calls(), r.p50() / 1e6, r.p90() / 1e6, r.p95() / 1e6,
          r.p99() / 1e6, r.p999() / 1e6, r.max() / 1e6, r.mean() / 1e6, r.hedges(), r.hedgesWon(),
          r.hedgesDenied(), r.extraPct(), r.wonPct(), csvMs(r.delayMin()), csvMs(r.delayMedian()),
          csvMs(r.delayMax()), r.busyPct(), r.wastedWorkPct(), r.pausedPct(), r.losersNotCancelled(),
          r.timersLeft(), r.hedgeTimersFiredForNothing()));
    }
    return b.toString();
  }
}
