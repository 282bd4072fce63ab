package io.retrybudget.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.netflix.concurrency.limits.limit.FixedLimit;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.retry.RetryPolicy;
import io.retrybudget.server.example.LayerDemo;
import io.retrybudget.server.micrometer.MicrometerServerKitMetrics;
import io.retrybudget.server.vertx.VertxAdmission;
import io.retrybudget.server.vertx.VertxIdempotency;
import io.retrybudget.server.vertx.VertxTies;
import io.retrybudget.testing.RedisExtension;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.handler.BodyHandler;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The kit's metrics through the real Vert.x adapters, a real Redis and a SimpleMeterRegistry. */
class MicrometerServerKitMetricsTest {
  @RegisterExtension
  static final RedisExtension redis = RedisExtension.standalone();

  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private final MicrometerServerKitMetrics metrics = new MicrometerServerKitMetrics(registry);
  private Vertx vertx;
  private RedisBudgetStore connection;
  private ClaimStore store;
  private HttpTestClient client;
  private final AtomicReference<Promise<StoredResponse>> held = new AtomicReference<>();

  @BeforeEach
  void start() {
    vertx = Vertx.vertx();
    connection = RedisBudgetStore.connect(redis.connectionOptions().commandTimeout(Duration.ofSeconds(20)).build());
    store = new ClaimStore(connection, Duration.ofMillis(300));
  }

  @AfterEach
  void stop() {
    redis.server().resume();
    vertx.close().await();
    connection.close();
  }

  private double count(String name, String... tags) {
    Counter c = registry.find(name).tags(tags).counter();
    return c == null ? 0 : c.count();
  }

  private static StoredResponse created() {
    return new StoredResponse(201, List.of(new StoredResponse.Header("Content-Type", "text/plain")),
        "charged".getBytes(StandardCharsets.UTF_8));
  }

  private int serve(Router router) {
    HttpServer server = vertx.createHttpServer().requestHandler(router).listen(0, "127.0.0.1").await();
    client = new HttpTestClient(server.actualPort());
    return server.actualPort();
  }

  @Test
  void idempotencyOutcomesByRouteTemplate() {
    IdempotencyGuard closed = new IdempotencyGuard(store, IdempotencyConfig.builder().build(), metrics);
    IdempotencyGuard open = new IdempotencyGuard(store, IdempotencyConfig.builder().failOpen(true).required(false).build(),
        metrics);
    metrics.monitor(closed).monitor(store);
    Router router = Router.router(vertx);
    router.route().handler(BodyHandler.create());
    router.post("/payments/:id").handler(VertxIdempotency.handler(closed, ctx -> {
      if (ctx.request().getHeader("X-Hold") != null) {
        Promise<StoredResponse> p = Promise.promise();
        held.set(p);
        return p.future();
      }
      return Future.succeededFuture(ctx.request().getHeader("X-Fail") != null
          ? new StoredResponse(500, List.of(), new byte[0]) : created());
    }));
    router.post("/open").handler(VertxIdempotency.handler(open, ctx -> Future.succeededFuture(created())));
    serve(router);
    String k = UUID.randomUUID().toString();
    assertEquals(201, client.post("/payments/1", k, "{}").statusCode());
    assertEquals(201, client.post("/payments/2", k + "-other-path", "{}").statusCode());
    assertEquals(201, client.post("/payments/1", k, "{}").statusCode(), "a replay");
    assertEquals(422, client.post("/payments/1", k, "{\"other\":1}").statusCode());
    assertEquals(400, client.post("/payments/1", null, "{}").statusCode());
    assertEquals(400, client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + client.port() + "/payments/1"))
        .header("Idempotency-Key", "a b").POST(HttpRequest.BodyPublishers.ofString("{}")).build()).statusCode());
    assertEquals(500, client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + client.port() + "/payments/9"))
        .header("Idempotency-Key", k + "-fail").header("X-Fail", "1").POST(HttpRequest.BodyPublishers.ofString("{}"))
        .build()).statusCode());
    // a duplicate while the first is held
    String h = k + "-held";
    CompletableFuture<HttpResponse<String>> first = CompletableFuture.supplyAsync(() -> client.send(HttpRequest.newBuilder(
        URI.create("http://127.0.0.1:" + client.port() + "/payments/3")).header("Idempotency-Key", h).header("X-Hold", "1")
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString("{}")).build()));
    io.retrybudget.testing.Eventually.await("the first is running", Duration.ofSeconds(10), () -> held.get() != null);
    assertEquals(1.0, registry.get("retry.server.idempotency.renewing").gauge().value(), "its lease is renewed");
    assertEquals(409, client.post("/payments/3", h, "{}").statusCode());
    vertx.runOnContext(v -> held.get().complete(created()));
    assertEquals(201, first.join().statusCode());
    assertEquals(201, client.post("/open", null, "{}").statusCode(), "no key where none is required");
    // Redis stops answering while a handler runs: its answer is sent, but cannot be stored
    held.set(null);
    CompletableFuture<HttpResponse<String>> unstored = CompletableFuture.supplyAsync(() -> client.send(HttpRequest.newBuilder(
        URI.create("http://127.0.0.1:" + client.port() + "/payments/4")).header("Idempotency-Key", h + "-unstored")
        .header("X-Hold", "1").header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString("{}"))
        .build()));
    io.retrybudget.testing.Eventually.await("the handler is running", Duration.ofSeconds(10), () -> held.get() != null);
    redis.server().pause();
    try {
      vertx.runOnContext(v -> held.get().complete(created()));
      assertEquals(201, unstored.join().statusCode(), "the answer goes out anyway");
    } finally {
      redis.server().resume();
    }
    // Redis stops answering within the store's 300 ms: fail closed on one guard, open on the other
    redis.server().pause();
    try {
      assertEquals(503, client.post("/payments/1", k + "-down", "{}").statusCode());
      assertEquals(201, client.post("/open", k + "-down", "{}").statusCode());
    } finally {
      redis.server().resume();
    }
    String r = "/payments/:id";
    assertEquals(5, count("retry.server.idempotency", "route", r, "outcome", "claimed"), "1, 2, 9, 3 and 4");
    assertEquals(1, count("retry.server.idempotency", "route", r, "outcome", "store_error_write"), "4");
    assertEquals(3, count("retry.server.idempotency", "route", r, "outcome", "stored"));
    assertEquals(1, count("retry.server.idempotency", "route", r, "outcome", "released"), "the 500");
    assertEquals(1, count("retry.server.idempotency", "route", r, "outcome", "replayed"));
    assertEquals(1, count("retry.server.idempotency", "route", r, "outcome", "mismatch"));
    assertEquals(1, count("retry.server.idempotency", "route", r, "outcome", "missing"));
    assertEquals(1, count("retry.server.idempotency", "route", r, "outcome", "invalid"));
    assertEquals(1, count("retry.server.idempotency", "route", r, "outcome", "conflict"));
    assertEquals(1, count("retry.server.idempotency", "route", r, "outcome", "store_error_fail_closed"));
    assertEquals(1, count("retry.server.idempotency", "route", "/open", "outcome", "no_key"));
    assertEquals(1, count("retry.server.idempotency", "route", "/open", "outcome", "store_error_fail_open"));
    assertNull(registry.find("retry.server.idempotency").tag("route", "/payments/1").counter(), "never a concrete path");
    assertEquals(0.0, registry.get("retry.server.idempotency.renewing").gauge().value());
    assertEquals(2.0, registry.get("retry.server.claims.unanswered").tag("result", "sent").functionCounter().count(),
        "the two claims Redis did not answer in time");
    closed.close();
    open.close();
  }

  @Test
  void admissionByPartitionWithItsLimitAndTiesWonAndLost() {
    RetryAwareAdmission admission = RetryAwareAdmission.builder().name("payments").limit(FixedLimit.of(1))
        .listener(metrics).build();
    metrics.monitor(admission);
    TieGuard ties = new TieGuard(store, Duration.ofSeconds(5), metrics);
    Router router = Router.router(vertx);
    router.get("/slow").handler(VertxAdmission.handler(admission));
    router.get("/slow").handler(ctx -> {
      Promise<StoredResponse> p = Promise.promise();
      held.set(p);
      p.future().onSuccess(a -> VertxIdempotency.write(ctx.response(), a));
    });
    router.get("/work/:id").handler(VertxTies.handler(ties));
    router.get("/work/:id").handler(ctx -> ctx.response().end("done"));
    serve(router);
    CompletableFuture<HttpResponse<String>> first = CompletableFuture.supplyAsync(() -> client.get("/slow"));
    io.retrybudget.testing.Eventually.await("the first is admitted", Duration.ofSeconds(10), () -> held.get() != null);
    assertEquals(1.0, registry.get("retry.server.admission.limit").tag("limiter", "payments").gauge().value());
    assertEquals(1.0, registry.get("retry.server.admission.inflight").tag("limiter", "payments").gauge().value());
    assertEquals(503, client.get("/slow").statusCode());
    assertEquals(503, client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + client.port() + "/slow"))
        .header("X-Retry-Attempt", "2").GET().build()).statusCode());
    vertx.runOnContext(v -> held.get().complete(created()));
    assertEquals(201, first.join().statusCode());
    assertEquals(1, count("retry.server.admission", "limiter", "payments", "partition", "first", "result", "admitted"));
    assertEquals(1, count("retry.server.admission", "limiter", "payments", "partition", "first", "result", "shed"));
    assertEquals(1, count("retry.server.admission", "limiter", "payments", "partition", "retry", "result", "shed"));
    assertEquals(2, count("retry.server.admission.shed.answers", "limiter", "payments", "pushback", "wait"));
    org.junit.jupiter.api.Assertions.assertTrue(admission.tryAcquire(1, KeyLookup.Seen.STORED).isPresent());
    assertEquals(1, count("retry.server.admission", "limiter", "payments", "partition", "replay", "result", "admitted"));

    String tie = UUID.randomUUID().toString();
    for (int copy = 1; copy <= 2; copy++) {
      client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + client.port() + "/work/" + copy))
          .header(TieGuard.TIE_HEADER, tie).GET().build());
    }
    assertEquals(1, count("retry.server.ties", "route", "/work/:id", "outcome", "won"));
    assertEquals(1, count("retry.server.ties", "route", "/work/:id", "outcome", "lost"));
  }

  @Test
  void middleLayerSuppressionsByReason() throws Exception {
    LayerDemo.Service c = LayerDemo.backend(vertx, 1.0, 0, 1);
    try (MiddleLayer middle = MiddleLayer.builder(HttpClient.newHttpClient())
        .policy(RetryPolicy.builder().maxAttempts(2).backoff(Duration.ofMillis(1), Duration.ofMillis(2)).build())
        .listener(metrics).build()) {
      HttpRequest call = HttpRequest.newBuilder(c.uri().resolve("/work")).GET().build();
      assertEquals(Downstream.Reason.FAILED_AFTER_RETRIES,
          middle.send(1, call, HttpResponse.BodyHandlers.ofString()).join().reason());
      assertEquals(Downstream.Reason.FAILED_AFTER_RETRIES,
          middle.send(2, call, HttpResponse.BodyHandlers.ofString()).join().reason());
    }
    LayerDemo.Service ok = LayerDemo.backend(vertx, 0.0, 0, 1);
    try (MiddleLayer middle = MiddleLayer.builder(HttpClient.newHttpClient()).listener(metrics).build()) {
      assertEquals(Downstream.Reason.ANSWERED, middle.send(1, HttpRequest.newBuilder(ok.uri().resolve("/work")).GET().build(),
          HttpResponse.BodyHandlers.ofString()).join().reason());
    }
    assertEquals(2, count("retry.server.suppressions", "reason", "failed_after_retries"));
    assertEquals(1, registry.find("retry.server.suppressions").counters().size(), "an answer is no suppression");
    c.close();
    ok.close();
  }

  @Test
  void theServletFilterTagsTheServletMappingNotThePath() throws Exception {
    IdempotencyGuard guard = new IdempotencyGuard(store, IdempotencyConfig.builder().build(), metrics);
    org.eclipse.jetty.server.Server server = new org.eclipse.jetty.server.Server();
    org.eclipse.jetty.server.ServerConnector connector = new org.eclipse.jetty.server.ServerConnector(server);
    connector.setHost("127.0.0.1");
    server.addConnector(connector);
    org.eclipse.jetty.ee11.servlet.ServletContextHandler context = new org.eclipse.jetty.ee11.servlet.ServletContextHandler();
    context.addServlet(new org.eclipse.jetty.ee11.servlet.ServletHolder(new jakarta.servlet.http.HttpServlet() {
      @Override
      protected void doPost(jakarta.servlet.http.HttpServletRequest req, jakarta.servlet.http.HttpServletResponse res)
          throws java.io.IOException {
        res.setStatus(201);
        res.getWriter().write("charged");
      }
    }), "/payments/*");
    context.addFilter(new org.eclipse.jetty.ee11.servlet.FilterHolder(new io.retrybudget.server.servlet.IdempotencyFilter(guard,
        64 * 1024)), "/payments/*", java.util.EnumSet.of(jakarta.servlet.DispatcherType.REQUEST));
    server.setHandler(context);
    server.start();
    try {
      HttpTestClient http = new HttpTestClient(connector.getLocalPort());
      String k = UUID.randomUUID().toString();
      assertEquals(201, http.post("/payments/1", k, "{}").statusCode());
      assertEquals(201, http.post("/payments/2", k + "-2", "{}").statusCode());
      assertEquals(201, http.post("/payments/1", k, "{}").statusCode());
      assertEquals(400, http.post("/payments/1", null, "{}").statusCode());
      assertEquals(2, count("retry.server.idempotency", "route", "/payments/*", "outcome", "claimed"));
      assertEquals(2, count("retry.server.idempotency", "route", "/payments/*", "outcome", "stored"));
      assertEquals(1, count("retry.server.idempotency", "route", "/payments/*", "outcome", "replayed"));
      assertEquals(1, count("retry.server.idempotency", "route", "/payments/*", "outcome", "missing"));
      assertEquals(4, registry.find("retry.server.idempotency").counters().size(), "one route, four outcomes");
    } finally {
      server.stop();
      guard.close();
    }
  }

  @Test
  void routesAreBoundedAndAThrowingListenerNeverReachesTheRequest() {
    MicrometerServerKitMetrics two = new MicrometerServerKitMetrics(registry, 2);
    two.onIdempotency("/a", ServerKitListener.IdempotencyOutcome.CLAIMED);
    two.onIdempotency("/b", ServerKitListener.IdempotencyOutcome.CLAIMED);
    two.onIdempotency("/c", ServerKitListener.IdempotencyOutcome.CLAIMED);
    two.onIdempotency("/d", ServerKitListener.IdempotencyOutcome.CLAIMED);
    two.onIdempotency("", ServerKitListener.IdempotencyOutcome.CLAIMED);
    two.onIdempotency("/a", ServerKitListener.IdempotencyOutcome.CLAIMED);
    assertEquals(2, count("retry.server.idempotency", "route", "/a"));
    assertEquals(1, count("retry.server.idempotency", "route", "/b"));
    assertEquals(2, count("retry.server.idempotency", "route", "other"));
    assertEquals(1, count("retry.server.idempotency", "route", "unmatched"));
    assertEquals(4, registry.find("retry.server.idempotency").counters().size());
    assertThrows(IllegalArgumentException.class, () -> new MicrometerServerKitMetrics(registry, 0));

    ServerKitListener broken = new ServerKitListener() {
      @Override
      public void onIdempotency(String route, IdempotencyOutcome outcome) {
        throw new IllegalStateException("a broken metrics backend");
      }
    };
    IdempotencyGuard guard = new IdempotencyGuard(store, IdempotencyConfig.builder().build(), broken);
    Router router = Router.router(vertx);
    router.route().handler(BodyHandler.create());
    router.post("/p").handler(VertxIdempotency.handler(guard, ctx -> Future.succeededFuture(created())));
    serve(router);
    String k = UUID.randomUUID().toString();
    assertEquals(201, client.post("/p", k, "{}").statusCode());
    assertEquals("true", client.post("/p", k, "{}").headers().firstValue("Idempotent-Replayed").orElse(null));
    guard.close();
  }
}
