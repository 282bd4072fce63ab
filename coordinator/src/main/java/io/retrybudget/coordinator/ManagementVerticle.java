package io.retrybudget.coordinator;

import io.retrybudget.coordinator.http.ConnectionGuard;
import io.retrybudget.coordinator.api.MetricsScrape;
import io.retrybudget.coordinator.api.Responses;
import io.retrybudget.coordinator.api.RedisErrors;
import io.retrybudget.coordinator.budgets.BudgetService;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.VerticleBase;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The management listener (COORDINATOR_MANAGEMENT_PORT): {@code GET|HEAD /health/live},
 * {@code /health/ready} and {@code /metrics}, nothing else, on a Vert.x of its own (its own acceptor
 * thread, event loop and {@link ConnectionGuard}), so that no flood of the API port, however many
 * connections a second it brings, queues a probe behind it. No token, as on the API port.
 *
 * <p>Its {@code /health/live} is not merely "this loop answers": it answers 503 when the API event
 * loop has not run its {@link Heartbeat} for COORDINATOR_LIVENESS_STALL_MS, so a stuck API loop
 * still gets the process restarted. {@code /health/ready} pings Redis (over the API loop's
 * connection, answered back on this loop).
 */
final class ManagementVerticle extends VerticleBase {
  private static final Logger LOG = Logger.getLogger(ManagementVerticle.class.getName());
  static final String ALLOW = "GET, HEAD, OPTIONS";
  static final java.util.List<String> PATHS = java.util.List.of("/health/live", "/health/ready", "/metrics");

  private final BudgetService budgets;
  private final PrometheusMeterRegistry registry;
  private final HttpServerOptions serverOptions;
  private final Heartbeat apiLoop;
  private final long stallMillis;
  private final long metricsCacheMillis;
  private final String redisEndpoint;
  private HttpServer server;

  ManagementVerticle(BudgetService budgets, PrometheusMeterRegistry registry, HttpServerOptions serverOptions,
      Heartbeat apiLoop, long stallMillis, long metricsCacheMillis, String redisEndpoint) {
    this.budgets = budgets;
    this.registry = registry;
    this.serverOptions = serverOptions;
    this.apiLoop = apiLoop;
    this.stallMillis = stallMillis;
    this.metricsCacheMillis = metricsCacheMillis;
    this.redisEndpoint = redisEndpoint;
  }

  /**
   * When the API event loop last ran its periodic beat. Written by that loop, read by the
   * management loop.
   */
  static final class Heartbeat {
    /** How often the API loop beats. */
    static final long EVERY_MILLIS = 250;
    private final LongSupplier nanoTime;
    private final AtomicLong last;

    Heartbeat(LongSupplier nanoTime) {
      this.nanoTime = nanoTime;
      this.last = new AtomicLong(nanoTime.getAsLong());
    }

    void beat() {
      last.set(nanoTime.getAsLong());
    }

    /** Milliseconds since the last beat. */
    long silentMillis() {
      return TimeUnit.NANOSECONDS.toMillis(nanoTime.getAsLong() - last.get());
    }
  }

  @Override
  public Future<?> start() {
    Router router = Router.router(vertx);
    Handler<RoutingContext> metrics = new MetricsScrape(vertx, registry, System::nanoTime, metricsCacheMillis);
    route(router, "/health/live", this::live);
    route(router, "/health/ready", this::ready);
    route(router, "/metrics", metrics);
    router.errorHandler(404, ctx -> Responses.error(ctx, 404, "path",
        "no such resource on the management port: it serves GET " + String.join(", ", PATHS)));
    router.errorHandler(500, ctx -> {
      LOG.log(Level.SEVERE, "unexpected failure on " + ctx.request().path(), ctx.failure());
      Responses.error(ctx, 500, null, "internal error");
    });
    server = vertx.createHttpServer(serverOptions);
    return server.requestHandler(router)
        .exceptionHandler(t -> LOG.log(Level.FINE, "management connection error", t))
        .listen();
  }

  private static void route(Router router, String path, Handler<RoutingContext> handler) {
    router.route(path).method(HttpMethod.GET).method(HttpMethod.HEAD).handler(handler);
    router.route(path).handler(ctx -> {
      ctx.response().putHeader(HttpHeaders.ALLOW, ALLOW);
      if (ctx.request().method() == HttpMethod.OPTIONS) {
        ctx.response().setStatusCode(204).end();
      } else {
        Responses.error(ctx, 405, "method", ctx.request().method().name() + " is not allowed here; allowed: " + ALLOW);
      }
    });
  }

  private void live(RoutingContext ctx) {
    long silent = apiLoop.silentMillis();
    if (silent > stallMillis) {
      json(ctx, 503, new JsonObject().put("status", "DOWN").put("error", "the API event loop has not run for "
          + silent + " ms (COORDINATOR_LIVENESS_STALL_MS is " + stallMillis + ")"));
    } else {
      json(ctx, 200, new JsonObject().put("status", "UP"));
    }
  }

  private void ready(RoutingContext ctx) {
    Context here = vertx.getOrCreateContext();
    // the reply arrives on the API loop (the Redis connection lives there): answered back on this one
    Future.fromCompletionStage(budgets.ping().toCompletionStage(), here).onComplete(r -> {
      if (r.succeeded()) {
        json(ctx, 200, new JsonObject().put("status", "UP").put("redis", "UP"));
      } else {
        json(ctx, 503, new JsonObject().put("status", "DOWN").put("redis", "DOWN")
            .put("error", RedisErrors.describe(r.cause(), redisEndpoint, budgets.timeoutMillis())));
      }
    });
  }

  private static void json(RoutingContext ctx, int status, JsonObject body) {
    if (ctx.response().ended() || ctx.response().closed()) {
      return;
    }
    Buffer encoded = body.toBuffer();
    Responses.headLength(ctx, encoded.length()).setStatusCode(status)
        .putHeader(HttpHeaders.CONTENT_TYPE, "application/json").end(encoded);
  }

  int actualPort() {
    return server.actualPort();
  }

  @Override
  public Future<?> stop() {
    return server == null ? Future.succeededFuture() : server.shutdown(1, TimeUnit.SECONDS);
  }
}
