package io.retrybudget.coordinator;

import io.retrybudget.coordinator.http.BoundedHttpTags;
import io.retrybudget.coordinator.api.MetricsScrape;
import io.retrybudget.coordinator.api.BudgetApi;
import io.retrybudget.coordinator.budgets.BudgetService;
import io.retrybudget.coordinator.budgets.BudgetGauges;
import io.retrybudget.coordinator.budgets.ConfigUpdate;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.ext.web.Router;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;

/** The HTTP server, the gauge refresh and the budgets-file watch, on one event loop. */
final class CoordinatorVerticle extends VerticleBase {
  private static final Logger LOG = Logger.getLogger(CoordinatorVerticle.class.getName());
  /** How often the per-budget gauges are read from Redis. */
  static final long GAUGE_REFRESH_MS = 5_000;

  private final CoordinatorConfig config;
  private final BudgetService budgets;
  private final PrometheusMeterRegistry registry;
  private final Map<String, ConfigUpdate> fileBudgets;
  private final HttpServerOptions serverOptions;
  private final BoundedHttpTags httpTags;
  private final String redisEndpoint;
  private final Buffer openApi;
  private final ManagementVerticle.Heartbeat heartbeat;
  private final long gaugeRefreshMillis;
  private HttpServer server;

  CoordinatorVerticle(CoordinatorConfig config, BudgetService budgets, PrometheusMeterRegistry registry,
      Map<String, ConfigUpdate> fileBudgets, HttpServerOptions serverOptions, BoundedHttpTags httpTags,
      String redisEndpoint, Buffer openApi, ManagementVerticle.Heartbeat heartbeat, long gaugeRefreshMillis) {
    this.config = config;
    this.budgets = budgets;
    this.registry = registry;
    this.fileBudgets = fileBudgets;
    this.serverOptions = serverOptions;
    this.httpTags = httpTags;
    this.redisEndpoint = redisEndpoint;
    this.openApi = openApi;
    this.heartbeat = heartbeat;
    this.gaugeRefreshMillis = gaugeRefreshMillis;
  }

  /**
   * HTTP/1.1 only: h2c (prior knowledge or Upgrade) is not served, so an HTTP/2 preface is an
   * unknown method to the connection guard. Timeouts and the connection cap are the guard's.
   */
  static HttpServerOptions serverOptions(int port) {
    return new HttpServerOptions().setPort(port).setHost("0.0.0.0").setHttp2ClearTextEnabled(false);
  }

  @Override
  public Future<?> start() {
    Router router = Router.router(vertx);
    BudgetApi api = new BudgetApi(budgets, config.token(), config.maxBudgets(), redisEndpoint,
        new MetricsScrape(vertx, registry, System::nanoTime, config.http().metricsCacheMillis()), openApi);
    api.mount(router);
    httpTags.routes(api.routes());

    BudgetGauges gauges = new BudgetGauges(registry, budgets, config.maxBudgets());
    gauges.refresh();
    vertx.setPeriodic(gaugeRefreshMillis, id -> gauges.refresh());
    // the management listener's /health/live reads it: this loop is alive while it beats
    heartbeat.beat();
    vertx.setPeriodic(ManagementVerticle.Heartbeat.EVERY_MILLIS, id -> heartbeat.beat());
    if (!fileBudgets.isEmpty()) {
      vertx.setPeriodic(config.fileCheckMillis(), id -> reapplyLostBudgets());
    }
    server = vertx.createHttpServer(serverOptions);
    return server.requestHandler(router).exceptionHandler(api::connectionError).listen();
  }

  int actualPort() {
    return server.actualPort();
  }

  /** Redis lost a budget from the file (restart without persistence, expiry): apply it again. */
  private void reapplyLostBudgets() {
    fileBudgets.forEach((name, update) -> budgets.hasConfiguration(name).onComplete(r -> {
      if (r.succeeded() && !r.result()) {
        budgets.configure(name, update).onComplete(done -> {
          if (done.succeeded()) {
            LOG.info("re-applied budget '" + name + "' from " + config.budgetsFile() + ": Redis had lost it");
          } else {
            LOG.log(Level.WARNING, "cannot re-apply budget '" + name + "'", done.cause());
          }
        });
      }
    }));
  }

  @Override
  public Future<?> stop() {
    // stops accepting, lets in-flight requests finish
    return server == null ? Future.succeededFuture() : server.shutdown(10, TimeUnit.SECONDS);
  }
}
