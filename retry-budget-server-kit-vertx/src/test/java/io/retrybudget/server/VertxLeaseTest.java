package io.retrybudget.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.server.vertx.VertxIdempotency;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.handler.BodyHandler;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The claim's lease behind {@link VertxIdempotency}: a handler still working past its deadline keeps
 * its claim (renewed) and its late answer is stored and replayed (the lease itself: server-kit's
 * {@code IdempotencyLeaseTest}).
 */
class VertxLeaseTest {
  @RegisterExtension
  static final RedisExtension redis = RedisExtension.standalone();

  private static final StoredResponse CHARGED = new StoredResponse(201, List.of(), "charged".getBytes(StandardCharsets.UTF_8));

  private RedisBudgetStore connection;
  private ClaimStore store;

  @BeforeEach
  void connect() {
    connection = RedisBudgetStore.connect(redis.connectionOptions().commandTimeout(Duration.ofMillis(500)).build());
    store = new ClaimStore(connection, Duration.ofSeconds(2));
  }

  @AfterEach
  void close() {
    connection.close();
  }

  private static long redisNowMillis() {
    List<?> t = (List<?>) redis.server().call("TIME");
    return Long.parseLong(String.valueOf(t.get(0))) * 1000 + Long.parseLong(String.valueOf(t.get(1))) / 1000;
  }

  private static long leaseEnd(String key) {
    return Long.parseLong((String) redis.server().call("HGET", ClaimStore.idempotencyKey("", key), "until"));
  }

  @Test
  void aVertxHandlerPastItsDeadlineKeepsItsClaimAndItsLateAnswerIsStoredAndReplayed() throws Exception {
    Vertx vertx = Vertx.vertx();
    // lease 1 s, renewed every 333 ms: a renewal late by up to 600 ms (a loaded machine) still holds it
    IdempotencyGuard guard = new IdempotencyGuard(store,
        IdempotencyConfig.builder().handlerTimeout(Duration.ofMillis(300)).leaseMargin(Duration.ofMillis(700)).build());
    try {
      Promise<StoredResponse> slow = Promise.promise(); // a handler still working long past its deadline
      java.util.concurrent.atomic.AtomicInteger executions = new java.util.concurrent.atomic.AtomicInteger();
      Router router = Router.router(vertx);
      router.route().handler(BodyHandler.create());
      router.post("/payments").handler(VertxIdempotency.handler(guard, ctx -> {
        executions.incrementAndGet();
        return slow.future();
      }));
      int port = vertx.createHttpServer().requestHandler(router).listen(0, "127.0.0.1").await().actualPort();
      HttpTestClient http = new HttpTestClient(port);
      String key = UUID.randomUUID().toString();
      HttpResponse<String> first = http.post("/payments", key, "{\"amount\": 1}");
      assertEquals(503, first.statusCode());
      assertTrue(first.body().contains("urn:retrybudget:problem:handler-timeout"), first.body());
      assertTrue(first.body().contains("still being processed"), "the 503 says the work goes on: " + first.body());
      assertEquals(1, guard.renewing(), "past its deadline the claim is still renewed while the handler runs");
      long firstLeaseEnd = leaseEnd(key);
      Eventually.await("Redis time passes three leases", Duration.ofSeconds(10), () -> redisNowMillis() > firstLeaseEnd + 2_000);
      assertEquals(409, http.post("/payments", key, "{\"amount\": 1}").statusCode(), "the claim is kept: no takeover");
      assertEquals(1, executions.get(), "executed once");
      vertx.runOnContext(v -> slow.complete(CHARGED)); // the late answer
      Eventually.await("the late answer is stored", Duration.ofSeconds(10),
          () -> "done".equals(redis.server().call("HGET", ClaimStore.idempotencyKey("", key), "state")));
      HttpResponse<String> replay = http.post("/payments", key, "{\"amount\": 1}");
      assertEquals(201, replay.statusCode());
      assertEquals("charged", replay.body());
      assertEquals("true", replay.headers().firstValue(IdempotencyGuard.REPLAYED_HEADER).orElse(null));
      assertEquals(1, executions.get(), "never executed again");
      assertEquals(0, guard.renewing(), "no renewal left once the answer is stored");
    } finally {
      guard.close();
      vertx.close().await();
    }
  }
}
