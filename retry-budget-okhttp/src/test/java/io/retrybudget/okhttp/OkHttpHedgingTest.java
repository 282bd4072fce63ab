package io.retrybudget.okhttp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.retry.HedgePolicy;
import io.retrybudget.retry.RetryPolicy;
import io.retrybudget.testing.CountingBudget;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import mockwebserver3.MockResponse;
import mockwebserver3.MockWebServer;
import mockwebserver3.RecordedRequest;
import okhttp3.Call;
import okhttp3.EventListener;
import okhttp3.HttpUrl;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Hedged calls through the interceptor: two MockWebServer replicas (the first a call goes to is
 * chosen by the test), the SDK executor's HedgePolicy, a real Redis budget.
 */
class OkHttpHedgingTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();
  private static RedisBudgetClient budgets;

  private MockWebServer slow;
  private MockWebServer fast;
  private CountingBudget budget;
  private RetryBudgetInterceptor interceptor;
  private OkHttpClient base;
  private String budgetName;
  /** The calls of the hedging client that were cancelled, by port. */
  private final List<Integer> cancelled = new CopyOnWriteArrayList<>();

  @BeforeAll
  static void connect() {
    // the subject is hedging, not Redis's speed: the longest timeouts the client takes, and connected
    // before the first test (build() gives up waiting after 2 s, which a loaded machine misses; until
    // the client connects, the fallback answers). At a load of 16 it connects within seconds
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
    slow = new MockWebServer();
    slow.start();
    fast = new MockWebServer();
    fast.start();
    budgetName = "okhttp-hedge-" + info.getTestMethod().orElseThrow().getName();
    base = new OkHttpClient.Builder().retryOnConnectionFailure(false).eventListener(new EventListener() {
      @Override
      public void canceled(Call call) {
        cancelled.add(call.request().url().port());
      }
    }).build();
  }

  @AfterEach
  void stop() {
    if (interceptor != null) {
      interceptor.close();
    }
    if (budget != null) {
      budget.close();
    }
    base.dispatcher().cancelAll();
    slow.close();
    fast.close();
  }

  /** The client callers use: the interceptor on it, hedges sent through {@code base} (without it). */
  private OkHttpClient client(HedgePolicy hedging, int maxAttempts, double ratio, int floor) {
    budget = new CountingBudget(budgets.budget(BudgetConfig.builder(budgetName).ratio(ratio).minRetriesPerSecond(floor).build()));
    interceptor = RetryBudgetInterceptor.builder()
        .policy(RetryPolicy.builder().maxAttempts(maxAttempts).backoff(Duration.ofMillis(1), Duration.ofMillis(5)).build())
        .budget(budget)
        .replicas(List.of(HttpUrl.get(slow.url("/").toString()), HttpUrl.get(fast.url("/").toString())))
        .firstReplica(n -> 0) // every call starts on the slow replica
        .hedging(hedging, base)
        .build();
    return base.newBuilder().eventListener(EventListener.NONE).addInterceptor(interceptor).build(); // its own events uncounted
  }

  private Request get() {
    return new Request.Builder().url(slow.url("/items/a%2Fb?q=1")).build();
  }

  private static MockResponse ok(String body) {
    return new MockResponse.Builder().code(200).body(body).build();
  }

  private static MockResponse late(String body) {
    return new MockResponse.Builder().code(200).body(body).headersDelay(5, TimeUnit.SECONDS).build();
  }

  @Test
  void theHedgeWinsAndTheSlowAttemptIsCancelled() throws Exception {
    slow.enqueue(late("slow"));
    fast.enqueue(ok("fast"));
    OkHttpClient http = client(HedgePolicy.fixedDelay(Duration.ofMillis(50)).build(), 3, 0.1, 10);

    long start = System.nanoTime();
    try (Response r = http.newCall(get()).execute()) {
      assertEquals(200, r.code());
      assertEquals("fast", r.body().string());
    }
    assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(4), "waited for the slow replica");

    RecordedRequest first = slow.takeRequest(5, TimeUnit.SECONDS);
    RecordedRequest hedge = fast.takeRequest(5, TimeUnit.SECONDS);
    assertEquals("1", first.getHeaders().get("X-Retry-Attempt"));
    assertEquals("2", hedge.getHeaders().get("X-Retry-Attempt"));
    assertEquals("/items/a%2Fb?q=1", hedge.getTarget());
    assertEquals(1, budget.firstAttempts.get());
    assertEquals(1, budget.acquires.get()); // the hedge asked the budget
    awaitCancelled(slow.getPort(), 1); // the loser was cancelled while it waited for its headers
    awaitNoRunningCalls();
  }

  @Test
  void aRefusedHedgeIsNotSent() throws Exception {
    slow.enqueue(new MockResponse.Builder().code(200).body("slow").headersDelay(300, TimeUnit.MILLISECONDS).build());
    OkHttpClient http = client(HedgePolicy.fixedDelay(Duration.ofMillis(20)).build(), 3, 0.000001, 0);

    try (Response r = http.newCall(get()).execute()) {
      assertEquals("slow", r.body().string());
    }
    assertEquals(1, budget.acquires.get());
    assertEquals(0, fast.getRequestCount());
  }

  @Test
  void cancellingTheCallCancelsEveryAttempt() throws Exception {
    slow.enqueue(late("slow"));
    fast.enqueue(late("also slow"));
    OkHttpClient http = client(HedgePolicy.fixedDelay(Duration.ofMillis(20)).build(), 3, 0.1, 10);
    Call call = http.newCall(get());
    CompletableFuture<IOException> failed = CompletableFuture.supplyAsync(() ->
        assertThrows(IOException.class, () -> call.execute().close()));
    assertNotNull(slow.takeRequest(5, TimeUnit.SECONDS));
    assertNotNull(fast.takeRequest(5, TimeUnit.SECONDS)); // both attempts in flight

    call.cancel();

    IOException e = assertTimeoutPreemptively(Duration.ofSeconds(4), () -> failed.get());
    assertEquals("Canceled", e.getMessage());
    awaitCancelled(slow.getPort(), 1);
    awaitCancelled(fast.getPort(), 1);
    awaitNoRunningCalls();
  }

  @Test
  void retriesStillRunAndEveryResponseNotTheAnswerIsClosed() throws Exception {
    slow.enqueue(new MockResponse.Builder().code(503).body("busy").build());
    fast.enqueue(ok("fast"));
    OkHttpClient http = client(HedgePolicy.fixedDelay(Duration.ofSeconds(2)).build(), 3, 0.1, 10);
    try (Response r = http.newCall(get()).execute()) {
      assertEquals("fast", r.body().string());
    }
    assertEquals(1, budget.acquires.get()); // the retry after the 503
    awaitAllIdle(); // the 503's body was closed: its connection went back to the pool
  }

  @Test
  void losersThatAnswerAreClosed() throws Exception {
    // no hedge delay: both attempts race from the start, and many losers answer before their cancel
    OkHttpClient http = client(HedgePolicy.fixedDelay(Duration.ZERO).build(), 2, 0.1, 1000);
    int calls = 40;
    for (int i = 0; i < calls; i++) {
      slow.enqueue(ok("a"));
      fast.enqueue(ok("b"));
    }
    for (int i = 0; i < calls; i++) {
      try (Response r = http.newCall(get()).execute()) {
        assertEquals(200, r.code());
        r.body().string();
      }
    }
    awaitAllIdle();
  }

  @Test
  void enqueuedCallsBeyondTheDispatchersPerHostLimitDoNotWaitForEachOther() throws Exception {
    // 8 enqueued calls to one host: OkHttp runs 5 per host, each waiting here for its attempts;
    // the attempts must not queue behind them on the same dispatcher
    OkHttpClient http = client(HedgePolicy.fixedDelay(Duration.ofSeconds(1)).build(), 3, 0.1, 10);
    int calls = 8;
    List<CompletableFuture<String>> answers = new java.util.ArrayList<>();
    for (int i = 0; i < calls; i++) {
      slow.enqueue(ok("a"));
      CompletableFuture<String> answer = new CompletableFuture<>();
      answers.add(answer);
      http.newCall(get()).enqueue(new okhttp3.Callback() {
        @Override
        public void onFailure(Call call, IOException e) {
          answer.completeExceptionally(e);
        }

        @Override
        public void onResponse(Call call, Response response) throws IOException {
          try (response) {
            answer.complete(response.body().string());
          }
        }
      });
    }
    for (CompletableFuture<String> answer : answers) {
      assertEquals("a", answer.get(10, TimeUnit.SECONDS));
    }
  }

  private void awaitCancelled(int port, int count) throws InterruptedException {
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (cancelled.stream().filter(p -> p == port).count() < count && System.nanoTime() < end) {
      TimeUnit.MILLISECONDS.sleep(5);
    }
    assertEquals(count, cancelled.stream().filter(p -> p == port).count(), "cancelled calls: " + cancelled);
  }

  private void awaitNoRunningCalls() throws InterruptedException {
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (interceptor.attemptsRunning() != 0 && System.nanoTime() < end) {
      TimeUnit.MILLISECONDS.sleep(5);
    }
    assertEquals(0, interceptor.attemptsRunning(), "attempts still running");
  }

  /** Every pooled connection idle: no response body of the hedging client left open. */
  private void awaitAllIdle() throws InterruptedException {
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (base.connectionPool().connectionCount() != base.connectionPool().idleConnectionCount()
        && System.nanoTime() < end) {
      TimeUnit.MILLISECONDS.sleep(5);
    }
    assertEquals(base.connectionPool().connectionCount(), base.connectionPool().idleConnectionCount(),
        "connections still in use");
  }
}
