package io.retrybudget.bench.layers;

import io.retrybudget.budget.redis.RedisBudgetStore;
import io.retrybudget.budget.redis.RedisConnectionOptions;
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
 * does no work; hedges (the SDK's fixed-delay hedging) both run. Reports p50, p99, p99.9 and the
 * extra work (executions per request - 1).
 */
public final class TiesBench {
  private TiesBench() {}

  /** One replica: a FIFO of requests served one at a time on its event loop. */
  static final class Replica {
    final AtomicLong executions = new AtomicLong();
    private final ArrayDeque<RoutingContext> queue = new ArrayDeque<>();
    private final SplittableRandom random;
    private final Vertx vertx;
    private final TieGuard ties;
    private final double pauseProbability;
    private final long pauseMs;
    private final int workers;
    private int busy;

    Replica(Vertx vertx, TieGuard ties, long seed, double pauseProbability, long pauseMs, int workers) {
      this.workers = workers;
      this.vertx = vertx;
      this.ties = ties;
      this.random = new SplittableRandom(seed);
      this.pauseProbability = pauseProbability;
      this.pauseMs = pauseMs;
    }

    void arrive(RoutingContext ctx) {
      queue.add(ctx);
      if (busy < workers) {
        busy++;
        next();
      }
    }

    /** One worker takes the head of the queue (or goes idle). */
    private void next() {
      RoutingContext ctx = queue.poll();
      if (ctx == null) {
        busy--;
        return;
      }
      // the stall (a GC pause, a noisy neighbour) comes before the request really starts: a tied
      // copy claims its tie only once it starts, so the other replica's copy can win meanwhile
      if (random.nextDouble() < pauseProbability) {
        vertx.setTimer(pauseMs, t -> start(ctx));
      } else {
        start(ctx);
      }
    }

    private void start(RoutingContext ctx) {
      Future.fromCompletionStage(ties.begin(VertxIdempotency.view(ctx)), vertx.getOrCreateContext()).onComplete(d -> {
        if (d.succeeded() && d.result() == TieGuard.Decision.LOST) {
          VertxIdempotency.write(ctx.response(), TieGuard.lostAnswer());
          next();
          return;
        }
        if (ctx.response().closed()) {
          next(); // a hedge or copy the client already cancelled: no work
          return;
        }
        executions.incrementAndGet();
        vertx.setTimer(1 + random.nextInt(3), t -> {
          VertxIdempotency.write(ctx.response(), new StoredResponse(200,
              List.of(new StoredResponse.Header(TieGuard.WON_HEADER, "true")), "ok".getBytes()));
          next();
        });
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
    Path out = Path.of(o.getOrDefault("out", "bench/results/ties"));
    if (out.getParent() != null) {
      Files.createDirectories(out.getParent());
    }
    StringBuilder summary = new StringBuilder(String.format("tail at scale: 2 replicas, FIFO served by %d worker(s) each, service U[1,3] ms, "
        + "a stall of %d ms with probability %.3f before a request starts, %d requests/s open loop for %d s; tie delay 1 ms, hedge delay %d ms%n",
        workers, pauseMs, pauseProbability, rate, seconds, hedgeMs));
    List<LineChart.Series> curves = new ArrayList<>();
    summary.append(String.format("%-8s %8s %8s %8s %9s %9s %11s%n", "mode", "requests", "ok", "p50 ms", "p99 ms", "p99.9 ms", "extra work"));
    try (RedisServerProcess redis = RedisServerProcess.start();
         RedisBudgetStore store = RedisBudgetStore.connect(RedisConnectionOptions.standalone(redis.uri()).build())) {
      TieGuard ties = new TieGuard(new ClaimStore(store, Duration.ofMillis(500)), Duration.ofSeconds(5));
      for (String mode : List.of("neither", "hedged", "tied")) {
        Vertx vertx = Vertx.vertx();
        try {
          List<Replica> replicas = new ArrayList<>();
          List<URI> uris = new ArrayList<>();
          for (int i = 0; i < 2; i++) {
            Replica r = new Replica(vertx, ties, 7 + i, pauseProbability, pauseMs, workers);
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
          if (mode.equals("tied")) {
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
          long executions = replicas.stream().mapToLong(r -> r.executions.get()).sum();
          long ok = Arrays.stream(latencies).filter(l -> l >= 0).count();
          long[] sorted = Arrays.stream(latencies).filter(l -> l >= 0).sorted().toArray();
          String line = String.format("%-8s %8d %8d %8.2f %9.2f %9.2f %10.3f%n", mode, latencies.length, ok,
              pct(sorted, 0.50), pct(sorted, 0.99), pct(sorted, 0.999), executions / (double) latencies.length - 1);
          summary.append(line);
          System.out.print(line);
          // latency at percentiles 50, 60, ..., 90, 95, 99, 99.5, 99.9 for the chart
          double[] ps = {0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 0.995, 0.999};
          double[] ys = new double[ps.length];
          for (int i = 0; i < ps.length; i++) {
            ys[i] = pct(sorted, ps[i]);
          }
          curves.add(new LineChart.Series(mode, ys));
          closing.close();
        } finally {
          vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        }
      }
    }
    Files.writeString(Path.of(out + "-summary.txt"), summary);
    LineChart.write(Path.of(out + "-percentiles.png"), "Latency by percentile: neither, hedged (" + hedgeMs + " ms), tied (1 ms)",
        "percentile: 50 60 70 80 90 95 99 99.5 99.9 (index)", "latency ms (log)", curves, true);
    System.out.print(summary);
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
