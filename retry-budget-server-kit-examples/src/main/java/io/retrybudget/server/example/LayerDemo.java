package io.retrybudget.server.example;

import io.retrybudget.budget.RetryBudget;
import io.retrybudget.retry.RetryPolicy;
import io.retrybudget.retry.SuccessAwareBudget;
import io.retrybudget.retry.http.RetryingHttpClient;
import io.retrybudget.server.Downstream;
import io.retrybudget.server.MiddleLayer;
import io.retrybudget.server.StoredResponse;
import io.retrybudget.server.vertx.VertxIdempotency;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.DoubleSupplier;
import java.util.function.LongSupplier;

/**
 * The layered services of the suppression demo (tests and bench/layers): a backend {@code C} that
 * fails a share of its calls or is slow, and layers ({@code A}, {@code B}) that call the next one
 * down in one of three {@link Mode}s. Everything on real loopback HTTP: Vert.x servers, the SDK's
 * {@code java.net.http} client between them. {@code GET /work} at every service.
 */
public final class LayerDemo {
  private LayerDemo() {}

  /** How many inbound deadline headers a service keeps ({@link Service#deadlineHeaders()}). */
  public static final int KEPT = 10_000;

  public enum Mode {
    /** Every layer retries its own way, no budget, and passes failures up as plain 503s. */
    NAIVE,
    /** Every layer retries within a budget for its dependency, no suppression. */
    BUDGET_PER_LAYER,
    /** Budgets, plus {@link MiddleLayer}: do-not-retry upwards, one attempt for inbound retries. */
    SUPPRESSED
  }

  /** Calls of a layer whose downstream call has not ended yet; completes waiters when none is left. */
  static final class Busy {
    private long running;
    private final List<CompletableFuture<Void>> waiters = new java.util.ArrayList<>();

    synchronized void begin() {
      running++;
    }

    void end() {
      List<CompletableFuture<Void>> done;
      synchronized (this) {
        if (--running > 0 || waiters.isEmpty()) {
          return;
        }
        done = List.copyOf(waiters);
        waiters.clear();
      }
      done.forEach(w -> w.complete(null));
    }

    synchronized CompletableFuture<Void> idle() {
      if (running == 0) {
        return CompletableFuture.completedFuture(null);
      }
      CompletableFuture<Void> w = new CompletableFuture<>();
      waiters.add(w);
      return w;
    }
  }

  /** A running service: its port and how many calls it received. */
  public static final class Service implements AutoCloseable {
    private final HttpServer server;
    private final AtomicLong calls;
    private final Map<String, AtomicLong> attemptHeaders;
    private final java.util.Queue<String> deadlineHeaders;
    private final AutoCloseable client;
    private final Busy busy;

    Service(HttpServer server, AtomicLong calls, Map<String, AtomicLong> attemptHeaders,
        java.util.Queue<String> deadlineHeaders, AutoCloseable client, Busy busy) {
      this.busy = busy;
      this.server = server;
      this.calls = calls;
      this.attemptHeaders = attemptHeaders;
      this.deadlineHeaders = deadlineHeaders;
      this.client = client;
    }

    public int port() {
      return server.actualPort();
    }

    public URI uri() {
      return URI.create("http://127.0.0.1:" + port());
    }

    public long calls() {
      return calls.get();
    }

    /** How often each inbound {@code X-Retry-Attempt} value arrived ("" when absent). */
    public Map<String, Long> attemptHeaders() {
      Map<String, Long> m = new java.util.TreeMap<>();
      attemptHeaders.forEach((k, v) -> m.put(k, v.get()));
      return m;
    }

    /**
     * The inbound {@code X-Request-Deadline-Ms} values of the first {@value #KEPT} calls, in
     * arrival order ("" when absent; several field lines joined by a comma).
     */
    public List<String> deadlineHeaders() {
      return List.copyOf(deadlineHeaders);
    }

    /**
     * Completes once no call of this layer has a downstream call running (at once for a backend):
     * its counts of calls made below are then final for the calls it received so far.
     */
    public CompletableFuture<Void> idle() {
      return busy == null ? CompletableFuture.completedFuture(null) : busy.idle();
    }

    @Override
    public void close() throws Exception {
      server.close().await();
      if (client != null) {
        client.close();
      }
    }
  }

  /** The backend: fails {@code failureRate} of its calls with a plain 503 (seeded), after {@code delayMs}. */
  public static Service backend(Vertx vertx, double failureRate, long delayMs, long seed) {
    return backend(vertx, () -> failureRate, () -> delayMs, seed);
  }

  /** As {@link #backend(Vertx, double, long, long)}, with the failure rate and delay read on every call. */
  public static Service backend(Vertx vertx, DoubleSupplier failureRate, LongSupplier delay, long seed) {
    AtomicLong calls = new AtomicLong();
    Map<String, AtomicLong> attempts = new ConcurrentHashMap<>();
    java.util.Queue<String> deadlines = new java.util.concurrent.ConcurrentLinkedQueue<>();
    SplittableRandom random = new SplittableRandom(seed);
    Router router = Router.router(vertx);
    router.get("/work").handler(ctx -> {
      calls.incrementAndGet();
      count(attempts, ctx);
      keep(deadlines, ctx);
      boolean fail;
      synchronized (random) {
        fail = random.nextDouble() < failureRate.getAsDouble();
      }
      long delayMs = delay.getAsLong();
      Runnable answer = () -> {
        if (fail) {
          ctx.response().setStatusCode(503).end("backend failed");
        } else {
          ctx.response().end("ok");
        }
      };
      if (delayMs > 0) {
        vertx.setTimer(delayMs, t -> answer.run());
      } else {
        answer.run();
      }
    });
    HttpServer server = vertx.createHttpServer().requestHandler(router).listen(0, "127.0.0.1").await();
    return new Service(server, calls, attempts, deadlines, null, null);
  }

  /**
   * A layer that calls {@code downstream}/work for every {@code GET /work}, with {@code policy}
   * (and {@code budget} unless {@link Mode#NAIVE}; may be null there).
   */
  public static Service layer(Vertx vertx, URI downstream, Mode mode, RetryPolicy policy, RetryBudget budget) {
    return layer(vertx, downstream, mode, policy, budget, Duration.ofMillis(10));
  }

  /**
   * As {@link #layer(Vertx, URI, Mode, RetryPolicy, RetryBudget)}; in {@link Mode#SUPPRESSED} the
   * inbound {@code X-Request-Deadline-Ms} is propagated with {@code deadlineMargin}
   * ({@link MiddleLayer.Builder#deadlineMargin}), null: not at all (inbound deadlines ignored, the
   * layer's own policy alone).
   */
  public static Service layer(Vertx vertx, URI downstream, Mode mode, RetryPolicy policy, RetryBudget budget,
      Duration deadlineMargin) {
    AtomicLong calls = new AtomicLong();
    Map<String, AtomicLong> attempts = new ConcurrentHashMap<>();
    java.util.Queue<String> deadlines = new java.util.concurrent.ConcurrentLinkedQueue<>();
    Busy busy = new Busy();
    HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(2)).build();
    HttpRequest request = HttpRequest.newBuilder(downstream.resolve("/work")).timeout(Duration.ofSeconds(10)).GET().build();
    Router router = Router.router(vertx);
    AutoCloseable closeable;
    if (mode == Mode.SUPPRESSED) {
      MiddleLayer middle = MiddleLayer.builder(http).policy(policy).budget(budget)
          .deadlineMargin(deadlineMargin == null ? Duration.ZERO : deadlineMargin).build();
      closeable = middle;
      router.get("/work").handler(ctx -> {
        calls.incrementAndGet();
        count(attempts, ctx);
        keep(deadlines, ctx);
        MiddleLayer.Inbound read = middle.inbound(VertxIdempotency.view(ctx)); // attempt and deadline
        MiddleLayer.Inbound inbound = deadlineMargin == null
            ? new MiddleLayer.Inbound(read.attempt(), -1, read.receivedNanos()) : read;
        busy.begin();
        Future.fromCompletionStage(middle.send(inbound, request, HttpResponse.BodyHandlers.ofString()), ctx.vertx().getOrCreateContext())
            .onComplete(ended -> busy.end())
            .onSuccess(d -> {
              if (d.suppress()) {
                VertxIdempotency.write(ctx.response(), d.suppressedAnswer());
              } else {
                VertxIdempotency.write(ctx.response(), new StoredResponse(d.response().statusCode(), List.of(),
                    d.response().body().getBytes(java.nio.charset.StandardCharsets.UTF_8)));
              }
            });
      });
    } else {
      RetryingHttpClient client = client(http, policy, mode == Mode.BUDGET_PER_LAYER ? budget : null).build();
      closeable = client;
      router.get("/work").handler(ctx -> {
        calls.incrementAndGet();
        count(attempts, ctx);
        keep(deadlines, ctx);
        busy.begin();
        Future.fromCompletionStage(client.sendAsync(request, HttpResponse.BodyHandlers.ofString()), ctx.vertx().getOrCreateContext())
            .onComplete(ended -> busy.end())
            .onComplete(done -> {
              if (done.succeeded() && done.result().statusCode() == 200) {
                ctx.response().end(done.result().body());
              } else {
                ctx.response().setStatusCode(503).end("downstream failed"); // a plain, retryable failure
              }
            });
      });
    }
    HttpServer server = vertx.createHttpServer().requestHandler(router).listen(0, "127.0.0.1").await();
    return new Service(server, calls, attempts, deadlines, closeable, busy);
  }

  /**
   * A retrying client with {@code budget} (none when null); a {@link SuccessAwareBudget}'s listener
   * is attached, so its throttle learns how the attempts end.
   */
  public static RetryingHttpClient.Builder client(HttpClient http, RetryPolicy policy, RetryBudget budget) {
    RetryingHttpClient.Builder b = RetryingHttpClient.builder(http).policy(policy);
    if (budget != null) {
      b.budget(budget);
      if (budget instanceof SuccessAwareBudget aware) {
        b.listener(aware.listener());
      }
    }
    return b;
  }

  private static void keep(java.util.Queue<String> deadlines, RoutingContext ctx) {
    if (deadlines.size() < KEPT) {
      deadlines.add(String.join(",", ctx.request().headers().getAll("X-Request-Deadline-Ms")));
    }
  }

  private static void count(Map<String, AtomicLong> attempts, RoutingContext ctx) {
    String a = ctx.request().getHeader("X-Retry-Attempt");
    attempts.computeIfAbsent(a == null ? "" : a, k -> new AtomicLong()).incrementAndGet();
  }
}
