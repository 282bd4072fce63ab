package io.retrybudget.bench.metastable;

import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import io.retrybudget.retry.RetryScheduler;
import io.retrybudget.retry.http.RetryingHttpClient;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * One client process of a real run: its share of every arm's clients ({@code clients / jvms}), each
 * a {@link RetryingHttpClient} of its own with its own budget ({@link Arm#clientBudget}); the
 * fleet arm's budgets come from one {@link RedisBudgetClient} of this process. A ticker releases
 * first attempts every {@value ModelRun#TICK_MILLIS} ms at this process's share of the rate, round
 * robin over the arm's clients. Prints {@code LOADED} once every client is built and the fleet
 * budget has reached Redis, waits for {@code GO <epochMillis>} on stdin, runs the schedule, writes
 * {@code arm,second,<CallStats.COLUMNS>,latencies} and exits. Arguments:
 * {@code <out.csv> <scenario> <afterSeconds> <Params.encode> <jvmIndex> <jvms> <arm>=<redisUri>,...|-
 * <arm>=<port>,...}.
 */
public final class FleetMain {
  private FleetMain() {}

  public static void main(String[] args) throws Exception {
    Path out = Path.of(args[0]);
    Scenario scenario = Scenario.byId(args[1], Integer.parseInt(args[2]));
    Params params = Params.decode(args[3]);
    int index = Integer.parseInt(args[4]);
    int jvms = Integer.parseInt(args[5]);
    Map<Arm, String> redisUris = new LinkedHashMap<>();
    if (!args[6].equals("-")) {
      for (String kv : args[6].split(",")) {
        int eq = kv.indexOf('=');
        redisUris.put(Arm.byId(kv.substring(0, eq)), kv.substring(eq + 1));
      }
    }
    Map<Arm, URI> targets = new LinkedHashMap<>();
    for (String kv : args[7].split(",")) {
      String[] p = kv.split("=");
      targets.put(Arm.byId(p[0]), URI.create("http://127.0.0.1:" + p[1] + "/work"));
    }
    int perJvm = params.clients() / jvms + (index < params.clients() % jvms ? 1 : 0);

    long[] epoch = {Long.MAX_VALUE};
    LongSupplier sinceStart = () -> System.currentTimeMillis() - epoch[0];
    ScheduledExecutorService timers = Executors.newScheduledThreadPool(2, daemon("retry-timers"));
    RetryScheduler scheduler = RetryScheduler.of(timers);
    ExecutorService httpThreads = Executors.newCachedThreadPool(daemon("http"));
    ScheduledExecutorService ticker = Executors.newSingleThreadScheduledExecutor(daemon("ticker"));
    Map<Arm, RedisBudgetClient> redis = new LinkedHashMap<>();
    Map<Arm, List<RetryingHttpClient>> clients = new LinkedHashMap<>();
    Map<Arm, CallStats> stats = new LinkedHashMap<>();
    List<RetryBudget> budgets = new ArrayList<>();
    for (Map.Entry<Arm, URI> e : targets.entrySet()) {
      Arm arm = e.getKey();
      if (arm.fleetBudget()) {
        // a budget call may take 250 ms (the SDK's default is 20 ms): this 2-core machine is shared
        // at load averages near 20, and a budget answering from its fallback is not what is measured
        String uri = redisUris.get(arm);
        if (uri == null) {
          throw new IllegalArgumentException("no Redis given for arm " + arm.id());
        }
        redis.put(arm, RedisBudgetClient.builder(RedisConnectionOptions.standalone(uri).build())
            .callTimeout(Duration.ofMillis(250)).build());
      }
      RedisBudgetClient rc = redis.get(arm);
      // HTTP/1.1: java.net.http does not upgrade these requests to h2c, and every upgrade attempt
      // costs; no connect timeout (each one is a timer under the client's lock)
      HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).executor(httpThreads).build();
      CallStats cs = new CallStats(new PerSecond(scenario.totalSeconds(), CallStats.COLUMNS), sinceStart);
      stats.put(arm, cs);
      List<RetryingHttpClient> list = new ArrayList<>();
      String budgetName = "metastable-" + scenario.id();
      for (int i = 0; i < perJvm; i++) {
        Arm.ClientBudget cb = arm.clientBudget(budgetName, System::currentTimeMillis,
            () -> rc.budget(Arm.fleetConfig(budgetName)));
        RetryingHttpClient.Builder b = RetryingHttpClient.builder(http).policy(ModelRun.policy(params))
            .listener(cs.listener()).listener(cb.listener()).executor(x -> x.scheduler(scheduler));
        if (cb.budget() != null) {
          b.budget(cb.budget());
          budgets.add(cb.budget());
        }
        list.add(b.build());
      }
      clients.put(arm, list);
      warmUp(http, e.getValue());
    }
    for (Map.Entry<Arm, RedisBudgetClient> e : redis.entrySet()) {
      long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (e.getValue().isDegraded() && System.nanoTime() < until) {
        Thread.sleep(50);
      }
      if (e.getValue().isDegraded()) {
        System.out.println("WARNING: a budget of " + e.getKey().id() + " still answered from its fallback 30 s after start");
      }
    }
    System.out.println("LOADED");
    System.out.flush();
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String go = in.readLine();
    if (go == null || !go.startsWith("GO ")) {
      throw new IllegalStateException("expected GO <epochMillis> on stdin, got " + go);
    }
    epoch[0] = Long.parseLong(go.substring(3).trim());
    Thread.sleep(Math.max(0, epoch[0] - System.currentTimeMillis()));

    Map<Arm, Pacer> pacers = new LinkedHashMap<>();
    Map<Arm, int[]> next = new LinkedHashMap<>();
    for (Arm arm : targets.keySet()) {
      pacers.put(arm, new Pacer(scenario, params.firstRate() / jvms));
      next.put(arm, new int[1]);
    }
    long end = scenario.totalSeconds() * 1000L;
    ticker.scheduleAtFixedRate(() -> {
      long now = sinceStart.getAsLong();
      if (now >= end) {
        return;
      }
      for (Map.Entry<Arm, Pacer> e : pacers.entrySet()) {
        Arm arm = e.getKey();
        int due = e.getValue().due(now);
        List<RetryingHttpClient> list = clients.get(arm);
        int[] n = next.get(arm);
        for (int k = 0; k < due && !list.isEmpty(); k++) {
          send(list.get(n[0]), targets.get(arm), stats.get(arm), sinceStart);
          n[0] = (n[0] + 1) % list.size();
        }
      }
    }, 0, ModelRun.TICK_MILLIS, TimeUnit.MILLISECONDS);
    // progress in the log, every 5 s: what the last whole second saw per arm
    ticker.scheduleAtFixedRate(() -> {
      int s = (int) (sinceStart.getAsLong() / 1000) - 1;
      if (s < 0 || s >= scenario.totalSeconds()) {
        return;
      }
      StringBuilder b = new StringBuilder("t=" + s);
      stats.forEach((arm, cs) -> b.append(' ').append(arm.id()).append(" first=").append(cs.table().get(s, "first"))
          .append(" retries=").append(cs.table().get(s, "retries")).append(" goodput=")
          .append(cs.table().get(s, "goodput")).append(" failed=").append(cs.table().get(s, "failed")));
      System.out.println(b);
    }, 5000, 5000, TimeUnit.MILLISECONDS);
    Thread.sleep(Math.max(0, epoch[0] + end + 1000 - System.currentTimeMillis()));
    write(out, stats);
    System.out.println("DONE");
    System.out.flush();
    budgets.forEach(RetryBudget::close);
    redis.values().forEach(RedisBudgetClient::close);
    System.exit(0);
  }

  /**
   * Opens connections and loads the HTTP code paths before the clock starts: 50 requests at once,
   * 5 times, answered 503 by a backend that has not started its run (not counted anywhere).
   */
  private static void warmUp(HttpClient http, URI target) throws InterruptedException {
    HttpRequest request = HttpRequest.newBuilder(target).GET().timeout(Duration.ofSeconds(10)).build();
    for (int round = 0; round < 5; round++) {
      List<java.util.concurrent.CompletableFuture<?>> all = new ArrayList<>();
      for (int i = 0; i < 50; i++) {
        all.add(http.sendAsync(request, HttpResponse.BodyHandlers.discarding()));
      }
      try {
        java.util.concurrent.CompletableFuture.allOf(all.toArray(new java.util.concurrent.CompletableFuture<?>[0]))
            .get(30, TimeUnit.SECONDS);
      } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
        System.out.println("warm-up request failed: " + e);
      }
    }
  }

  private static void send(RetryingHttpClient client, URI target, CallStats stats, LongSupplier sinceStart) {
    long started = sinceStart.getAsLong();
    HttpRequest request = HttpRequest.newBuilder(target).GET().build();
    client.sendAsync(request, HttpResponse.BodyHandlers.discarding())
        .whenComplete((r, e) -> stats.ended(started, r != null && r.statusCode() == 200));
  }

  private static void write(Path out, Map<Arm, CallStats> stats) throws java.io.IOException {
    try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(out))) {
      w.println("arm,second," + String.join(",", CallStats.COLUMNS) + ",latencies");
      for (Map.Entry<Arm, CallStats> e : stats.entrySet()) {
        PerSecond t = e.getValue().table();
        for (int s = 0; s < t.seconds(); s++) {
          StringBuilder b = new StringBuilder(e.getKey().id()).append(',').append(s);
          for (int c = 0; c < t.columns().size(); c++) {
            b.append(',').append(t.get(s, c));
          }
          b.append(',');
          int[] l = t.latencies(s);
          for (int i = 0; i < l.length; i++) {
            b.append(i == 0 ? "" : " ").append(l[i]);
          }
          w.println(b);
        }
      }
    }
  }

  private static java.util.concurrent.ThreadFactory daemon(String name) {
    return r -> {
      Thread t = new Thread(r, name);
      t.setDaemon(true);
      return t;
    };
  }
}
