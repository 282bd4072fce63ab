package io.retrybudget.bench.layers;

import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import io.retrybudget.retry.HedgePolicy;
import io.retrybudget.retry.RetryPolicy;
import io.retrybudget.retry.http.RetryingHttpClient;
import io.retrybudget.server.ClaimStore;
import io.retrybudget.server.StoredResponse;
import io.retrybudget.server.TieGuard;
import io.retrybudget.server.TiedSender;
import io.retrybudget.server.vertx.VertxIdempotency;
import io.retrybudget.testing.RedisServerProcess;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Tied vs hedged vs neither in the Tail-at-Scale setting, on real loopback HTTP: two replicas, each
 * serving its FIFO queue with {@code --workers} workers (service time U[1, 3] ms; with probability
 * {@code --pause-probability} a worker stalls {@code --pause-ms} before it starts a request, like a
 * GC pause), open-loop load. Tied copies claim their tie (Redis) when they reach the head of a queue, so the loser
 * does no work; hedges (the SDK's fixed-delay hedging) both run. Reports p50, p99, p99.9, the
 * extra work (executions per request - 1), and where the tie claims' time went: their latency,
 * won and lost, and the share of worker time spent waiting for them. {@code tied-held}: the worker
 * waits for its copy's claim (the model of earlier runs); {@code tied}: it does not.
 */
public final class TiesBench {
  private TiesBench() {}

  /** Where the tie claims' time went on one replica: latency of each claim, by its answer. */
  static final class ClaimTimes {
    final java.util.concurrent.ConcurrentLinkedQueue<Long> wonMicros = new java.util.concurrent.ConcurrentLinkedQueue<>();
    final java.util.concurrent.ConcurrentLinkedQueue<Long> lostMicros = new java.util.concurrent.ConcurrentLinkedQueue<>();
    /** Worker time spent waiting for claims (held mode only), in µs, by answer. */
    final AtomicLong heldWonMicros = new AtomicLong();
    final AtomicLong heldLostMicros = new AtomicLong();
  }

  /**
   * One replica: a FIFO of requests served by {@code workers} workers on its event loop. With
   * {@code heldClaims} a worker that takes a tied copy waits for its claim's answer before it does
   * anything else (the loser's round trip to Redis holds the worker: the model of the previous
   * runs). Without it claims do not take a worker: they are sent for the head of the queue while
   * fewer than {@code claimAhead} copies are claimed and not executing (claims run that far ahead
   * of the workers), a worker executes a copy whose claim was won, and a lost copy is answered
   * when its claim comes back, without a worker. A stall (GC pause) comes before a copy starts,
   * which for a tied copy is its claim (and in that mode stops the replica's claims too).
   */
  static final class Replica {
    final AtomicLong executions = new AtomicLong();
    final ClaimTimes claims;
    private final ArrayDeque<RoutingContext> queue = new ArrayDeque<>();
    private final ArrayDeque<RoutingContext> ready = new ArrayDeque<>(); // claims won, waiting for a worker
    private final SplittableRandom random;
    private final Vertx vertx;
    private final TieGuard ties;
    private final double pauseProbability;
    private final long pauseMs;
    private final int workers;
    private final boolean heldClaims;
    private int busy; // workers executing, stalled, or (held mode) waiting for a claim
    private int claiming; // claims sent and not answered (async mode)
    private boolean stalled; // async mode: a stall before a copy starts holds the whole replica
    private final int claimAhead;

    Replica(Vertx vertx, TieGuard ties, long seed, double pauseProbability, long pauseMs, int workers,
        boolean heldClaims, int claimAhead, ClaimTimes claims) {
      this.claimAhead = claimAhead;
      this.workers = workers;
      this.vertx = vertx;
      this.ties = ties;
      this.random = new SplittableRandom(seed);
      this.pauseProbability = pauseProbability;
      this.pauseMs = pauseMs;
      this.heldClaims = heldClaims;
      this.claims = claims;
    }

    void arrive(RoutingContext ctx) {
      queue.add(ctx);
      pump();
    }

    /**
     * Gives free workers work: a copy whose claim was won, else (held mode) the head of the queue.
     * Without held claims, claims are sent for the head of the queue whenever fewer than
     * {@code claimAhead} copies are claimed and not executing, whether a worker is free or not.
     */
    private void pump() {
      if (heldClaims) {
        while (busy < workers) {
          RoutingContext ctx = queue.poll();
          if (ctx == null) {
            return;
          }
          busy++;
          stallThen(() -> claimHeld(ctx));
        }
        return;
      }
      if (stalled) {
        return; // the stall (a GC pause) stops the replica: no work, no claims
      }
      while (busy < workers && !ready.isEmpty()) {
        busy++;
        execute(ready.poll());
      }
      while (!queue.isEmpty() && claiming + ready.size() < claimAhead) {
        RoutingContext ctx = queue.poll();
        if (random.nextDouble() < pauseProbability) {
          stalled = true; // before it starts (claims) the copy
          vertx.setTimer(pauseMs, t -> {
            stalled = false;
            claimAsync(ctx);
            pump();
          });
          return;
        }
        claimAsync(ctx);
      }
    }

    /** The stall (a GC pause, a noisy neighbour) comes before the request really starts. */
    private void stallThen(Runnable start) {
      if (random.nextDouble() < pauseProbability) {
        vertx.setTimer(pauseMs, t -> start.run());
      } else {
        start.run();
      }
    }

    private void claimHeld(RoutingContext ctx) {
      long sent = System.nanoTime();
      Future.fromCompletionStage(ties.begin(VertxIdempotency.view(ctx)), vertx.getOrCreateContext()).onComplete(d -> {
        long micros = (System.nanoTime() - sent) / 1000;
        boolean lost = d.succeeded() && d.result() == TieGuard.Decision.LOST;
        if (ctx.request().getHeader(TieGuard.TIE_HEADER) != null) { // untied modes ask nothing
          (lost ? claims.lostMicros : claims.wonMicros).add(micros);
          (lost ? claims.heldLostMicros : claims.heldWonMicros).addAndGet(micros);
        }
        if (lost) {
          VertxIdempotency.write(ctx.response(), TieGuard.lostAnswer());
          busy--;
          pump();
          return;
        }
        execute(ctx); // this worker goes on to the work
      });
    }

    private void claimAsync(RoutingContext ctx) {
      claiming++;
      long sent = System.nanoTime();
      Future.fromCompletionStage(ties.begin(VertxIdempotency.view(ctx)), vertx.getOrCreateContext()).onComplete(d -> {
        claiming--;
        long micros = (System.nanoTime() - sent) / 1000;
        boolean lost = d.succeeded() && d.result() == TieGuard.Decision.LOST;
        (lost ? claims.lostMicros : claims.wonMicros).add(micros);
        if (lost) {
          VertxIdempotency.write(ctx.response(), TieGuard.lostAnswer()); // no worker needed
        } else {
          ready.add(ctx);
        }
        pump();
      });
    }

    /** A worker (counted in busy) does the copy's work, U[1, 3] ms, then takes more. */
    private void execute(RoutingContext ctx) {
      if (ctx.response().closed()) {
        busy--;
        pump(); // a hedge or copy the client already cancelled: no work
        return;
      }
      executions.incrementAndGet();
      vertx.setTimer(1 + random.nextInt(3), t -> {
        VertxIdempotency.write(ctx.response(), new StoredResponse(200,
            List.of(new StoredResponse.Header(TieGuard.WON_HEADER, "true")), "ok".getBytes()));
        busy--;
        pump();
      });
    }

  }

  public static void main(String[] args) throws Exception {
    Map<String, String> o = LayersBench.options(args);
    int rate = Integer.parseInt(o.getOrDefault("rate", "200"));
    int seconds = Integer.parseInt(o.getOrDefault("seconds", "20"));
    double pauseProbability = Double.parseDouble(o.getOrDefault("pause-probability", "0.01"));
    long pauseMs = Long.parseLong(o.getOrDefault("pause-ms", "50"));
    long hedgeMs = Long.parseLong(o.getOrDefault("hedge-ms", "10"));
    int workers = Integer.parseInt(o.getOrDefault("workers", "1"));
    int runs = Integer.parseInt(o.getOrDefault("runs", "1"));
    int claimAhead = Integer.parseInt(o.getOrDefault("claim-ahead", "2"));
    List<String> modes = List.of(o.getOrDefault("modes", "neither,hedged,tied-held,tied").split(","));
    Path out = Path.of(o.getOrDefault("out", "bench/results/layers/ties"));
    if (out.getParent() != null) {
      Files.createDirectories(out.getParent());
    }
    StringBuilder summary = new StringBuilder(String.format("tail at scale: 2 replicas, FIFO served by %d worker(s) each, service U[1,3] ms, "
        + "a stall of %d ms with probability %.3f before a request starts, %d requests/s open loop for %d s; tie delay 1 ms, hedge delay %d ms;%n"
        + "tied-held: a worker waits for its copy's tie claim (Redis) before it does anything else (the loser's claim holds it);%n"
        + "tied: claims take no worker: sent for the queue's head while fewer than %d copies are claimed and not executing; a lost copy is answered without a worker;%n"
        + "claims: won/lost claims and their latency p50/p99 ms; held: share of the replicas' worker time spent waiting for claims (lost / won);%n"
        + "load: 1/5/15 min load averages after the mode (shared 2-core machine); modes run one after another, %d run(s) in turn%n",
        workers, pauseMs, pauseProbability, rate, seconds, hedgeMs, claimAhead, runs));
    summary.append(String.format("%-4s %-9s %8s %8s %8s %9s %9s %11s  %-44s %-15s %s%n", "run", "mode", "requests", "ok",
        "p50 ms", "p99 ms", "p99.9 ms", "extra work", "claims won/lost, p50/p99 ms won | lost", "held lost/won", "load"));
    List<LineChart.Series> curves = new ArrayList<>();
    try (RedisServerProcess redis = RedisServerProcess.start();
         RedisBudgetStore store = RedisBudgetStore.connect(RedisConnectionOptions.standalone(redis.uri()).build())) {
      TieGuard ties = new TieGuard(new ClaimStore(store, Duration.ofMillis(500)), Duration.ofSeconds(5));
      for (int run = 1; run <= runs; run++) {
        for (String mode : modes) {
          String line = runMode(run, mode, ties, rate, seconds, pauseProbability, pauseMs, hedgeMs, workers, claimAhead,
              run == runs ? curves : null);
          summary.append(line);
          System.out.print(line);
        }
      }
    }
    Files.writeString(Path.of(out + "-summary.txt"), summary);
    LineChart.write(Path.of(out + "-percentiles.png"), "Latency by percentile (last run): neither, hedged (" + hedgeMs
        + " ms), tied (1 ms)", "percentile: 50 60 70 80 90 95 99 99.5 99.9 (index)", "latency ms (log)", curves, true);
    System.out.print(summary);
  }

  static String runMode(int run, String mode, TieGuard ties, int rate, int seconds, double pauseProbability, long pauseMs,
      long hedgeMs, int workers, int claimAhead, List<LineChart.Series> curves) throws Exception {
    Vertx vertx = Vertx.vertx();
    try {
      List<Replica> replicas = new ArrayList<>();
      List<URI> uris = new ArrayList<>();
      ClaimTimes claims = new ClaimTimes();
      for (int i = 0; i < 2; i++) {
        Replica r = new Replica(vertx, ties, 7 + i + 100L * run, pauseProbability, pauseMs, workers,
            !mode.equals("tied"), claimAhead, claims);
        replicas.add(r);
        Router router = Router.router(vertx);
        router.get("/work").handler(r::arrive);
        uris.add(URI.create("http://127.0.0.1:" + vertx.createHttpServer().requestHandler(router).listen(0, "127.0.0.1")
            .toCompletionStage().toCompletableFuture().get().actualPort()));
      }
      HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
      java.util.function.Supplier<CompletableFuture<HttpResponse<String>>> call;
      HttpRequest request = HttpRequest.newBuilder(uris.get(0).resolve("/work")).timeout(Duration.ofSeconds(10)).GET().build();
      AutoCloseable closing = () -> { };
      if (mode.startsWith("tied")) {
        TiedSender sender = TiedSender.builder(http).replicas(uris).delay(Duration.ofMillis(1)).build();
        call = () -> sender.send(request, HttpResponse.BodyHandlers.ofString());
      } else {
        RetryingHttpClient.Builder b = RetryingHttpClient.builder(http).replicas(uris)
            .policy(RetryPolicy.builder().maxAttempts(mode.equals("hedged") ? 2 : 1).build());
        if (mode.equals("hedged")) {
          b.hedging(HedgePolicy.fixedDelay(Duration.ofMillis(hedgeMs)).build());
        }
        RetryingHttpClient client = b.build();
        closing = client;
        call = () -> client.sendAsync(request, HttpResponse.BodyHandlers.ofString());
      }
      long[] latencies = drive(call, rate, seconds);
      closing.close();
      long executions = replicas.stream().mapToLong(r -> r.executions.get()).sum();
      long ok = Arrays.stream(latencies).filter(l -> l >= 0).count();
      long[] sorted = Arrays.stream(latencies).filter(l -> l >= 0).sorted().toArray();
      String claimText = "-";
      String held = "-";
      if (mode.startsWith("tied")) {
        long[] won = claims.wonMicros.stream().mapToLong(Long::longValue).sorted().toArray();
        long[] lost = claims.lostMicros.stream().mapToLong(Long::longValue).sorted().toArray();
        claimText = String.format("%d/%d, %.2f/%.2f | %.2f/%.2f", won.length, lost.length, pct(won, 0.5), pct(won, 0.99),
            pct(lost, 0.5), pct(lost, 0.99));
        if (!mode.equals("tied")) {
          double capacity = 2.0 * workers * seconds * 1_000_000.0;
          held = String.format("%.1f%%/%.1f%%", 100 * claims.heldLostMicros.get() / capacity,
              100 * claims.heldWonMicros.get() / capacity);
        } else {
          held = "0%/0%";
        }
      }
      if (curves != null) {
        // latency at percentiles 50, 60, ..., 90, 95, 99, 99.5, 99.9 for the chart
        double[] ps = {0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 0.995, 0.999};
        double[] ys = new double[ps.length];
        for (int i = 0; i < ps.length; i++) {
          ys[i] = pct(sorted, ps[i]);
        }
        curves.add(new LineChart.Series(mode, ys));
      }
      return String.format("%-4d %-9s %8d %8d %8.2f %9.2f %9.2f %11.3f  %-44s %-15s %s%n", run, mode, latencies.length, ok,
          pct(sorted, 0.50), pct(sorted, 0.99), pct(sorted, 0.999), executions / (double) latencies.length - 1,
          claimText, held, LayersBench.loadAverage());
    } finally {
      vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }
  }

  /** Open loop at {@code rate}/s for {@code seconds}: each call's latency in µs, -1 when it failed. */
  static long[] drive(java.util.function.Supplier<CompletableFuture<HttpResponse<String>>> call, int rate, int seconds)
      throws Exception {
    int total = rate * seconds;
    long[] latency = new long[total];
    CompletableFuture<?>[] all = new CompletableFuture<?>[total];
    ScheduledExecutorService timer = Executors.newScheduledThreadPool(1);
    try {
      CompletableFuture<Void> sent = new CompletableFuture<>();
      int[] next = {0};
      timer.scheduleAtFixedRate(() -> {
        int i = next[0]++;
        if (i >= total) {
          sent.complete(null);
          throw new IllegalStateException("done"); // ends the periodic task
        }
        long start = System.nanoTime();
        all[i] = call.get().handle((r, e) -> {
          latency[i] = e == null && r.statusCode() == 200 ? (System.nanoTime() - start) / 1000 : -1;
          return null;
        });
      }, 0, 1_000_000_000L / rate, TimeUnit.NANOSECONDS);
      sent.get(seconds + 60L, TimeUnit.SECONDS);
      CompletableFuture.allOf(all).get(60, TimeUnit.SECONDS);
      return latency;
    } finally {
      timer.shutdownNow();
    }
  }

  static double pct(long[] sortedMicros, double p) {
    if (sortedMicros.length == 0) {
      return Double.NaN;
    }
    int i = (int) Math.min(sortedMicros.length - 1, Math.ceil(p * sortedMicros.length) - 1);
    return sortedMicros[Math.max(0, i)] / 1000.0;
  }
}
