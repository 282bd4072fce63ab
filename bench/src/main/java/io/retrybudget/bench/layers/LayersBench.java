package io.retrybudget.bench.layers;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.budget.redis.RedisConnectionOptions;
import io.retrybudget.retry.RetryPolicy;
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
 * (server-kit's LayerDemo), C failing 100 % (outage) or 30 % (partial outage), in the modes naive,
 * budget per layer, and budget at the edge + suppression in the middle + pushback. Prints and
 * writes: calls reaching C per user request, C's load per second (CSV, PNG), the user-visible
 * success rate. Starts its own redis-server for the budgets. See the README beside this file.
 */
public final class LayersBench {
  private LayersBench() {}

  record Result(String scenario, Mode mode, double ratio, int users, int ok, long cCalls, long bCalls, long aCalls,
      double[] cPerSecond) {
    double cPerUser() {
      return cCalls / (double) users;
    }

    double success() {
      return ok / (double) users;
    }
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> o = options(args);
    int rate = Integer.parseInt(o.getOrDefault("rate", "100"));
    int seconds = Integer.parseInt(o.getOrDefault("seconds", "10"));
    double partial = Double.parseDouble(o.getOrDefault("partial-failure", "0.3"));
    int floor = Integer.parseInt(o.getOrDefault("floor", "1"));
    List<Double> ratios = new ArrayList<>();
    for (String r : o.getOrDefault("ratios", "0.1").split(",")) {
      ratios.add(Double.parseDouble(r));
    }
    long seed = Long.parseLong(o.getOrDefault("seed", "42"));
    Path out = Path.of(o.getOrDefault("out", "bench/results/layers"));
    if (out.getParent() != null) {
      Files.createDirectories(out.getParent());
    }
    RetryPolicy three = RetryPolicy.builder().maxAttempts(3).backoff(Duration.ofMillis(10), Duration.ofMillis(50))
        .attemptTimeout(Duration.ofSeconds(5)).build();
    List<Result> results = new ArrayList<>();
    try (RedisServerProcess redis = RedisServerProcess.start();
         RedisBudgetClient budgets = RedisBudgetClient.builder(RedisConnectionOptions.standalone(redis.uri()).build())
             .callTimeout(Duration.ofMillis(200)).build()) {
      for (String scenario : List.of("outage", "partial")) {
        double failure = scenario.equals("outage") ? 1.0 : partial;
        for (double ratio : ratios) {
          for (Mode mode : Mode.values()) {
            if (mode == Mode.NAIVE && ratio != ratios.get(0)) {
              continue; // naive has no budget: once per scenario
            }
            Result r = run(scenario, failure, mode, ratio, floor, rate, seconds, seed, three, budgets);
            results.add(r);
            System.out.printf("%-8s %-17s ratio %.2f: users %d, ok %.4f, calls at C per user request %.3f (B %.3f, A %.3f)%n",
                scenario, mode, ratio, r.users(), r.success(), r.cPerUser(), r.bCalls() / (double) r.users(),
                r.aCalls() / (double) r.users());
          }
        }
      }
    }
    write(out, results, rate, seconds, partial, floor);
  }

  static Result run(String scenario, double failure, Mode mode, double ratio, int floor, int rate, int seconds, long seed,
      RetryPolicy policy, RedisBudgetClient budgets) throws Exception {
    Vertx vertx = Vertx.vertx();
    List<AutoCloseable> closing = new ArrayList<>();
    ScheduledExecutorService timer = Executors.newScheduledThreadPool(1);
    try {
      String run = UUID.randomUUID().toString().substring(0, 8);
      java.util.function.Function<String, RetryBudget> budget = dep -> mode == Mode.NAIVE ? null
          : budgets.budget(BudgetConfig.builder(dep + "-" + run).ratio(ratio).minRetriesPerSecond(floor).build());
      Service c = LayerDemo.backend(vertx, failure, 0, seed);
      Service b = LayerDemo.layer(vertx, c.uri(), mode, policy, budget.apply("c"));
      Service a = LayerDemo.layer(vertx, b.uri(), mode, policy, budget.apply("b"));
      closing.add(c);
      closing.add(b);
      closing.add(a);
      HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
      RetryingHttpClient.Builder eb = RetryingHttpClient.builder(http).policy(policy);
      RetryBudget edgeBudget = budget.apply("a");
      if (edgeBudget != null) {
        eb.budget(edgeBudget);
      }
      RetryingHttpClient edge = eb.build();
      closing.add(edge);
      HttpRequest request = HttpRequest.newBuilder(a.uri().resolve("/work")).timeout(Duration.ofSeconds(30)).GET().build();
      List<CompletableFuture<Boolean>> calls = java.util.Collections.synchronizedList(new ArrayList<>());
      double[] perSecond = new double[seconds + 5];
      AtomicInteger sent = new AtomicInteger();
      long periodNanos = 1_000_000_000L / rate;
      int total = rate * seconds;
      long[] lastC = {0};
      AtomicInteger second = new AtomicInteger();
      var sampler = timer.scheduleAtFixedRate(() -> {
        int s = second.getAndIncrement();
        long now = c.calls();
        if (s < perSecond.length) {
          perSecond[s] = now - lastC[0];
        }
        lastC[0] = now;
      }, 1, 1, TimeUnit.SECONDS);
      CompletableFuture<Void> done = new CompletableFuture<>();
      var sender = timer.scheduleAtFixedRate(() -> {
        if (sent.get() >= total) {
          done.complete(null);
          return;
        }
        sent.incrementAndGet();
        calls.add(edge.sendAsync(request, HttpResponse.BodyHandlers.ofString())
            .handle((resp, error) -> error == null && resp.statusCode() == 200));
      }, 0, periodNanos, TimeUnit.NANOSECONDS);
      done.get(seconds + 60L, TimeUnit.SECONDS);
      sender.cancel(false);
      CompletableFuture.allOf(calls.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
      sampler.cancel(false);
      int ok = 0;
      for (CompletableFuture<Boolean> f : calls) {
        ok += f.join() ? 1 : 0;
      }
      return new Result(scenario, mode, ratio, total, ok, c.calls(), b.calls(), a.calls(),
          java.util.Arrays.copyOf(perSecond, Math.min(perSecond.length, Math.max(1, second.get()))));
    } finally {
      timer.shutdownNow();
      for (AutoCloseable cl : closing) {
        cl.close();
      }
      vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }
  }

  static void write(Path out, List<Result> results, int rate, int seconds, double partial, int floor) throws IOException {
    StringBuilder summary = new StringBuilder();
    summary.append(String.format("three layers (user -> A -> B -> C), %d user requests/s for %d s, 3 attempts and "
        + "10-50 ms full-jitter backoff in every layer; budgets: ratio as listed, floor %d retries/s, window 10 s%n", rate, seconds, floor));
    summary.append(String.format("%-8s %-17s %6s %7s %9s %10s %10s %10s%n", "scenario", "mode", "ratio", "users", "success",
        "C/user", "B/user", "A/user"));
    StringBuilder csv = new StringBuilder("scenario,mode,ratio,second,c_calls\n");
    for (Result r : results) {
      summary.append(String.format("%-8s %-17s %6.2f %7d %9.4f %10.3f %10.3f %10.3f%n", r.scenario(), r.mode(), r.ratio(),
          r.users(), r.success(), r.cPerUser(), r.bCalls() / (double) r.users(), r.aCalls() / (double) r.users()));
      for (int s = 0; s < r.cPerSecond().length; s++) {
        csv.append(r.scenario()).append(',').append(r.mode()).append(',').append(r.ratio()).append(',').append(s + 1)
            .append(',').append((long) r.cPerSecond()[s]).append('\n');
      }
    }
    Files.writeString(Path.of(out + "-summary.txt"), summary);
    Files.writeString(Path.of(out + "-c-load.csv"), csv);
    System.out.print(summary);
    for (String scenario : List.of("outage", "partial")) {
      List<LineChart.Series> series = new ArrayList<>();
      for (Result r : results) {
        if (r.scenario().equals(scenario)) {
          series.add(new LineChart.Series(r.mode() + (r.mode() == Mode.NAIVE ? "" : " (ratio " + r.ratio() + ")"), r.cPerSecond()));
        }
      }
      String what = scenario.equals("outage") ? "C failing 100 %" : "C failing " + Math.round(partial * 100) + " %";
      LineChart.write(Path.of(out + "-" + scenario + ".png"), "Calls reaching C per second, " + what + ", "
          + rate + " user requests/s", "second", "calls at C / s (log)", series, true);
    }
  }

  static Map<String, String> options(String[] args) {
    Map<String, String> o = new LinkedHashMap<>();
    for (int i = 0; i < args.length; i++) {
      if (args[i].equals("--help")) {
        System.out.println("options: --rate 100 --seconds 10 --partial-failure 0.3 --ratios 0.1[,0.5] --floor 1 --seed 42 "
            + "--out bench/results/layers");
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
