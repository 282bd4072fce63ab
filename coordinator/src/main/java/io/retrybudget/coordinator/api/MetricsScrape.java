package io.retrybudget.coordinator.api;

import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpHeaders;
import io.vertx.ext.web.RoutingContext;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * GET /metrics: the Prometheus text is rendered on a worker thread, never on the event loop (a
 * full tag space is tens of milliseconds of work), and one rendering answers every scrape that
 * arrives while it runs and until {@code freshMillis} after it began (COORDINATOR_METRICS_CACHE_MS,
 * default 1 s): however many scrapes come, concurrent, pipelined or one after another, they cost at
 * most one rendering a second, and the event loop only writes the text. Runs on the event loop it
 * is mounted on; its fields are that loop's only.
 */
public final class MetricsScrape implements Handler<RoutingContext> {
  public static final String CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

  private final Vertx vertx;
  private final PrometheusMeterRegistry registry;
  private final LongSupplier nanoTime;
  private final long freshNanos;
  private Future<Buffer> latest;
  private long renderedAt;

  public MetricsScrape(Vertx vertx, PrometheusMeterRegistry registry, LongSupplier nanoTime, long freshMillis) {
    this.freshNanos = TimeUnit.MILLISECONDS.toNanos(freshMillis);
    this.vertx = vertx;
    this.registry = registry;
    this.nanoTime = nanoTime;
  }

  /**
   * One rendering. The per-budget gauges are replaced on the event loop while a scrape may run here:
   * a scrape that meets a gauge's old and new meter at once fails with DuplicateLabelsException (seen
   * once after Redis came back: "Duplicate labels for metric retry_budget_limit_ratio"); the next one
   * sees the replacement done, so a failed rendering is tried again, at most twice more.
   */
  private String render() {
    for (int attempt = 1; ; attempt++) {
      try {
        return registry.scrape();
      } catch (io.prometheus.metrics.model.snapshots.DuplicateLabelsException e) {
        if (attempt == 3) {
          throw e;
        }
      }
    }
  }

  @Override
  public void handle(RoutingContext ctx) {
    long now = nanoTime.getAsLong();
    if (latest == null || (latest.isComplete() && now - renderedAt >= freshNanos)) {
      renderedAt = now;
      // unordered: a slow rendering never queues another behind it on the worker pool
      latest = vertx.executeBlocking(() -> Buffer.buffer(render()), false);
    }
    latest.onComplete(r -> {
      if (ctx.response().ended() || ctx.response().closed()) {
        return;
      }
      if (r.succeeded()) {
        Responses.headLength(ctx, r.result().length()).putHeader(HttpHeaders.CONTENT_TYPE, CONTENT_TYPE).end(r.result());
      } else {
        ctx.fail(r.cause());
      }
    });
  }
}
