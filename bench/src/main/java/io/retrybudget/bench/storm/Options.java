package io.retrybudget.bench.storm;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Command-line options of the storm simulator ({@code --name value}). */
final class Options {
  String mode = "storm";
  int clients = 100;
  double rate = 2000; // first attempts per second, whole fleet
  Double ratePerClient; // if given: rate = ratePerClient x clients
  // the fleet budget's seed config (fleet strategy): the product's defaults unless given
  double ratio = 0.10;
  int minRetriesPerSecond = 10;
  int windowSeconds = 10;
  // simulated processes: RedisBudgetClients, each with one connection and clients / budgetClients
  // budgets; 0 = one per 1,000 clients (rounded up)
  int budgetClients = 0;
  // a name for the design under test, written into the summary and the CSVs' header comment
  String label = "";
  // compare mode: two earlier runs' output prefixes
  Path oldPrefix;
  Path newPrefix;
  String oldLabel = "old";
  String newLabel = "new";
  int outageSeconds = 30;
  int healthySeconds = 5; // before and after the outage
  int warmupSeconds = 5; // healthy traffic before t=0, not recorded
  List<Strategy> strategies = new ArrayList<>(List.of(Strategy.values()));
  int maxAttempts = 3;
  int backoffMinMillis = 10;
  int backoffMaxMillis = 50;
  long seed = 42;
  // fleet strategy: RedisBudgetClient settings; null = the SDK's default
  Integer callTimeoutMillis;
  String fallback;
  Path out = Path.of("bench/results/storm/storm");
  // a fault injected into Redis during the outage: none or scriptflush (SCRIPT FLUSH)
  String fault = "none";
  // standalone, or cluster (3 masters, each with a replica)
  String redis = "standalone";
  int faultAtOutageSecond = 10;
  // steady mode
  List<Double> steadyRates = new ArrayList<>(List.of(100.0, 5000.0));
  int steadySeconds = 20;
  int latencyCalls = 20_000;

  static Options parse(String[] args) {
    Options o = new Options();
    boolean outGiven = false;
    for (int i = 0; i < args.length; i++) {
      String name = args[i];
      if (name.equals("--help") || name.equals("-h")) {
        usage(null);
      }
      if (i + 1 >= args.length) {
        usage("missing value for " + name);
      }
      String v = args[++i];
      try {
        switch (name) {
          case "--mode" -> {
            if (!v.equals("storm") && !v.equals("steady") && !v.equals("compare")) {
              usage("--mode must be storm, steady or compare");
            }
            o.mode = v;
          }
          case "--clients" -> o.clients = positive(name, Integer.parseInt(v));
          case "--rate" -> o.rate = positive(name, Double.parseDouble(v));
          case "--rate-per-client" -> o.ratePerClient = positive(name, Double.parseDouble(v));
          case "--ratio" -> {
            double r = Double.parseDouble(v);
            if (!(r >= 0 && r <= 1000)) {
              usage("--ratio must be in [0, 1000]");
            }
            o.ratio = r;
          }
          case "--min-retries-per-sec" -> o.minRetriesPerSecond = nonNegative(name, Integer.parseInt(v));
          case "--window-seconds" -> o.windowSeconds = positive(name, Integer.parseInt(v));
          case "--budget-clients" -> o.budgetClients = positive(name, Integer.parseInt(v));
          case "--label" -> o.label = v;
          case "--old" -> o.oldPrefix = Path.of(v);
          case "--new" -> o.newPrefix = Path.of(v);
          case "--old-label" -> o.oldLabel = v;
          case "--new-label" -> o.newLabel = v;
          case "--outage-seconds" -> o.outageSeconds = positive(name, Integer.parseInt(v));
          case "--healthy-seconds" -> o.healthySeconds = nonNegative(name, Integer.parseInt(v));
          case "--warmup-seconds" -> o.warmupSeconds = nonNegative(name, Integer.parseInt(v));
          case "--strategies" -> {
            o.strategies = new ArrayList<>();
            for (String s : v.split(",")) {
              o.strategies.add(Strategy.parse(s.trim()));
            }
          }
          case "--max-attempts" -> o.maxAttempts = positive(name, Integer.parseInt(v));
          case "--backoff-min-ms" -> o.backoffMinMillis = nonNegative(name, Integer.parseInt(v));
          case "--backoff-max-ms" -> o.backoffMaxMillis = nonNegative(name, Integer.parseInt(v));
          case "--seed" -> o.seed = Long.parseLong(v);
          case "--call-timeout-ms" -> o.callTimeoutMillis = positive(name, Integer.parseInt(v));
          case "--fallback" -> o.fallback = v.toUpperCase(java.util.Locale.ROOT);
          case "--fault" -> {
            if (!v.equals("none") && !v.equals("scriptflush") && !v.equals("killmaster")) {
              usage("--fault must be none, scriptflush or killmaster");
            }
            o.fault = v;
          }
          case "--redis" -> {
            if (!v.equals("standalone") && !v.equals("cluster")) {
              usage("--redis must be standalone or cluster");
            }
            o.redis = v;
          }
          case "--fault-at-outage-second" -> o.faultAtOutageSecond = nonNegative(name, Integer.parseInt(v));
          case "--out" -> {
            o.out = Path.of(v);
            outGiven = true;
          }
          case "--rates" -> {
            o.steadyRates = new ArrayList<>();
            for (String s : v.split(",")) {
              o.steadyRates.add(positive(name, Double.parseDouble(s.trim())));
            }
          }
          case "--seconds" -> o.steadySeconds = positive(name, Integer.parseInt(v));
          case "--latency-calls" -> o.latencyCalls = positive(name, Integer.parseInt(v));
          default -> usage("unknown option " + name);
        }
      } catch (NumberFormatException e) {
        usage("bad number for " + name + ": " + v);
      }
    }
    if (o.fault.equals("killmaster") && !o.redis.equals("cluster")) {
      usage("--fault killmaster needs --redis cluster");
    }
    if (!o.fault.equals("none") && o.faultAtOutageSecond >= o.outageSeconds) {
      usage("--fault-at-outage-second must be inside the outage (< --outage-seconds)");
    }
    if (o.backoffMaxMillis < o.backoffMinMillis) {
      usage("--backoff-max-ms must be >= --backoff-min-ms");
    }
    if (o.ratePerClient != null) {
      o.rate = o.ratePerClient * o.clients;
    }
    if (o.budgetClients == 0) {
      o.budgetClients = (o.clients + 999) / 1000;
    }
    if (o.budgetClients > o.clients) {
      usage("--budget-clients must not exceed --clients");
    }
    if (o.mode.equals("compare") && (o.oldPrefix == null || o.newPrefix == null)) {
      usage("--mode compare needs --old PREFIX and --new PREFIX (the --out of two storm runs)");
    }
    if (!outGiven && o.mode.equals("steady")) {
      o.out = Path.of("bench/results/steady/steady");
    }
    return o;
  }

  private static int positive(String name, int v) {
    if (v <= 0) {
      usage(name + " must be positive");
    }
    return v;
  }

  private static double positive(String name, double v) {
    if (!(v > 0)) {
      usage(name + " must be positive");
    }
    return v;
  }

  private static int nonNegative(String name, int v) {
    if (v < 0) {
      usage(name + " must not be negative");
    }
    return v;
  }

  private static void usage(String error) {
    String text = """
        StormSimulator [--mode storm|steady|compare] [options]
          storm:  --clients 100 --rate 2000 (or --rate-per-client 2) --outage-seconds 30 --healthy-seconds 5
                  --strategies none,local,fleet --max-attempts 3 --backoff-min-ms 10
                  --backoff-max-ms 50 --seed 42 --out bench/results/storm/storm
                  [--call-timeout-ms 20] [--fallback local|allow|deny] (fleet: SDK defaults if absent)
                  [--fault none|scriptflush|killmaster] [--fault-at-outage-second 10] (SCRIPT FLUSH, or kill -9
                  of the budget's master, then) [--redis standalone|cluster] (cluster: 3 masters + 3 replicas)
                  [--ratio 0.10] [--min-retries-per-sec 10] [--window-seconds 10] (fleet budget's seed config)
                  [--warmup-seconds 5] (healthy traffic before t=0, not recorded)
                  [--budget-clients N] (RedisBudgetClients = simulated processes; default 1 per 1,000 clients)
                  [--label NAME] (the design under test, for the summary)
                  (writes <out>.csv, <out>-redis.csv, <out>.png, <out>-summary.txt)
          compare: --old PREFIX --new PREFIX [--old-label old] [--new-label new] --out PREFIX
                  (two storm runs' --out; writes <out>.png and <out>-summary.md)
          steady: --rates 100,5000 --seconds 20 --latency-calls 20000
                  --out bench/results/steady/steady (writes <out>-summary.txt)
        """;
    if (error != null) {
      throw new IllegalArgumentException(error + "\n" + text);
    }
    System.out.println(text);
    throw new IllegalArgumentException("help shown");
  }
}
