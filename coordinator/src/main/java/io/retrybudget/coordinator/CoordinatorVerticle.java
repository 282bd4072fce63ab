package io.retrybudget.coordinator;

import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.ext.web.Router;
import io.vertx.micrometer.PrometheusScrapingHandler;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;

/** The HTTP server, the gauge refresh and the budgets-file watch, on one event loop. */
final class CoordinatorVerticle extends VerticleBase {
  private static final Logger LOG = Logger.getLogger(CoordinatorVerticle.class.getName());
  static final long GAUGE_REFRESH_MS = 5_000;

  private final CoordinatorConfig config;
  private final BudgetService budgets;
  private final PrometheusMeterRegistry registry;
  private final Map<String, ConfigUpdate> fileBudgets;
  private HttpServer server;

  CoordinatorVerticle(CoordinatorConfig config, BudgetService budgets, PrometheusMeterRegistry registry,
      Map<String, ConfigUpdate> fileBudgets) {
    this.config = config;
    this.budgets = budgets;
    this.registry = registry;
    this.fileBudgets = fileBudgets;
  }

  @Override
  public Future<?> start() {
    Router router = Router.router(vertx);
    router.get("/metrics").handler(PrometheusScrapingHandler.create(registry));
    new BudgetApi(budgets, config.token(), config.maxBudgets()).mount(router);

    BudgetGauges gauges = new BudgetGauges(registry, budgets, config.maxBudgets());
    gauges.refresh();
    vertx.setPeriodic(GAUGE_REFRESH_MS, id -> gauges.refresh());
    if (!fileBudgets.isEmpty()) {
      vertx.setPeriodic(config.fileCheckMillis(), id -> reapplyLostBudgets());
    }
    server = vertx.createHttpServer(new HttpServerOptions().setPort(config.port()).setHost("0.0.0.0"));
    return server.requestHandler(router).listen();
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
