package io.retrybudget.okhttp;

import io.retrybudget.testing.CountingBudget;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.retry.Jitter;
import io.retrybudget.retry.RetryListener;
import io.retrybudget.retry.RetryOutcome;
import io.retrybudget.retry.RetryPolicy;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import mockwebserver3.MockResponse;
import mockwebserver3.MockWebServer;
import mockwebserver3.RecordedRequest;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.MediaType;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.RequestBody;
import okhttp3.Response;
import okio.BufferedSink;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The interceptor against a real MockWebServer and a real Redis budget. */
class RetryBudgetInterceptorTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();
  private static RedisBudgetClient budgets;

  private MockWebServer server;
  private CountingBudget budget;
  private RetryBudgetInterceptor interceptor;
  private final Recorder recorder = new Recorder();
  private String budgetName;

  private static final RetryPolicy FAST = RetryPolicy.builder().maxAttempts(3)
      .backoff(Duration.ofMillis(1), Duration.ofMillis(5)).build();
  private static final RetryPolicy FOREVER = RetryPolicy.builder().maxAttempts(3)
      .backoff(Duration.ofHours(1), Duration.ofHours(1)).jitter(Jitter.NONE).build();

  @BeforeAll
  static void connect() {
    // the subject is the interceptor, not Redis's speed: the longest timeouts the client takes, and
    // connected before the first test. At a load of 25, build() gave up on the first connection after
    // its 2 s and 13 of 18 tests met the fallback ("refused a retry (fallback)"); a timed-out permit
    // call is a refusal too. At a load of 16 the client connects within seconds, and a permit call to
    // a local Redis answers well inside 5 s
    budgets = RedisBudgetClient.builder(redis.connectionOptions().commandTimeout(Duration.ofSeconds(5)).build())
        .callTimeout(Duration.ofSeconds(5)).build();
    Eventually.await("connected", Duration.ofSeconds(30), () -> !budgets.isDegraded());
  }

  @AfterAll
  static void disconnect() {
    budgets.close();
  }

  @BeforeEach
  void start(TestInfo info) throws IOException {
    server = new MockWebServer();
    server.start();
    budgetName = "okhttp-" + info.getTestMethod().orElseThrow().getName();
  }

  @AfterEach
  void stop() {
    if (interceptor != null) {
      interceptor.close();
    }
    if (budget != null) {
      budget.close();
    }
    server.close();
  }

  private OkHttpClient client(RetryPolicy policy, double ratio, int floor) {
    return client(RetryBudgetInterceptor.builder().policy(policy), ratio, floor);
  }

  private OkHttpClient client(RetryBudgetInterceptor.Builder b, double ratio, int floor) {
    budget = new CountingBudget(budgets.budget(BudgetConfig.builder(budgetName).ratio(ratio).minRetriesPerSecond(floor).build()));
    interceptor = b.budget(budget).listener(recorder).build();
    return new OkHttpClient.Builder().addInterceptor(interceptor).retryOnConnectionFailure(false).build();
  }

  private static MockResponse status(int code) {
    return new MockResponse.Builder().code(code).body("status " + code).build();
  }

  private Request get() {
    return new Request.Builder().url(server.url("/items/a%2Fb?q=x%26y")).build();
  }

  @Test
  void successIsOneAttemptCountedOnce() throws Exception {
    server.enqueue(status(200));
    OkHttpClient http = client(FAST, 0.1, 10);
    try (Response r = http.newCall(get()).execute()) {
      assertEquals(200, r.code());
      assertEquals("status 200", r.body().string());
    }
    RecordedRequest sent = server.takeRequest();
    assertEquals("1", sent.getHeaders().get("X-Retry-Attempt"));
    assertNull(sent.getHeaders().get("X-Request-Deadline-Ms"), "no deadline, no attempt timeout: none sent");
    assertNull(sent.getHeaders().get("Idempotency-Key"));
    assertEquals(1, budget.firstAttempts.get());
    assertEquals(0, budget.acquires.get());
    assertEquals(List.of(RetryOutcome.SUCCESS + " 1"), recorder.outcomes);
  }

  @Test
  void everyAttemptCarriesTheTimeItIsWaitedFor() throws Exception {
    server.enqueue(status(503));
    server.enqueue(status(200));
    RetryPolicy timed = FAST.toBuilder().attemptTimeout(Duration.ofSeconds(4)).deadline(Duration.ofSeconds(8)).build();
    OkHttpClient http = client(timed, 0.1, 10);
    Request own = get().newBuilder().header("X-Request-Deadline-Ms", "999999").build();
    try (Response r = http.newCall(own).execute()) {
      assertEquals(200, r.code());
    }
    for (int attempt = 1; attempt <= 2; attempt++) {
      List<String> values = server.takeRequest().getHeaders().values("X-Request-Deadline-Ms");
      assertEquals(1, values.size(), "one value, the caller's replaced: " + values);
      long ms = Long.parseLong(values.get(0));
      assertTrue(ms > 0 && ms <= 4_000, "attempt " + attempt + ": the attempt timeout cut to the deadline, was " + ms);
    }
  }

  @Test
  void retriesFiveHundredsAndServiceUnavailableThenSucceedsOnTheSameConnection() throws Exception {
    server.enqueue(status(503));
    server.enqueue(status(500));
    server.enqueue(status(200));
    OkHttpClient http = client(FAST, 0.1, 10);
    try (Response r = http.newCall(get()).execute()) {
      assertEquals(200, r.code());
      assertEquals("status 200", r.body().string());
    }
    for (int attempt = 1; attempt <= 3; attempt++) {
      RecordedRequest sent = server.takeRequest();
      assertEquals(Integer.toString(attempt), sent.getHeaders().get("X-Retry-Attempt"));
      assertEquals("/items/a%2Fb?q=x%26y", sent.getTarget());
      // the retried responses' bodies were closed: the connection was reused for every attempt
      assertEquals(0, sent.getConnectionIndex());
    }
    assertEquals(1, budget.firstAttempts.get());
    assertEquals(2, budget.acquires.get());
    assertEquals(List.of(RetryOutcome.SUCCESS + " 3"), recorder.outcomes);
  }

  @Test
  void enqueuedCallRetriesNetworkErrorOnTheDispatcherThread() throws Exception {
    server.enqueue(new MockResponse.Builder().onRequestStart(new mockwebserver3.SocketEffect.CloseSocket()).build());
    server.enqueue(status(200));
    OkHttpClient http = client(FAST, 0.1, 10);
    CompletableFuture<Integer> code = new CompletableFuture<>();
    http.newCall(get()).enqueue(new Callback() {
      @Override
      public void onFailure(Call call, IOException e) {
        code.completeExceptionally(e);
      }

      @Override
      public void onResponse(Call call, Response response) {
        try (response) {
          code.complete(response.code());
        }
      }
    });
    assertEquals(200, code.get(10, TimeUnit.SECONDS));
    assertEquals(2, server.getRequestCount());
    assertEquals(1, budget.acquires.get());
  }

  @Test
  void otherClientErrorsAreNeverRetried() throws Exception {
    server.enqueue(status(404));
    OkHttpClient http = client(FAST, 0.1, 10);
    try (Response r = http.newCall(get()).execute()) {
      assertEquals(404, r.code());
    }
    assertEquals(1, server.getRequestCount());
    assertEquals(0, budget.acquires.get());
  }

  @Test
  void retriesWhenRetriesRunOutReturnTheLastResponseReadable() throws Exception {
    server.enqueue(status(429));
    server.enqueue(status(503));
    server.enqueue(status(502));
    OkHttpClient http = client(FAST, 0.1, 10);
    try (Response r = http.newCall(get()).execute()) {
      assertEquals(502, r.code());
      assertEquals("status 502", r.body().string());
    }
    assertEquals(3, server.getRequestCount());
    assertEquals(List.of(RetryOutcome.MAX_ATTEMPTS + " 3"), recorder.outcomes);
  }

  @Test
  void pushbackIsWaitedAtLeastAndNegativeMeansDoNotRetry() throws Exception {
    server.enqueue(new MockResponse.Builder().code(503).addHeader("X-Retry-Pushback-Ms", "150").build());
    server.enqueue(new MockResponse.Builder().code(503).addHeader("X-Retry-Pushback-Ms", "-1").build());
    // a cap above the pushback: a pushback beyond the cap would end the call at once
    OkHttpClient http = client(FAST.toBuilder().backoff(Duration.ofMillis(1), Duration.ofSeconds(10)).build(), 0.1, 10);
    try (Response r = http.newCall(get()).execute()) {
      assertEquals(503, r.code());
      assertEquals("-1", r.header("X-Retry-Pushback-Ms"));
    }
    assertEquals(2, server.getRequestCount());
    assertEquals(1, recorder.delaysNanos.size());
    assertTrue(recorder.delaysNanos.get(0) >= TimeUnit.MILLISECONDS.toNanos(150), "slept " + recorder.delaysNanos);
    assertEquals(List.of(RetryOutcome.SERVER_SAYS_NO + " 2"), recorder.outcomes);
  }

  @Test
  void retryAfterInBothForms() throws Exception {
    Instant date = Instant.parse("2026-12-01T10:00:00Z");
    String httpDate = DateTimeFormatter.RFC_1123_DATE_TIME.format(date.atZone(ZoneOffset.UTC));
    server.enqueue(new MockResponse.Builder().code(503).addHeader("Retry-After", httpDate).build());
    server.enqueue(new MockResponse.Builder().code(429).addHeader("Retry-After", "3600").build());
    OkHttpClient http = client(RetryBudgetInterceptor.builder().policy(FAST.toBuilder().backoff(Duration.ofMillis(1), Duration.ofSeconds(10)).build())
        .clock(Clock.fixed(date.minusMillis(120), ZoneOffset.UTC)), 0.1, 10);
    try (Response r = http.newCall(get()).execute()) {
      // the date asked for 120 ms, the delta-seconds form an hour: beyond the cap, the call ends with it
      assertEquals(429, r.code());
    }
    assertEquals(2, server.getRequestCount());
    assertTrue(recorder.delaysNanos.get(0) >= TimeUnit.MILLISECONDS.toNanos(120), "slept " + recorder.delaysNanos);
    assertEquals(List.of(RetryOutcome.SERVER_DELAY_TOO_LONG + " 2"), recorder.outcomes);
  }

  @Test
  void postGetsTheSameIdempotencyKeyOnEveryAttemptAndItsBodyAgain() throws Exception {
    server.enqueue(status(503));
    server.enqueue(status(201));
    OkHttpClient http = client(FAST, 0.1, 10);
    Request post = new Request.Builder().url(server.url("/charges"))
        .post(RequestBody.create("{\"amount\":42}", MediaType.get("application/json"))).build();
    try (Response r = http.newCall(post).execute()) {
      assertEquals(201, r.code());
    }
    RecordedRequest first = server.takeRequest();
    RecordedRequest second = server.takeRequest();
    assertNotNull(first.getHeaders().get("Idempotency-Key"));
    assertEquals(first.getHeaders().get("Idempotency-Key"), second.getHeaders().get("Idempotency-Key"));
    assertEquals("{\"amount\":42}", second.getBody().utf8());
    assertEquals("2", second.getHeaders().get("X-Retry-Attempt"));
  }

  @Test
  void postKeepsTheCallersOwnKey() throws Exception {
    server.enqueue(status(500));
    server.enqueue(status(200));
    OkHttpClient http = client(RetryBudgetInterceptor.builder().policy(FAST).idempotencyKeys(false), 0.1, 10);
    Request post = new Request.Builder().url(server.url("/charges")).header("Idempotency-Key", "order-42")
        .post(RequestBody.create("x", MediaType.get("text/plain"))).build();
    try (Response r = http.newCall(post).execute()) {
      assertEquals(200, r.code());
    }
    assertEquals("order-42", server.takeRequest().getHeaders().get("Idempotency-Key"));
    assertEquals("order-42", server.takeRequest().getHeaders().get("Idempotency-Key"));
  }

  @Test
  void postWithoutAKeyIsNotRetriedWhenKeysAreNotMade() throws Exception {
    server.enqueue(status(503));
    OkHttpClient http = client(RetryBudgetInterceptor.builder().policy(FAST).idempotencyKeys(false), 0.1, 10);
    Request post = new Request.Builder().url(server.url("/charges")).post(RequestBody.create("x", MediaType.get("text/plain"))).build();
    try (Response r = http.newCall(post).execute()) {
      assertEquals(503, r.code());
    }
    assertEquals(1, server.getRequestCount());
    assertNull(server.takeRequest().getHeaders().get("Idempotency-Key"));
    assertEquals(List.of(RetryOutcome.NOT_IDEMPOTENT + " 1"), recorder.outcomes);
  }

  @Test
  void oneShotBodyIsNeverSentTwice() throws Exception {
    server.enqueue(status(503));
    server.enqueue(status(200));
    OkHttpClient http = client(FAST, 0.1, 10);
    AtomicInteger writes = new AtomicInteger();
    RequestBody oneShot = new RequestBody() {
      @Override
      public MediaType contentType() {
        return MediaType.get("text/plain");
      }

      @Override
      public void writeTo(BufferedSink sink) throws IOException {
        writes.incrementAndGet();
        sink.writeUtf8("stream");
      }

      @Override
      public boolean isOneShot() {
        return true;
      }
    };
    Request put = new Request.Builder().url(server.url("/upload")).put(oneShot).build();
    try (Response r = http.newCall(put).execute()) {
      assertEquals(503, r.code());
    }
    assertEquals(1, writes.get());
    assertEquals(1, server.getRequestCount());
    assertEquals(1, budget.firstAttempts.get());
  }

  @Test
  void budgetDenialFailsFastWithoutSleeping() throws Exception {
    server.enqueue(status(503));
    // ratio 1 ppm and no floor: Redis refuses every retry; the backoff of an hour would hang a call that slept
    OkHttpClient http = client(FOREVER, 0.000001, 0);
    Call call = http.newCall(get());
    RetryBudgetExhaustedIOException e = assertTimeoutPreemptively(Duration.ofSeconds(10),
        () -> assertThrows(RetryBudgetExhaustedIOException.class, call::execute));
    assertEquals(503, e.lastResponse().code());
    assertTrue(e.decision().reason().toString().startsWith("DENIED"), e.decision().reason().toString());
    assertEquals(BudgetDecision.Reason.DENIED_EXHAUSTED, e.decision().reason());
    assertEquals(0, recorder.delaysNanos.size());
    assertEquals(1, server.getRequestCount());
    assertEquals(List.of(RetryOutcome.BUDGET_EXHAUSTED + " 1"), recorder.outcomes);
  }

  @Test
  void cancelWakesTheBackoffSleepAndAsksNothingMore() throws Exception {
    server.enqueue(status(503));
    OkHttpClient http = client(FOREVER, 1.0, 100);
    Call call = http.newCall(get());
    // cancelled once the hour-long sleep has begun (a timer, not a sleep of the test)
    recorder.onSleep = () -> CompletableFuture.delayedExecutor(100, TimeUnit.MILLISECONDS).execute(call::cancel);
    IOException e = assertTimeoutPreemptively(Duration.ofSeconds(10), () -> assertThrows(IOException.class, call::execute));
    assertEquals("Canceled", e.getMessage());
    assertEquals(1, server.getRequestCount());
    assertEquals(1, budget.acquires.get());
    assertTrue(call.isCanceled());
    assertEquals(1, http.connectionPool().idleConnectionCount(), "the 503 was closed before the sleep");
  }

  @Test
  void cancelStopsTheAttemptInFlightAndIsNotRetried() throws Exception {
    server.enqueue(new MockResponse.Builder().code(200).headersDelay(30, TimeUnit.SECONDS).build());
    OkHttpClient http = client(FAST, 1.0, 100);
    Call call = http.newCall(get());
    CompletableFuture<IOException> failed = CompletableFuture.supplyAsync(() -> {
      try (Response r = call.execute()) {
        return null;
      } catch (IOException e) {
        return e;
      }
    });
    server.takeRequest(10, TimeUnit.SECONDS);
    call.cancel();
    IOException e = failed.get(10, TimeUnit.SECONDS);
    assertNotNull(e);
    assertEquals(1, server.getRequestCount());
    assertEquals(0, budget.acquires.get(), "a cancelled call asks the budget nothing");
  }

  @Test
  void deadlineCutsTheAttemptInFlight() throws Exception {
    server.enqueue(status(503));
    server.enqueue(new MockResponse.Builder().code(200).headersDelay(30, TimeUnit.SECONDS).build());
    // the deadline must outlast the first attempt, its backoff and the permit call, and cut the second
    // attempt (it hangs 30 s): 2 s leaves a loaded machine (16) time for the first part, where 300 ms
    // left a scheduling pause enough to end the call before the second attempt was sent
    OkHttpClient http = client(FAST.toBuilder().deadline(Duration.ofSeconds(2)).build(), 1.0, 100);
    Call call = http.newCall(get());
    InterruptedIOException e = assertTimeoutPreemptively(Duration.ofSeconds(10),
        () -> assertThrows(InterruptedIOException.class, call::execute));
    assertEquals("retry deadline passed", e.getMessage());
    assertEquals(2, server.getRequestCount());
  }

  @Test
  void attemptTimeoutBoundsEachAttemptAndIsRetried() throws Exception {
    server.enqueue(new MockResponse.Builder().code(200).headersDelay(30, TimeUnit.SECONDS).build());
    server.enqueue(status(200));
    // the first attempt hangs 30 s, the second answers at once: 2 s bounds the first and leaves the
    // second, a local reply, time to arrive at a load of 16 (at 200 ms a pause could time it out too)
    OkHttpClient http = client(FAST.toBuilder().attemptTimeout(Duration.ofSeconds(2)).build(), 1.0, 100);
    try (Response r = assertTimeoutPreemptively(Duration.ofSeconds(10), () -> http.newCall(get()).execute())) {
      assertEquals(200, r.code());
    }
    assertEquals(2, server.getRequestCount());
  }

  @Test
  void retriesMoveToTheNextReplicaKeepingTheEncodedPath() throws Exception {
    try (MockWebServer other = new MockWebServer()) {
      other.start();
      server.enqueue(status(503));
      other.enqueue(status(503));
      OkHttpClient http = client(RetryBudgetInterceptor.builder().policy(FAST.toBuilder().maxAttempts(2).build())
          .replicas(List.of(server.url("/"), other.url("/"))), 1.0, 100);
      try (Response r = http.newCall(get()).execute()) {
        assertEquals(503, r.code());
      }
      // two attempts, one on each replica, whichever came first
      assertEquals(1, server.getRequestCount());
      assertEquals(1, other.getRequestCount());
      RecordedRequest a = server.takeRequest();
      RecordedRequest b = other.takeRequest();
      assertEquals("/items/a%2Fb?q=x%26y", a.getTarget());
      assertEquals("/items/a%2Fb?q=x%26y", b.getTarget());
      assertEquals(2, Math.max(Integer.parseInt(a.getHeaders().get("X-Retry-Attempt")),
          Integer.parseInt(b.getHeaders().get("X-Retry-Attempt"))));
    }
  }

  /** What the executor told its listener. */
  static final class Recorder implements RetryListener {
    final List<String> outcomes = new CopyOnWriteArrayList<>();
    final List<Long> delaysNanos = new CopyOnWriteArrayList<>();
    volatile Runnable onSleep;

    @Override
    public void onRetryScheduled(int nextAttempt, long delayNanos, Throwable failure) {
      delaysNanos.add(delayNanos);
      Runnable r = onSleep;
      if (r != null) {
        r.run();
      }
    }

    @Override
    public void onOutcome(RetryOutcome outcome, int attempts) {
      outcomes.add(outcome + " " + attempts);
    }
  }
}
