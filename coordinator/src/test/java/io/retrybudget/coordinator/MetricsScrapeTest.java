package io.retrybudget.coordinator;

import io.retrybudget.coordinator.api.MetricsScrape;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.ext.web.Router;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** GET /metrics renders on a worker, never on the event loop, and concurrent scrapes share a rendering. */
class MetricsScrapeTest {
  @Test
  void theScrapeIsRenderedOffTheEventLoopAndSharedByPipelinedScrapes() throws Exception {
    Vertx vertx = Vertx.vertx();
    try {
      PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
      AtomicInteger onEventLoop = new AtomicInteger();
      AtomicInteger renderings = new AtomicInteger();
      Gauge.builder("probe", () -> {
        renderings.incrementAndGet();
        if (Context.isOnEventLoopThread()) {
          onEventLoop.incrementAndGet();
        }
        return 1;
      }).register(registry);
      Router router = Router.router(vertx);
      router.get("/metrics").handler(new MetricsScrape(vertx, registry, System::nanoTime, 0));
      HttpServer server = vertx.createHttpServer().requestHandler(router).listen(0, "127.0.0.1")
          .toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
      int pipelined = 50;
      try (RawHttp c = new RawHttp(server.actualPort())) {
        c.send("GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n".repeat(pipelined));
        for (int i = 0; i < pipelined; i++) {
          RawHttp.Answer a = c.read();
          assertEquals(200, a.status());
          assertEquals(MetricsScrape.CONTENT_TYPE, a.header("content-type"));
          assertTrue(a.body().contains("probe 1.0"), a.body());
        }
      }
      assertEquals(0, onEventLoop.get(), "rendered on the event loop " + onEventLoop.get() + " times");
      assertTrue(renderings.get() >= 1 && renderings.get() <= pipelined, renderings.get() + " renderings");
    } finally {
      vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }
  }

  /**
   * Scrapes one after another (not only concurrent ones) share a rendering for a second after it
   * began: 30 scrapes within the second cost one rendering, the first after it a second one.
   */
  @Test
  void aRenderingAnswersEveryScrapeOfTheFollowingSecond() throws Exception {
    Vertx vertx = Vertx.vertx();
    try {
      PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
      AtomicInteger renderings = new AtomicInteger();
      Gauge.builder("probe", () -> renderings.incrementAndGet()).register(registry);
      java.util.concurrent.atomic.AtomicLong now = new java.util.concurrent.atomic.AtomicLong(1_000_000_000L);
      Router router = Router.router(vertx);
      router.route("/metrics").handler(new MetricsScrape(vertx, registry, now::get, 1_000));
      HttpServer server = vertx.createHttpServer().requestHandler(router).listen(0, "127.0.0.1")
          .toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
      try (RawHttp c = new RawHttp(server.actualPort())) {
        for (int i = 0; i < 30; i++) {
          RawHttp.Answer a = c.send("GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n").read();
          assertEquals(200, a.status());
          assertTrue(a.body().contains("probe 1.0"), "the first rendering: " + a.body());
          now.addAndGet(TimeUnit.MILLISECONDS.toNanos(30)); // 30 scrapes in 900 ms
        }
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(100));
        RawHttp.Answer fresh = c.send("GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n").read();
        assertTrue(fresh.body().contains("probe 2.0"), "rendered again a second later: " + fresh.body());
      }
      assertEquals(2, renderings.get());
      try (RawHttp c = new RawHttp(server.actualPort())) {
        RawHttp.Answer head = c.send("HEAD /metrics HTTP/1.1\r\nHost: t\r\n\r\n").readHeadOnly();
        RawHttp.Answer get = c.send("GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n").read();
        assertEquals(200, head.status());
        assertEquals(Integer.toString(get.body().getBytes(java.nio.charset.StandardCharsets.UTF_8).length),
            head.header("content-length"), "HEAD: the Content-Length of the same rendering's GET");
      }
    } finally {
      vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }
  }

  /**
   * A rendering that meets a per-budget gauge being replaced (its old and new meter at once) fails
   * with DuplicateLabelsException; the scrape renders again instead of answering 500.
   */
  @Test
  void aRenderingThatMeetsAGaugeBeingReplacedIsRenderedAgain() throws Exception {
    Vertx vertx = Vertx.vertx();
    try {
      AtomicInteger scrapes = new AtomicInteger();
      PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT) {
        @Override
        public String scrape() {
          if (scrapes.incrementAndGet() == 1) {
            throw new io.prometheus.metrics.model.snapshots.DuplicateLabelsException(
                new io.prometheus.metrics.model.snapshots.MetricMetadata("retry_budget_limit_ratio"),
                io.prometheus.metrics.model.snapshots.Labels.of("budget", "oom"));
          }
          return super.scrape();
        }
      };
      Gauge.builder("probe", () -> 1).register(registry);
      Router router = Router.router(vertx);
      router.get("/metrics").handler(new MetricsScrape(vertx, registry, System::nanoTime, 0));
      HttpServer server = vertx.createHttpServer().requestHandler(router).listen(0, "127.0.0.1")
          .toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
      try (RawHttp c = new RawHttp(server.actualPort())) {
        c.send("GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n");
        RawHttp.Answer a = c.read();
        assertEquals(200, a.status(), a.body());
        assertTrue(a.body().contains("probe 1.0"), a.body());
      }
      assertEquals(2, scrapes.get(), "rendered again once");
    } finally {
      vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }
  }
}
