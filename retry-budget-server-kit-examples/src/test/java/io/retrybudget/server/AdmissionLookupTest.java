package io.retrybudget.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.netflix.concurrency.limits.limit.FixedLimit;
import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.server.servlet.AdmissionFilter;
import io.retrybudget.server.servlet.IdempotencyFilter;
import io.retrybudget.server.vertx.VertxAdmission;
import io.retrybudget.server.vertx.VertxIdempotency;
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
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Admission looks a request's idempotency key up before shedding it, on Vert.x and on Jetty 12.1:
 * at the limit a key with a stored answer is replayed (never shed), and a key that is claimed
 * makes a request a retry that gets the retry partition's share, whatever X-Retry-Attempt says.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class AdmissionLookupTest {
  @RegisterExtension
  static final RedisExtension redis = RedisExtension.standalone();

  private RedisBudgetStore connection;
  private IdempotencyGuard guard;
  private KeyLookup lookup;
  private Vertx vertx;
  private HttpServer vertxServer;
  private ServletServer jetty;
  private final Map<String, RetryAwareAdmission> admissions = new ConcurrentHashMap<>();
  private final Map<String, Integer> ports = new ConcurrentHashMap<>();
  private final Map<String, CompletableFuture<Void>> holds = new ConcurrentHashMap<>();

  /** Limit 2 with half of it the retries' share: at the limit one retry is still admitted. */
  private static RetryAwareAdmission admission() {
    return RetryAwareAdmission.builder().limit(FixedLimit.of(2)).retryShare(0.5).build();
  }

  private CompletableFuture<Void> hold(String key) {
    return holds.computeIfAbsent(key, k -> new CompletableFuture<>());
  }

  private StoredResponse charge(String key) {
    String json = "{\"charge_id\":\"" + UUID.randomUUID() + "\"}";
    return new StoredResponse(201, List.of(new StoredResponse.Header("Content-Type", "application/json")),
        json.getBytes(StandardCharsets.UTF_8));
  }

  @BeforeAll
  void start() throws Exception {
    connection = RedisBudgetStore.connect(redis.connectionOptions().build());
    IdempotencyConfig config = IdempotencyConfig.builder().build();
    guard = new IdempotencyGuard(new ClaimStore(connection, Duration.ofSeconds(2)), config);
    lookup = new KeyLookup(connection, Duration.ofSeconds(2), config);
    vertx = Vertx.vertx();
    admissions.put("vertx", admission());
    Router router = Router.router(vertx);
    router.post("/payments").handler(VertxAdmission.handler(admissions.get("vertx"), lookup));
    router.post("/payments").handler(BodyHandler.create().setBodyLimit(1024));
    router.post("/payments").handler(VertxIdempotency.handler(guard, ctx -> {
      String key = ctx.request().getHeader("Idempotency-Key");
      Future<Void> held = ctx.body().asString().contains("hold")
          ? Future.fromCompletionStage(hold(key), ctx.vertx().getOrCreateContext()) : Future.succeededFuture();
      return held.map(v -> charge(key));
    }));
    vertxServer = vertx.createHttpServer().requestHandler(router).listen(0, "127.0.0.1").await();
    ports.put("vertx", vertxServer.actualPort());
    admissions.put("jetty", admission());
    jetty = ServletServer.jetty()
        .filter("/payments", new AdmissionFilter(admissions.get("jetty"), lookup))
        .filter("/payments", new IdempotencyFilter(guard, 1024))
        .servlet("/payments", new HttpServlet() {
          @Override
          protected void doPost(HttpServletRequest req, HttpServletResponse res) throws IOException {
            String key = req.getHeader("Idempotency-Key");
            if (new String(req.getInputStream().readAllBytes(), StandardCharsets.UTF_8).contains("hold")) {
              hold(key).join();
            }
            StoredResponse a = charge(key);
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
  }

  private CompletableFuture<HttpResponse<String>> post(String adapter, String key, Integer attempt, String body) {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + ports.get(adapter) + "/payments"))
        .timeout(Duration.ofSeconds(20)).header("Content-Type", "application/json").header("Idempotency-Key", key)
        .POST(HttpRequest.BodyPublishers.ofString(body));
    if (attempt != null) {
      b.header(RetryAwareAdmission.ATTEMPT_HEADER, attempt.toString());
    }
    HttpTestClient http = new HttpTestClient(ports.get(adapter));
    return CompletableFuture.supplyAsync(() -> http.send(b.build()));
  }

  @ParameterizedTest
  @ValueSource(strings = {"vertx", "jetty"})
  void atTheLimitAReplayIsAnsweredAndARetryByKeyKeepsItsShare(String adapter) {
    RetryAwareAdmission admission = admissions.get(adapter);
    String stored = UUID.randomUUID().toString();
    HttpResponse<String> original = post(adapter, stored, null, "{\"amount\":1}").join();
    assertEquals(201, original.statusCode());
    String held1 = UUID.randomUUID().toString();
    String held2 = UUID.randomUUID().toString();
    CompletableFuture<HttpResponse<String>> h1 = post(adapter, held1, null, "{\"hold\":1}");
    CompletableFuture<HttpResponse<String>> h2 = post(adapter, held2, null, "{\"hold\":2}");
    // both in their handlers (their keys claimed, so neither can end early and free its permit)
    Eventually.await("two first attempts fill the limit", Duration.ofSeconds(10),
        () -> holds.containsKey(held1) && holds.containsKey(held2) && admission.inflight() == 2);
    try {
      assertEquals(503, post(adapter, UUID.randomUUID().toString(), null, "{\"amount\":3}").join().statusCode(),
          "a new first attempt at the limit is shed");
      for (Integer attempt : new Integer[] {2, null}) {
        HttpResponse<String> replay = post(adapter, stored, attempt, "{\"amount\":1}").join();
        assertEquals(201, replay.statusCode(), "a replay at the limit (X-Retry-Attempt " + attempt + "): " + replay.body());
        assertEquals(original.body(), replay.body());
        assertEquals("true", replay.headers().firstValue(IdempotencyGuard.REPLAYED_HEADER).orElse(null));
      }
      // a retry of a held request without X-Retry-Attempt: its claimed key makes it a retry, which
      // the retry partition admits (the guard then answers 409: the first is still running)
      HttpResponse<String> retry = post(adapter, held1, null, "{\"hold\":1}").join();
      assertEquals(409, retry.statusCode(), "the retry was admitted in its partition: " + retry.body());
      // the replay sent as attempt 2 took the free retry share; the one without the header was
      // looked up and admitted as a replay, outside the limit
      assertEquals(1, admission.stats().admittedReplay());
    } finally {
      hold(held1).complete(null);
      hold(held2).complete(null);
    }
    assertEquals(201, h1.join().statusCode());
    assertEquals(201, h2.join().statusCode());
    Eventually.await("every permit ended", Duration.ofSeconds(10), () -> admission.inflight() == 0);
  }

  @Test
  void atTheLimitTheRetryPartitionKeepsItsShareAgainstTheHeadroom() {
    RetryAwareAdmission a = RetryAwareAdmission.builder().limit(FixedLimit.of(10)).build(); // share 10 %, headroom 20 %
    List<RetryAwareAdmission.Permit> firsts = new java.util.ArrayList<>();
    for (int i = 0; i < 10; i++) {
      firsts.add(a.tryAcquire(1).orElseThrow());
    }
    assertTrue(a.tryAcquire(1).isEmpty(), "first attempts fill 10 of 10");
    RetryAwareAdmission.Permit retry = a.tryAcquire(2).orElseThrow(() -> new AssertionError(
        "with first attempts filling 10 of 10 a retry gets its 10 % share"));
    assertTrue(a.tryAcquire(2).isEmpty(), "one retry is the share of 10 %");
    assertTrue(a.tryAcquire(1, KeyLookup.Seen.IN_PROGRESS).isEmpty(), "a claimed key counts as a retry: shed too");
    assertTrue(a.tryAcquire(1, KeyLookup.Seen.STORED).isPresent(), "a replay is never shed");
    retry.onSuccess();
    assertTrue(a.tryAcquire(1, KeyLookup.Seen.IN_PROGRESS).isPresent(), "the retry share is free again");
    firsts.forEach(RetryAwareAdmission.Permit::onSuccess);
  }
}
