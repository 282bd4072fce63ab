package io.retrybudget.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.server.vertx.VertxIdempotency;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import io.vertx.core.Vertx;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.handler.BodyHandler;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** A holder killed while it holds a claim, and Redis killed under the server (real processes). */
class IdempotencyFaultTest {
  @RegisterExtension
  static final RedisExtension redis = RedisExtension.standalone();

  private final TestPayments app = new TestPayments();
  private RedisBudgetStore connection;
  private ClaimStore store;
  private Vertx vertx;
  /** The guards of each replica's process (their lease renewals die with it). */
  private final java.util.Map<Vertx, java.util.List<IdempotencyGuard>> guards = new java.util.concurrent.ConcurrentHashMap<>();

  @BeforeEach
  void connect() {
    connection = RedisBudgetStore.connect(redis.connectionOptions().commandTimeout(Duration.ofMillis(500)).build());
    store = new ClaimStore(connection, Duration.ofMillis(300));
    vertx = Vertx.vertx();
  }

  @AfterEach
  void close() {
    guards.values().forEach(l -> l.forEach(IdempotencyGuard::close));
    vertx.close().await();
    connection.close();
    if (!redis.server().isAlive()) {
      redis.server().restart();
    }
  }

  /** A replica on its own Vert.x: POST /payments (closed), /open (fail open); PUT /payments. */
  private int replica(Vertx on, IdempotencyConfig config) {
    IdempotencyGuard closed = new IdempotencyGuard(store, config);
    IdempotencyGuard open = new IdempotencyGuard(store, IdempotencyConfig.builder().failOpen(true).build());
    guards.computeIfAbsent(on, v -> new java.util.ArrayList<>()).addAll(java.util.List.of(closed, open));
    Router router = Router.router(on);
    router.route().handler(BodyHandler.create());
    router.post("/payments").handler(VertxIdempotency.handler(closed, ctx -> {
      String key = ctx.request().getHeader("Idempotency-Key");
      if (ctx.request().getHeader("X-Hold") != null) {
        return io.vertx.core.Future.fromCompletionStage(app.hold(key), ctx.vertx().getOrCreateContext())
            .map(x -> app.answer(key, ctx.body().asString(), io.retrybudget.server.vertx.VertxIdempotency.context(ctx)));
      }
      return VertxIdempotencyTest.handle(ctx, app);
    }));
    router.put("/payments").handler(VertxIdempotency.handler(closed, ctx -> VertxIdempotencyTest.handle(ctx, app)));
    router.post("/open").handler(VertxIdempotency.handler(open, ctx -> VertxIdempotencyTest.handle(ctx, app)));
    return on.createHttpServer().requestHandler(router).listen(0, "127.0.0.1").await().actualPort();
  }

  @Test
  void afterAKilledHoldersLeaseADuplicateExecutesOnceAndTheStaleWriteIsRefused() {
    IdempotencyConfig shortLease = IdempotencyConfig.builder()
        .handlerTimeout(Duration.ofMillis(300)).leaseMargin(Duration.ofMillis(100)).build();
    Vertx doomed = Vertx.vertx();
    HttpTestClient a = new HttpTestClient(replica(doomed, shortLease));
    HttpTestClient b = new HttpTestClient(replica(vertx, shortLease));
    String key = UUID.randomUUID().toString();
    CompletableFuture.runAsync(() -> {
      try {
        // the same request as B's below; X-Hold (not in the fingerprint) makes this replica's handler wait
        a.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + a.port() + "/payments"))
            .header("Idempotency-Key", key).header("Content-Type", "application/json").header("X-Hold", "1")
            .POST(HttpRequest.BodyPublishers.ofString("{\"amount\":5}")).build());
      } catch (RuntimeException killed) {
        // the connection dies with the replica
      }
    });
    Eventually.await("replica A holds the claim", Duration.ofSeconds(10), () -> app.holds.containsKey(key));
    String recordKey = ClaimStore.idempotencyKey("", key);
    long staleFence = Long.parseLong(String.valueOf(redis.server().call("HGET", recordKey, "fence")));
    assertEquals(409, b.post("/payments", key, "{\"amount\":5}").statusCode(), "within A's lease B answers 409");
    // killed: its handler never finishes, its claim is never completed, released nor renewed
    guards.remove(doomed).forEach(IdempotencyGuard::close);
    doomed.close().await();
    HttpResponse<String>[] answer = new HttpResponse[1];
    Eventually.await("A's lease runs out and B executes", Duration.ofSeconds(10), () -> {
      answer[0] = b.post("/payments", key, "{\"amount\":5}");
      return answer[0].statusCode() != 409;
    });
    assertEquals(201, answer[0].statusCode());
    assertEquals(1, app.executions(key), "A never finished; B executed once");

    Claim.Claimed stale = new Claim.Claimed(recordKey, staleFence, false);
    StoredResponse late = new StoredResponse(201, java.util.List.of(), "{\"late\":true}".getBytes());
    assertFalse(store.complete(stale, late, Duration.ofHours(1)).join(), "A's late write with its stale token is refused");
    HttpResponse<String> replay = b.post("/payments", key, "{\"amount\":5}");
    assertEquals(answer[0].body(), replay.body(), "the record still holds B's answer");
    assertEquals("true", replay.headers().firstValue(IdempotencyGuard.REPLAYED_HEADER).orElse(null));
    assertEquals(1, app.executions(key));
  }

  @Test
  void redisKilledFailsClosedOnPostAndOpenWhereConfigured() {
    HttpTestClient http = new HttpTestClient(replica(vertx, IdempotencyConfig.builder().build()));
    assertEquals(201, http.post("/payments", UUID.randomUUID().toString(), "{\"amount\":1}").statusCode());
    redis.server().kill();
    int before = app.total.get();

    HttpResponse<String> closed = http.post("/payments", UUID.randomUUID().toString(), "{\"amount\":1}");
    assertEquals(503, closed.statusCode());
    assertTrue(closed.body().contains("idempotency-store-unavailable"), closed.body());
    assertEquals("1", closed.headers().firstValue("Retry-After").orElse(null));
    assertEquals("1000", closed.headers().firstValue("X-Retry-Pushback-Ms").orElse(null));
    assertEquals(before, app.total.get(), "a POST that cannot be deduplicated does not run");

    assertEquals(201, http.post("/open", UUID.randomUUID().toString(), "{\"amount\":1}").statusCode(), "fail open runs it");
    HttpResponse<String> put = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + http.port() + "/payments"))
        .header("Idempotency-Key", UUID.randomUUID().toString())
        .PUT(HttpRequest.BodyPublishers.ofString("{\"amount\":1}")).build());
    assertEquals(201, put.statusCode(), "an idempotent method runs anyway");
    assertEquals(before + 2, app.total.get());

    redis.server().restart();
    String key = UUID.randomUUID().toString();
    Eventually.await("the store recovers with Redis", Duration.ofSeconds(10),
        () -> http.post("/payments", key, "{\"amount\":1}").statusCode() == 201);
    assertEquals("true", http.post("/payments", key, "{\"amount\":1}").headers()
        .firstValue(IdempotencyGuard.REPLAYED_HEADER).orElse(null), "and deduplicates again");
  }

  @Test
  void aGuardedPutFailsClosedWithRedisDownUnlessFailOpen() {
    IdempotencyGuard closed = new IdempotencyGuard(store, IdempotencyConfig.builder().methods(java.util.Set.of("POST", "PUT")).build());
    IdempotencyGuard open = new IdempotencyGuard(store,
        IdempotencyConfig.builder().methods(java.util.Set.of("POST", "PUT")).failOpen(true).build());
    Router router = Router.router(vertx);
    router.route().handler(BodyHandler.create());
    router.put("/ledger").handler(VertxIdempotency.handler(closed, ctx -> VertxIdempotencyTest.handle(ctx, app)));
    router.put("/open").handler(VertxIdempotency.handler(open, ctx -> VertxIdempotencyTest.handle(ctx, app)));
    int port = vertx.createHttpServer().requestHandler(router).listen(0, "127.0.0.1").await().actualPort();
    HttpTestClient http = new HttpTestClient(port);
    java.util.function.Function<String, HttpResponse<String>> put = path -> http.send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).header("Idempotency-Key", UUID.randomUUID().toString())
            .PUT(HttpRequest.BodyPublishers.ofString("{\"amount\":1}")).build());
    redis.server().kill();
    int before = app.total.get();
    HttpResponse<String> refused = put.apply("/ledger");
    assertEquals(503, refused.statusCode(), "a PUT the operator guards fails closed like a POST: " + refused.body());
    assertTrue(refused.body().contains("idempotency-store-unavailable"), refused.body());
    assertEquals(before, app.total.get(), "and does not run");
    assertEquals(201, put.apply("/open").statusCode(), "failOpen runs it unguarded");
    assertEquals(before + 1, app.total.get());
    closed.close();
    open.close();
  }
}
