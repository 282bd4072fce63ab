package io.retrybudget.bench.layers;

import io.retrybudget.budget.AdaptiveThrottle;
import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import io.retrybudget.retry.RetryPolicy;
import io.retrybudget.retry.SuccessAwareBudget;
import io.retrybudget.retry.http.RetryingHttpClient;
import io.retrybudget.server.example.LayerDemo;
import io.retrybudget.server.example.LayerDemo.Mode;
import io.retrybudget.server.example.LayerDemo.Service;
import io.retrybudget.testing.RedisServerProcess;
import io.vertx.core.Vertx;
import java.io.IOException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The three-layer demo as a program: user requests -> A -> B -> C on real loopback HTTP servers
 * (server-kit's LayerDemo). Scenarios: C failing 100 % (outage), C failing 30 % (partial), C
 * answering after the callers' per-attempt timeout (slow); each may follow a healthy phase. Modes:
 * naive, budget per layer, budget at the edge + suppression in the middle + pushback (fixed-ratio
 * budgets), and the same with success-aware budgets (adaptive throttle in front of the fleet
 * budget). Prints and writes: calls reaching C per user request, C's load per second (CSV, PNG),
 * the user-visible success rate. Starts its own redis-server for the budgets. See the README beside
 * this file.
 */
public final class LayersBench {
  private LayersBench() {}

  /**
   * One configuration of the layers: the wiring, the budgets' ratio, success-aware or not, the
   * attempts, and (suppressed wirings) the middle layers' deadline margin in ms, -1 when they read
   * no inbound deadline.
   */
  record Variant(String label, Mode mode, double ratio, boolean adaptive, int attempts, long marginMs) {
    String name() {
      String deadlines = mode != Mode.SUPPRESSED ? "" : marginMs < 0 ? ", deadlines off" : ", margin " + marginMs + " ms";
      return switch (label) {
        case "NAIVE" -> "naive";
        case "ADAPTIVE" -> "adaptive " + ratio + " x" + attempts + deadlines;
        case "BUDGET_PER_LAYER" -> "budget per layer " + ratio;
        default -> label.toLowerCase(java.util.Locale.ROOT) + " " + ratio + deadlines;
      };
    }

    Duration margin() {
      return marginMs < 0 ? null : Duration.ofMillis(marginMs);
    }
  }

  record Result(String scenario, Variant variant, int users, int ok, long cCalls, long bCalls, long aCalls,
      long throttledAtB, double[] cPerSecond, String load) {
    double cPerUser() {
      return cCalls / (double) users;
    }

    double success() {
      return ok / (double) users;
    }
  }

  record Settings(int rate, int slowRate, int seconds, int healthySeconds, double partial, int floor, long slowMs,
      Duration attemptTimeout, Duration throttleWindow, long seed) {}

  public static void main(String[] args) throws Exception {
    Map<String, String> o = options(args);
    Settings settings = new Settings(
        Integer.parseInt(o.getOrDefault("rate", "100")),
        Integer.parseInt(o.getOrDefault("slow-rate", "20")),
        Integer.parseInt(o.getOrDefault("seconds", "10")),
        Integer.parseInt(o.getOrDefault("healthy-seconds", "0")),
        Double.parseDouble(o.getOrDefault("partial-failure", "0.3")),
        Integer.parseInt(o.getOrDefault("floor", "1")),
        Long.parseLong(o.getOrDefault("slow-ms", "1000")),
        Duration.ofMillis(Long.parseLong(o.getOrDefault("attempt-timeout-ms", "200"))),
        Duration.ofMillis(Long.parseLong(o.getOrDefault("throttle-window-ms", "10000"))),
        Long.parseLong(o.getOrDefault("seed", "42")));
    List<Variant> variants = new ArrayList<>();
    List<Long> margins = new ArrayList<>();
    for (String m : o.getOrDefault("deadline-margins", "10").split(",")) {
      margins.add(m.equals("off") ? -1L : Long.parseLong(m));
    }
    List<String> modes = List.of(o.getOrDefault("modes", "naive,budget,suppressed,adaptive").split(","));
    if (modes.contains("naive")) {
      variants.add(new Variant("NAIVE", Mode.NAIVE, 0, false, 3, -1));
    }
    for (String r : o.getOrDefault("ratios", "0.1").split(",")) {
      double ratio = Double.parseDouble(r);
      if (modes.contains("budget")) {
        variants.add(new Variant("BUDGET_PER_LAYER", Mode.BUDGET_PER_LAYER, ratio, false, 3, -1));
      }
      for (long margin : margins) {
        if (modes.contains("suppressed")) {
          variants.add(new Variant("SUPPRESSED", Mode.SUPPRESSED, ratio, false, 3, margin));
        }
      }
    }
    double adaptiveRatio = Double.parseDouble(o.getOrDefault("adaptive-ratio", "0.5"));
    for (String n : o.getOrDefault("adaptive-attempts", "3,8").split(",")) {
      for (long margin : margins) {
        if (modes.contains("adaptive")) {
          variants.add(new Variant("ADAPTIVE", Mode.SUPPRESSED, adaptiveRatio, true, Integer.parseInt(n), margin));
        }
      }
    }
    List<String> scenarios = List.of(o.getOrDefault("scenarios", "outage,partial,slow,slow-flat").split(","));
    Path out = Path.of(o.getOrDefault("out", "bench/results/layers/layers"));
    if (out.getParent() != null) {
      Files.createDirectories(out.getParent());
    }
    if (o.containsKey("replot")) {
      replot(out, settings);
      return;
    }
    List<Result> results = new ArrayList<>();
    try (RedisServerProcess redis = RedisServerProcess.start();
         RedisBudgetClient budgets = RedisBudgetClient.builder(RedisConnectionOptions.standalone(redis.uri()).build())
             .callTimeout(Duration.ofMillis(500)).build()) { // the machine is shared: 200 ms was missed under load
      for (String scenario : scenarios) {
        for (Variant v : variants) {
          Result r = run(scenario, v, settings, budgets);
          results.add(r);
          System.out.printf("%-8s %-40s: users %d, ok %.4f, calls at C per user request %.3f (B %.3f, A %.3f), "
              + "throttled at B %d, load %s%n", scenario, v.name(), r.users(), r.success(), r.cPerUser(),
              r.bCalls() / (double) r.users(), r.aCalls() / (double) r.users(), r.throttledAtB(), r.load());
        }
      }
    }
    write(out, results, settings, scenarios);
  }

  /**
   * The policy of one caller ({@code layer}: "B" calls C, "A" calls B, "edge" calls A). Per-attempt
   * timeout 5 s, except in the slow scenarios: "slow-flat" gives every caller the same timeout T
   * (a common misconfiguration: each layer gives up on the one below while it is still retrying);
   * "slow" nests them as they should be: B's whole call is bounded by a deadline of 4 T, A waits
   * 4 T + 200 ms for B's answer, the edge 200 ms more for A's, so every layer hears the answer of
   * the one below (and its do-not-retry) instead of timing out first.
   */
  static RetryPolicy policy(String scenario, Variant v, Settings s, String layer) {
    RetryPolicy.Builder b = RetryPolicy.builder().maxAttempts(v.attempts()).backoff(Duration.ofMillis(10), Duration.ofMillis(50));
    Duration t = s.attemptTimeout();
    switch (scenario) {
      case "slow-flat" -> b.attemptTimeout(t);
      case "slow" -> {
        Duration bDeadline = t.multipliedBy(4);
        Duration aTimeout = bDeadline.plusMillis(200);
        Duration edgeTimeout = aTimeout.plusMillis(200);
        switch (layer) {
          case "B" -> b.attemptTimeout(t).deadline(bDeadline);
          case "A" -> b.attemptTimeout(aTimeout).deadline(aTimeout.multipliedBy(3));
          default -> b.attemptTimeout(edgeTimeout).deadline(edgeTimeout.multipliedBy(3));
        }
      }
      default -> b.attemptTimeout(Duration.ofSeconds(5));
    }
    return b.build();
  }

  static Result run(String scenario, Variant v, Settings s, RedisBudgetClient budgets) throws Exception {
    Vertx vertx = Vertx.vertx();
    List<AutoCloseable> closing = new ArrayList<>();
    ScheduledExecutorService timer = Executors.newScheduledThreadPool(1);
    try {
      String run = UUID.randomUUID().toString().substring(0, 8);
      List<SuccessAwareBudget> aware = new ArrayList<>();
      java.util.function.Function<String, RetryBudget> budget = dep -> {
        if (v.mode() == Mode.NAIVE) {
          return null;
        }
        RetryBudget fleet = budgets.budget(BudgetConfig.builder(dep + "-" + run).ratio(v.ratio())
            .minRetriesPerSecond(s.floor()).build());
        if (!v.adaptive()) {
          return fleet;
        }
        SuccessAwareBudget a = SuccessAwareBudget.builder(fleet)
            .throttle(AdaptiveThrottle.Config.builder().window(s.throttleWindow()).buckets(10).build()).build();
        aware.add(a);
        return a;
      };
      boolean slow = scenario.startsWith("slow");
      int rate = slow ? s.slowRate() : s.rate();
      double failure = switch (scenario) {
        case "outage" -> 1.0;
        case "partial" -> s.partial();
        default -> 0.0;
      };
      long delay = slow ? s.slowMs() : 0;
      java.util.concurrent.atomic.AtomicBoolean failing = new java.util.concurrent.atomic.AtomicBoolean(s.healthySeconds() == 0);
      Service c = LayerDemo.backend(vertx, () -> failing.get() ? failure : 0.0, () -> failing.get() ? delay : 0, s.seed());
      Service b = LayerDemo.layer(vertx, c.uri(), v.mode(), policy(scenario, v, s, "B"), budget.apply("c"), v.margin());
      Service a = LayerDemo.layer(vertx, b.uri(), v.mode(), policy(scenario, v, s, "A"), budget.apply("b"), v.margin());
      closing.add(c);
      closing.add(b);
      closing.add(a);
      HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
      RetryingHttpClient edge = LayerDemo.client(http, policy(scenario, v, s, "edge"), budget.apply("a")).build();
      closing.add(edge);
      HttpRequest request = HttpRequest.newBuilder(a.uri().resolve("/work")).timeout(Duration.ofSeconds(30)).GET().build();
      List<CompletableFuture<Boolean>> measured = java.util.Collections.synchronizedList(new ArrayList<>());
      List<CompletableFuture<Boolean>> all = java.util.Collections.synchronizedList(new ArrayList<>());
      int seconds = s.healthySeconds() + s.seconds();
      double[] perSecond = new double[seconds + 10];
      AtomicInteger sent = new AtomicInteger();
      long periodNanos = 1_000_000_000L / rate;
      int healthyUsers = rate * s.healthySeconds();
      int total = rate * seconds;
      long[] lastC = {0};
      long[] atFailure = {s.healthySeconds() == 0 ? 0 : -1, 0, 0};
      AtomicInteger second = new AtomicInteger();
      var sampler = timer.scheduleAtFixedRate(() -> {
        int sec = second.getAndIncrement();
        long now = c.calls();
        if (sec < perSecond.length) {
          perSecond[sec] = now - lastC[0];
        }
        lastC[0] = now;
      }, 1, 1, TimeUnit.SECONDS);
      CompletableFuture<Void> done = new CompletableFuture<>();
      var sender = timer.scheduleAtFixedRate(() -> {
        int n = sent.get();
        if (n >= total) {
          done.complete(null);
          return;
        }
        if (n == healthyUsers && !failing.get()) {
          atFailure[0] = c.calls(); // the failing phase starts with this user request
          atFailure[1] = b.calls();
          atFailure[2] = a.calls();
          failing.set(true);
        }
        sent.incrementAndGet();
        CompletableFuture<Boolean> call = edge.sendAsync(request, HttpResponse.BodyHandlers.ofString())
            .handle((resp, error) -> error == null && resp.statusCode() == 200);
        all.add(call);
        if (n >= healthyUsers) {
          measured.add(call);
        }
      }, 0, periodNanos, TimeUnit.NANOSECONDS);
      done.get(seconds + 60L, TimeUnit.SECONDS);
      sender.cancel(false);
      CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).get(120, TimeUnit.SECONDS);
      a.idle().get(30, TimeUnit.SECONDS); // calls below of users who gave up: counted once they ended
      b.idle().get(30, TimeUnit.SECONDS);
      sampler.cancel(false);
      int ok = 0;
      for (CompletableFuture<Boolean> f : measured) {
        ok += f.join() ? 1 : 0;
      }
      long throttled = v.adaptive() ? aware.get(0).throttled() : 0; // aware.get(0): B's budget for C
      int users = total - healthyUsers;
      return new Result(scenario, v, users, ok, c.calls() - Math.max(0, atFailure[0]), b.calls() - atFailure[1],
          a.calls() - atFailure[2], throttled,
          java.util.Arrays.copyOf(perSecond, Math.min(perSecond.length, Math.max(1, second.get()))), loadAverage());
    } finally {
      timer.shutdownNow();
      for (AutoCloseable cl : closing) {
        cl.close();
      }
      vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }
  }

  /** The 1, 5 and 15 minute load averages (/proc/loadavg), "?" where there is none. */
  static String loadAverage() {
    try {
      String[] f = Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+");
      return f[0] + " " + f[1] + " " + f[2];
    } catch (IOException | RuntimeException e) {
      return "?";
    }
  }

  static void write(Path out, List<Result> results, Settings s, List<String> scenarios) throws IOException {
    StringBuilder summary = new StringBuilder();
    summary.append(String.format("three layers (user -> A -> B -> C), %d user requests/s (slow: %d/s) for %d s after %d s "
        + "healthy (figures: the failing phase only); 10-50 ms full-jitter backoff in every layer, per-attempt timeout "
        + "5 s; slow scenarios: C answers after %d ms; slow-flat: every caller's timeout T = %d ms; slow: B's timeout T "
        + "and deadline 4 T, A's timeout 4 T + 200 ms, the edge's 200 ms more; budgets: ratio as listed, floor %d "
        + "retries/s, window 10 s, call timeout 500 ms; adaptive: retry throttle K 2, window %d ms, in front of the "
        + "fleet budget, at every caller%n", s.rate(), s.slowRate(), s.seconds(), s.healthySeconds(), s.slowMs(),
        s.attemptTimeout().toMillis(), s.floor(), s.throttleWindow().toMillis()));
    summary.append("deadline margin: the middle layers' margin on an inbound X-Request-Deadline-Ms (ms; off: inbound "
        + "deadlines ignored; - : no middle layers); load: the 1/5/15 min load averages when the mode ended (shared "
        + "2-core machine)\n");
    summary.append(String.format("%-9s %-17s %6s %8s %6s %7s %9s %10s %10s %10s %10s  %s%n", "scenario", "mode", "ratio",
        "attempts", "margin", "users", "success", "C/user", "B/user", "A/user", "throttled", "load"));
    StringBuilder csv = new StringBuilder("scenario,mode,ratio,attempts,margin,second,c_calls\n");
    for (Result r : results) {
      Variant v = r.variant();
      String margin = v.mode() != Mode.SUPPRESSED ? "-" : v.marginMs() < 0 ? "off" : Long.toString(v.marginMs());
      summary.append(String.format("%-9s %-17s %6.2f %8d %6s %7d %9.4f %10.3f %10.3f %10.3f %10d  %s%n", r.scenario(),
          v.label(), v.ratio(), v.attempts(), margin, r.users(), r.success(), r.cPerUser(), r.bCalls() / (double) r.users(),
          r.aCalls() / (double) r.users(), r.throttledAtB(), r.load()));
      for (int sec = 0; sec < r.cPerSecond().length; sec++) {
        csv.append(r.scenario()).append(',').append(v.label()).append(',').append(v.ratio()).append(',')
            .append(v.attempts()).append(',').append(v.marginMs()).append(',').append(sec + 1).append(',')
            .append((long) r.cPerSecond()[sec]).append('\n');
      }
    }
    Files.writeString(Path.of(out + "-summary.txt"), summary);
    Files.writeString(Path.of(out + "-c-load.csv"), csv);
    System.out.print(summary);
    charts(out, results, s, scenarios);
  }

  static void charts(Path out, List<Result> results, Settings s, List<String> scenarios) throws IOException {
    for (String scenario : scenarios) {
      List<LineChart.Series> series = new ArrayList<>();
      for (Result r : results) {
        if (r.scenario().equals(scenario)) {
          series.add(new LineChart.Series(r.variant().name(), r.cPerSecond()));
        }
      }
      String what = switch (scenario) {
        case "outage" -> "C failing 100 %";
        case "partial" -> "C failing " + Math.round(s.partial() * 100) + " %";
        case "slow" -> "C slow, nested timeouts";
        default -> "C slow, flat timeouts";
      };
      int rate = scenario.startsWith("slow") ? s.slowRate() : s.rate();
      String from = s.healthySeconds() == 0 ? "" : " from second " + (s.healthySeconds() + 1);
      LineChart.write(Path.of(out + "-" + scenario + ".png"), "Calls reaching C per second, " + what + from + ", "
          + rate + " user requests/s", "second", "calls at C / s (log)", series, true);
    }
  }

  /** Draws the charts again from a run's CSV (after a change of the charts only). */
  static void replot(Path out, Settings s) throws IOException {
    Map<String, List<Double>> values = new LinkedHashMap<>();
    Map<String, Variant> variants = new LinkedHashMap<>();
    List<String> scenarios = new ArrayList<>();
    for (String line : Files.readAllLines(Path.of(out + "-c-load.csv")).subList(1, Files.readAllLines(Path.of(out + "-c-load.csv")).size())) {
      String[] f = line.split(",");
      String key = f[0] + "," + f[1] + "," + f[2] + "," + f[3] + "," + f[4];
      if (!scenarios.contains(f[0])) {
        scenarios.add(f[0]);
      }
      Mode mode = f[1].equals("ADAPTIVE") ? Mode.SUPPRESSED : Mode.valueOf(f[1]);
      variants.putIfAbsent(key, new Variant(f[1], mode, Double.parseDouble(f[2]), f[1].equals("ADAPTIVE"),
          Integer.parseInt(f[3]), Long.parseLong(f[4])));
      values.computeIfAbsent(key, k -> new ArrayList<>()).add(Double.parseDouble(f[6]));
    }
    List<Result> results = new ArrayList<>();
    for (var e : values.entrySet()) {
      double[] perSecond = e.getValue().stream().mapToDouble(Double::doubleValue).toArray();
      results.add(new Result(e.getKey().split(",")[0], variants.get(e.getKey()), 1, 0, 0, 0, 0, 0, perSecond, "?"));
    }
    charts(out, results, s, scenarios);
  }

  static Map<String, String> options(String[] args) {
    Map<String, String> o = new LinkedHashMap<>();
    for (int i = 0; i < args.length; i++) {
      if (args[i].equals("--help")) {
        System.out.println("options: --rate 100 --slow-rate 20 --seconds 10 --healthy-seconds 0 --partial-failure 0.3 "
            + "--ratios 0.1[,0.5] --adaptive-ratio 0.5 --adaptive-attempts 3,8 --throttle-window-ms 10000 --floor 1 "
            + "--slow-ms 1000 --attempt-timeout-ms 200 --scenarios outage,partial,slow,slow-flat --seed 42 "
            + "--deadline-margins 10[,off,30] --modes naive,budget,suppressed,adaptive --out bench/results/layers/layers");
        System.exit(0);
      }
      if (!args[i].startsWith("--") || i + 1 >= args.length) {
        throw new IllegalArgumentException("expected --name value, got '" + args[i] + "'");
      }
      o.put(args[i].substring(2), args[++i]);
    }
    return o;
  }
}
