package io.retrybudget.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.server.servlet.IdempotencyFilter;
import io.retrybudget.server.servlet.QueueAdmissionFilter;
import io.retrybudget.server.vertx.VertxIdempotency;
import io.retrybudget.server.vertx.VertxQueueAdmission;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.handler.BodyHandler;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A replay of a stored idempotent answer is never shed by the admission queue, on Vert.x and on
 * Jetty 12.1 (real Redis): with the only worker held and the queue full, a new request is shed
 * 503 while the replay of a stored key is answered with the stored answer (it runs no handler, so
 * it bypasses the queue), and a request whose key is claimed waits as a retry.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class QueueReplayTest {
  @RegisterExtension
  static final RedisExtension redis = RedisExtension.standalone();

  private RedisBudgetStore connection;
  private IdempotencyGuard guard;
  private Vertx vertx;
  private HttpServer vertxServer;
  private ServletServer jetty;
  private final Map<String, AdmissionQueue> queues = new ConcurrentHashMap<>();
  private final Map<String, Integer> ports = new ConcurrentHashMap<>();
  private final Map<String, CompletableFuture<Void>> holds = new ConcurrentHashMap<>();
  private final AtomicInteger executions = new AtomicInteger();

  private static AdmissionQueue queue(String name) {
    return AdmissionQueue.builder(QueueConfig.builder(1).name(name).maxQueue(1).longTimeout(Duration.ofSeconds(30))
        .interval(Duration.ofSeconds(60)).build()).build();
  }

  private CompletableFuture<Void> hold(String key) {
    return holds.computeIfAbsent(key, k -> new CompletableFuture<>());
  }

  private StoredResponse charge() {
    executions.incrementAndGet();
    String json = "{\"charge_id\":\"" + UUID.randomUUID() + "\"}";
    return new StoredResponse(201, List.of(new StoredResponse.Header("Content-Type", "application/json")),
        json.getBytes(StandardCharsets.UTF_8));
  }

  @BeforeAll
  void start() throws Exception {
    connection = RedisBudgetStore.connect(redis.connectionOptions().build());
    IdempotencyConfig config = IdempotencyConfig.builder().build();
    guard = new IdempotencyGuard(new ClaimStore(connection, Duration.ofSeconds(2)), config);
    KeyLookup lookup = new KeyLookup(connection, Duration.ofSeconds(2), config);
    vertx = Vertx.vertx();
    queues.put("vertx", queue("vertx"));
    Router router = Router.router(vertx);
    router.post("/payments").handler(VertxQueueAdmission.handler(queues.get("vertx"), lookup));
    router.post("/payments").handler(BodyHandler.create().setBodyLimit(1024));
    router.post("/payments").handler(VertxIdempotency.handler(guard, ctx -> {
      String key = ctx.request().getHeader("Idempotency-Key");
      Future<Void> held = ctx.body().asString().contains("hold")
          ? Future.fromCompletionStage(hold(key), ctx.vertx().getOrCreateContext()) : Future.succeededFuture();
      return held.map(v -> charge());
    }));
    vertxServer = vertx.createHttpServer().requestHandler(router).listen(0, "127.0.0.1").await();
    ports.put("vertx", vertxServer.actualPort());
    queues.put("jetty", queue("jetty"));
    jetty = ServletServer.jetty()
        .filter("/payments", new QueueAdmissionFilter(queues.get("jetty"), lookup))
        .filter("/payments", new IdempotencyFilter(guard, 1024))
        .servlet("/payments", new HttpServlet() {
          @Override
          protected void doPost(HttpServletRequest req, HttpServletResponse res) throws IOException {
            if (new String(req.getInputStream().readAllBytes(), StandardCharsets.UTF_8).contains("hold")) {
              hold(req.getHeader("Idempotency-Key")).join();
            }
            StoredResponse a = charge();
            res.setStatus(a.status());
            res.setContentType("application/json");
            res.getOutputStream().write(a.body());
          }
        });
    ports.put("jetty", jetty.start());
  }

  @AfterAll
  void stop() throws Exception {
    holds.values().forEach(h -> h.complete(null));
    vertxServer.close().await();
    vertx.close().await();
    jetty.close();
    guard.close();
    connection.close();
    queues.values().forEach(AdmissionQueue::close);
  }

  private CompletableFuture<HttpResponse<String>> post(String adapter, String key, String body) {
    HttpRequest r = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + ports.get(adapter) + "/payments"))
        .timeout(Duration.ofSeconds(20)).header("Content-Type", "application/json").header("Idempotency-Key", key)
        .POST(HttpRequest.BodyPublishers.ofString(body)).build();
    HttpTestClient http = new HttpTestClient(ports.get(adapter));
    return CompletableFuture.supplyAsync(() -> http.send(r));
  }

  @ParameterizedTest
  @ValueSource(strings = {"vertx", "jetty"})
  void withTheWorkerHeldAndTheQueueFullAReplayIsAnsweredAndANewRequestIsShed(String adapter) {
    AdmissionQueue q = queues.get(adapter);
    String stored = UUID.randomUUID().toString();
    HttpResponse<String> original = post(adapter, stored, "{\"amount\":1}").join();
    assertEquals(201, original.statusCode());
    String held = UUID.randomUUID().toString();
    String queued = UUID.randomUUID().toString();
    CompletableFuture<HttpResponse<String>> h = post(adapter, held, "{\"hold\":1}");
    Eventually.await("the worker is held", Duration.ofSeconds(20), () -> q.running() == 1 && holds.containsKey(held));
    CompletableFuture<HttpResponse<String>> w = post(adapter, queued, "{\"amount\":2}");
    Eventually.await("the queue is full", Duration.ofSeconds(20), () -> q.queueLength() == 1);
    int before = executions.get();
    try {
      HttpResponse<String> shed = post(adapter, UUID.randomUUID().toString(), "{\"amount\":3}").join();
      assertEquals(503, shed.statusCode(), "a new request finds the queue full: " + shed.body());
      for (int i = 0; i < 3; i++) {
        HttpResponse<String> replay = post(adapter, stored, "{\"amount\":1}").join();
        assertEquals(201, replay.statusCode(), "a replay is never shed: " + replay.body());
        assertEquals(original.body(), replay.body());
        assertEquals("true", replay.headers().firstValue(IdempotencyGuard.REPLAYED_HEADER).orElse(null));
      }
      assertEquals(3, q.stats().replays());
      assertEquals(before, executions.get(), "nothing ran meanwhile");
      assertEquals(1, q.queueLength(), "the replays took no place in the queue");
    } finally {
      hold(held).complete(null);
    }
    assertEquals(201, h.join().statusCode());
    assertEquals(201, w.join().statusCode(), "the queued request ran once the worker was free");
    Eventually.await("idle", Duration.ofSeconds(20), () -> q.running() == 0);
    assertTrue(q.stats().droppedFull() >= 1);
  }
}
