package io.retrybudget.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * One set of Idempotency-Key assertions that every adapter passes unchanged, over a real HTTP
 * server and a real Redis: {@code VertxIdempotencyTest} (Vert.x Web, retry-budget-server-kit-vertx),
 * {@code ServletIdempotencyTest} and {@code TomcatIdempotencyTest} (Jetty 12.1 ee11 and Tomcat 11,
 * retry-budget-server-kit-servlet). It ships in server-kit's test-jar for them.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class IdempotencyContract {
  protected final TestPayments app = new TestPayments();
  protected RedisBudgetStore connection;
  protected IdempotencyGuard payments;
  protected IdempotencyGuard waiting;
  /** POST /stored/payments: {@link OutcomePolicy#STORE_ALL}, handlerTimeout 300 ms, lease 1.2 s. */
  protected IdempotencyGuard storeAll;
  protected HttpTestClient http;

  protected abstract RedisExtension redis();

  /**
   * Starts the server: POST /payments on {@code payments}, POST /waiting/payments on {@code waiting},
   * POST /stored/payments on {@link #storeAll}.
   */
  protected abstract int startServer(IdempotencyGuard payments, IdempotencyGuard waiting, TestPayments app) throws Exception;

  protected abstract void stopServer() throws Exception;

  @BeforeAll
  void start() throws Exception {
    connection = RedisBudgetStore.connect(redis().connectionOptions().build());
    ClaimStore store = new ClaimStore(connection, Duration.ofSeconds(2));
    IdempotencyConfig.Builder config = IdempotencyConfig.builder().callerIdentity(r -> r.header("X-Caller"));
    payments = new IdempotencyGuard(store, config.build());
    // a short deadline (lease 1.2 s, renewed every 400 ms): handlers that outlive it
    storeAll = new IdempotencyGuard(store, IdempotencyConfig.builder().callerIdentity(r -> r.header("X-Caller"))
        .outcomes(OutcomePolicy.STORE_ALL).handlerTimeout(Duration.ofMillis(300)).leaseMargin(Duration.ofMillis(900)).build());
    waiting = new IdempotencyGuard(store, config.waitForInProgress(Duration.ofSeconds(10)).build());
    port = startServer(payments, waiting, app);
    http = new HttpTestClient(port);
  }

  @AfterAll
  void stop() throws Exception {
    stopServer();
    payments.close();
    waiting.close();
    storeAll.close();
    connection.close();
  }

  static String newKey() {
    return UUID.randomUUID().toString();
  }

  @Test
  void aMissingKeyIs400AndNothingRuns() {
    int before = app.total.get();
    HttpResponse<String> r = http.post("/payments", null, "{\"amount\":5}");
    assertEquals(400, r.statusCode());
    assertEquals(Problems.CONTENT_TYPE, r.headers().firstValue("Content-Type").orElse(""));
    assertTrue(r.body().contains("\"type\":\"urn:retrybudget:problem:idempotency-key-missing\""), r.body());
    assertTrue(r.body().contains("\"status\":400"), r.body());
    assertEquals(before, app.total.get());
  }

  @Test
  void otherMethodsOnTheRoutePassThroughWithoutAKey() {
    HttpResponse<String> r = http.get("/payments");
    assertEquals(405, r.statusCode(), "the application's own answer for GET, not the guard's 400: " + r.body());
  }

  @Test
  void anInvalidKeyIs400() {
    HttpResponse<String> r = http.post("/payments", "\"unterminated", "{\"amount\":5}");
    assertEquals(400, r.statusCode());
    assertTrue(r.body().contains("idempotency-key-invalid"), r.body());
    assertEquals(400, http.post("/payments", "x".repeat(256), "{\"amount\":5}").statusCode(), "longer than 255");
  }

  @Test
  void aDuplicateReplaysTheFirstAnswerWithTheReplayHeader() {
    String key = newKey();
    HttpResponse<String> first = http.post("/payments", key, "{\"amount\":5}");
    assertEquals(201, first.statusCode());
    assertFalse(first.headers().firstValue(IdempotencyGuard.REPLAYED_HEADER).isPresent());
    assertEquals("v", first.headers().firstValue("X-Not-Stored").orElse(null));
    HttpResponse<String> again = http.post("/payments", key, "{\"amount\":5}");
    assertEquals(201, again.statusCode());
    assertEquals(first.body(), again.body());
    assertEquals(first.headers().firstValue("Location"), again.headers().firstValue("Location"));
    assertEquals("application/json", again.headers().firstValue("Content-Type").orElse(""));
    assertEquals("true", again.headers().firstValue(IdempotencyGuard.REPLAYED_HEADER).orElse(null));
    assertFalse(again.headers().firstValue("X-Not-Stored").isPresent(), "only the chosen headers are stored");
    assertEquals(1, app.executions(key));
    // the draft's sf-string form names the same key
    assertEquals(first.body(), http.post("/payments", "\"" + key + "\"", "{\"amount\":5}").body());
  }

  @Test
  void theSameKeyWithAnotherBodyIs422() {
    String key = newKey();
    assertEquals(201, http.post("/payments", key, "{\"amount\":5}").statusCode());
    HttpResponse<String> other = http.post("/payments", key, "{\"amount\":6}");
    assertEquals(422, other.statusCode());
    assertTrue(other.body().contains("idempotency-key-reused"), other.body());
    assertEquals(1, app.executions(key));
  }

  @Test
  void keysOfDifferentCallersNeverMeet() {
    String key = newKey();
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base() + "/payments"))
        .header("Content-Type", "application/json").header("Idempotency-Key", key)
        .POST(HttpRequest.BodyPublishers.ofString("{\"amount\":5}"));
    HttpResponse<String> alice = http.send(b.copy().header("X-Caller", "alice").build());
    HttpResponse<String> bob = http.send(b.copy().header("X-Caller", "bob").build());
    assertEquals(201, alice.statusCode());
    assertEquals(201, bob.statusCode());
    assertFalse(alice.body().equals(bob.body()));
    assertEquals(2, app.executions(key));
  }

  @Test
  void aDuplicateWhileInProgressIs409WithPushbackThenReplays() {
    String key = newKey();
    String body = "{\"amount\":5,\"hold\":true}";
    CompletableFuture<HttpResponse<String>> first = CompletableFuture.supplyAsync(() -> http.post("/payments", key, body));
    Eventually.await("the first request is executing", Duration.ofSeconds(10), () -> app.holds.containsKey(key));
    HttpResponse<String> dup = http.post("/payments", key, body);
    assertEquals(409, dup.statusCode());
    assertEquals(Problems.CONTENT_TYPE, dup.headers().firstValue("Content-Type").orElse(""));
    assertTrue(dup.body().contains("idempotency-key-in-progress"), dup.body());
    assertEquals("1", dup.headers().firstValue("Retry-After").orElse(null));
    assertEquals("1000", dup.headers().firstValue("X-Retry-Pushback-Ms").orElse(null));
    app.release(key);
    HttpResponse<String> answer = first.join();
    assertEquals(201, answer.statusCode());
    HttpResponse<String> later = http.post("/payments", key, body);
    assertEquals(answer.body(), later.body());
    assertEquals(1, app.executions(key));
  }

  @Test
  void withABoundedWaitADuplicateWaitsAndReplays() {
    String key = newKey();
    String body = "{\"amount\":5,\"hold\":true}";
    CompletableFuture<HttpResponse<String>> first = CompletableFuture.supplyAsync(() -> http.post("/waiting/payments", key, body));
    Eventually.await("the first request is executing", Duration.ofSeconds(10), () -> app.holds.containsKey(key));
    long inProgressBefore = waiting.stats().inProgress();
    CompletableFuture<HttpResponse<String>> dup = CompletableFuture.supplyAsync(() -> http.post("/waiting/payments", key, body));
    assertFalse(dup.isDone());
    app.release(key);
    HttpResponse<String> a = first.join();
    HttpResponse<String> d = dup.join();
    assertEquals(201, d.statusCode());
    assertEquals(a.body(), d.body());
    assertEquals("true", d.headers().firstValue(IdempotencyGuard.REPLAYED_HEADER).orElse(null));
    assertEquals(inProgressBefore, waiting.stats().inProgress(), "no 409 was given");
    assertEquals(1, app.executions(key));
  }

  @Test
  void a5xxReleasesTheClaimAValidation4xxIsNotStoredAndOther4xxAre() {
    String key = newKey();
    assertEquals(503, http.post("/payments", key, "{\"status\":503}").statusCode());
    assertEquals(503, http.post("/payments", key, "{\"status\":503}").statusCode());
    assertEquals(2, app.executions(key), "a 5xx is not replayed: the retry executes");

    // a 400 or 422 refuses the request before executing (Stripe saves no result for it): the
    // corrected request with the same key executes instead of getting 422 for 24 h
    String k400 = newKey();
    assertEquals(400, http.post("/payments", k400, "{\"status\":400}").statusCode());
    HttpResponse<String> corrected = http.post("/payments", k400, "{\"amount\":3}");
    assertEquals(201, corrected.statusCode(), corrected.body());
    assertEquals(2, app.executions(k400));
    String k422 = newKey();
    assertEquals(422, http.post("/payments", k422, "{\"status\":422}").statusCode());
    assertEquals(201, http.post("/payments", k422, "{\"amount\":3}").statusCode());

    String k403 = newKey();
    HttpResponse<String> forbidden = http.post("/payments", k403, "{\"status\":403}");
    HttpResponse<String> again = http.post("/payments", k403, "{\"status\":403}");
    assertEquals(403, again.statusCode());
    assertEquals(forbidden.body(), again.body());
    assertEquals(1, app.executions(k403), "a final 4xx answer is the request's answer: replayed");

    String k429 = newKey();
    http.post("/payments", k429, "{\"status\":429}");
    http.post("/payments", k429, "{\"status\":429}");
    assertEquals(2, app.executions(k429), "429 means not now: released");
  }

  @Test
  void storeAllReplaysAHandlerThatFailedAfterItsSideEffectAndNeverRunsItAgain() {
    String key = newKey();
    HttpResponse<String> first = http.post("/stored/payments", key, "{\"fail\":true}");
    assertEquals(500, first.statusCode());
    assertTrue(first.body().contains("urn:retrybudget:problem:handler-failed"), first.body());
    for (int i = 0; i < 2; i++) {
      HttpResponse<String> retry = http.post("/stored/payments", key, "{\"fail\":true}");
      assertEquals(500, retry.statusCode());
      assertEquals(first.body(), retry.body());
      assertEquals("true", retry.headers().firstValue(IdempotencyGuard.REPLAYED_HEADER).orElse(null));
    }
    assertEquals(1, app.executions(key), "a failure after the side effect is replayed, not re-run");

    String k500 = newKey();
    HttpResponse<String> five = http.post("/stored/payments", k500, "{\"status\":500}");
    assertEquals(five.body(), http.post("/stored/payments", k500, "{\"status\":500}").body());
    assertEquals(1, app.executions(k500), "a 5xx answer is stored too");
  }

  @Test
  void aHandlerThatRejectsBeforeExecutingIsNotStoredEvenUnderStoreAll() {
    String key = newKey();
    HttpResponse<String> refused = http.post("/stored/payments", key, "{\"invalid\":true}");
    assertEquals(400, refused.statusCode());
    HttpResponse<String> corrected = http.post("/stored/payments", key, "{\"amount\":4}");
    assertEquals(201, corrected.statusCode(), corrected.body());
    assertEquals(1, app.executions(key));
    assertEquals(corrected.body(), http.post("/stored/payments", key, "{\"amount\":4}").body());
  }

  @Test
  void aHandlerThatOutlivesItsDeadlineAndItsLeaseKeepsItsClaimAndItsAnswerIsReplayed() throws Exception {
    String key = newKey();
    String record = ClaimStore.idempotencyKey("", key);
    CompletableFuture<HttpResponse<String>> first =
        CompletableFuture.supplyAsync(() -> http.post("/stored/payments", key, "{\"hold\":true,\"amount\":6}"));
    Eventually.await("the first claimed its key", Duration.ofSeconds(10),
        () -> "busy".equals(String.valueOf(redis().server().call("HGET", record, "state"))));
    long leaseEnd = Long.parseLong(String.valueOf(redis().server().call("HGET", record, "until")));
    Eventually.await("Redis time passes two leases", Duration.ofSeconds(10), () -> redisMillis() > leaseEnd + 1_300);
    HttpResponse<String> duplicate = http.post("/stored/payments", key, "{\"hold\":true,\"amount\":6}");
    assertEquals(409, duplicate.statusCode(), "the running holder keeps its key: " + duplicate.body());
    app.release(key);
    int firstStatus = first.get(20, java.util.concurrent.TimeUnit.SECONDS).statusCode();
    assertTrue(firstStatus == 201 || firstStatus == 503, "201, or 503 handler-timeout where the adapter has a deadline");
    Eventually.await("the answer is stored", Duration.ofSeconds(10),
        () -> "done".equals(String.valueOf(redis().server().call("HGET", record, "state"))));
    HttpResponse<String> replay = http.post("/stored/payments", key, "{\"hold\":true,\"amount\":6}");
    assertEquals(201, replay.statusCode());
    assertEquals("true", replay.headers().firstValue(IdempotencyGuard.REPLAYED_HEADER).orElse(null));
    assertEquals(1, app.executions(key), "executed once");
  }

  private long redisMillis() {
    List<?> t = (List<?>) redis().server().call("TIME");
    return Long.parseLong(String.valueOf(t.get(0))) * 1000 + Long.parseLong(String.valueOf(t.get(1))) / 1000;
  }

  @Test
  void theHandlerGetsTheFencingTokenOfItsClaim() {
    String key = newKey();
    HttpResponse<String> r = http.post("/payments", key, "{\"amount\":8}");
    String fence = r.headers().firstValue("X-Fence").orElse("none");
    assertTrue(fence.matches("[0-9]+"), "a fencing token: " + fence);
    String record = ClaimStore.idempotencyKey("", key);
    assertEquals(fence, String.valueOf(redis().server().call("HGET", record, "fence")), "the claim's own token");
  }

  @Test
  void aHandlerThatThrowsReleasesTheClaim() {
    String key = newKey();
    assertEquals(500, http.post("/payments", key, "{\"fail\":true}").statusCode());
    assertEquals(500, http.post("/payments", key, "{\"fail\":true}").statusCode());
    assertEquals(2, app.executions(key));
  }

  @Test
  void anAnswerOverTheSizeCapIsReplayedWithoutItsBody() {
    String key = newKey();
    String body = "{\"amount\":5,\"size\":100000}";
    HttpResponse<String> first = http.post("/payments", key, body);
    assertEquals(201, first.statusCode());
    assertTrue(first.body().length() > 100_000, "the caller gets it whole");
    HttpResponse<String> again = http.post("/payments", key, body);
    assertEquals(201, again.statusCode());
    assertEquals("", again.body());
    assertEquals("true", again.headers().firstValue(IdempotencyGuard.BODY_OMITTED_HEADER).orElse(null));
    assertEquals(first.headers().firstValue("Location"), again.headers().firstValue("Location"));
    assertEquals(1, app.executions(key));
  }

  @Test
  void concurrentDuplicatesExecuteOnceAndAllGetTheSameAnswer() throws Exception {
    int keys = 100;
    int duplicates = 20;
    List<String> keyList = new ArrayList<>();
    List<CompletableFuture<HttpResponse<String>>> answers = new ArrayList<>();
    ExecutorService pool = Executors.newFixedThreadPool(32);
    try {
      for (int k = 0; k < keys; k++) {
        String key = newKey();
        keyList.add(key);
        for (int d = 0; d < duplicates; d++) {
          answers.add(CompletableFuture.supplyAsync(() -> http.post("/waiting/payments", key, "{\"amount\":7}"), pool));
        }
      }
      CompletableFuture.allOf(answers.toArray(CompletableFuture[]::new)).join();
    } finally {
      pool.shutdownNow();
    }
    for (int k = 0; k < keys; k++) {
      assertEquals(1, app.executions(keyList.get(k)), "executions of key " + k);
      Set<String> bodies = new HashSet<>();
      for (int d = 0; d < duplicates; d++) {
        HttpResponse<String> r = answers.get(k * duplicates + d).join();
        assertEquals(201, r.statusCode());
        bodies.add(r.body());
      }
      assertEquals(1, bodies.size(), "answers of key " + k);
    }
  }

  protected String base() {
    return "http://127.0.0.1:" + port;
  }

  protected int port;
}
