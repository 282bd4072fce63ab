package io.retrybudget.vertx;

import io.retrybudget.testing.CountingBudget;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.retry.AttemptTimeoutException;
import io.retrybudget.retry.HedgePolicy;
import io.retrybudget.retry.Jitter;
import io.retrybudget.retry.RetryBudgetExhaustedException;
import io.retrybudget.retry.RetryListener;
import io.retrybudget.retry.RetryOutcome;
import io.retrybudget.retry.RetryPolicy;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.internal.VertxInternal;
import io.vertx.core.internal.threadchecker.BlockedThreadEvent;
import io.vertx.ext.web.client.HttpResponse;
import io.vertx.ext.web.client.WebClient;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link VertxRetry} and {@link RetryingWebClient} against a real Vert.x HTTP server and a real
 * Redis budget, on a Vert.x whose blocked-thread checker is set low (150 ms, checked every 10 ms):
 * every test fails if any event loop was blocked that long, counted as time on a core or parked
 * ({@link LoopBusyTime}), not as time spent waiting for a core on a loaded machine.
 */
class VertxRetryTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();
  static final long BLOCKED_MS = 150;

  private static RedisBudgetClient budgets;
  private static Vertx vertx;
  private static final List<BlockedThreadEvent> blocked = new CopyOnWriteArrayList<>();
  /** A block a test makes on purpose, on this thread, from this instant (System.nanoTime()); null: none. */
  private static volatile Thread spinThread;
  private static volatile long spinFrom;
  private static volatile long spinUntil;
  private static final java.util.concurrent.atomic.AtomicInteger spunReports = new java.util.concurrent.atomic.AtomicInteger();
  private static final java.util.concurrent.atomic.AtomicLong spinBusyMillis = new java.util.concurrent.atomic.AtomicLong();
  private static LoopBusyTime busyTime;
  private static HttpServer server;
  private static final ConcurrentLinkedDeque<Consumer<HttpServerRequest>> script = new ConcurrentLinkedDeque<>();
  private static final List<Map<String, String>> received = new CopyOnWriteArrayList<>();

  private final List<AutoCloseable> closeables = new ArrayList<>();
  private final Recorder recorder = new Recorder();
  private String budgetName;
  private CountingBudget budget;
  private WebClient web;

  private static final RetryPolicy FAST = RetryPolicy.builder().maxAttempts(3)
      .backoff(Duration.ofMillis(1), Duration.ofMillis(5)).build();
  private static final RetryPolicy FOREVER = RetryPolicy.builder().maxAttempts(3)
      .backoff(Duration.ofHours(1), Duration.ofHours(1)).jitter(Jitter.NONE).build();

  @BeforeAll
  static void start() throws Exception {
    // the subject is the Vert.x integration, not Redis's speed: the longest timeouts the client takes.
    // At 1 s (Lettuce's default command timeout) a budget call on a machine at a load of 20 timed out
    // and the retry was refused by the fallback ("refused a retry (fallback)")
    budgets = RedisBudgetClient.builder(redis.connectionOptions().commandTimeout(Duration.ofSeconds(5)).build())
        .callTimeout(Duration.ofSeconds(5)).build();
    // build() gives up waiting for the connection after 2 s, which a loaded machine misses; until the
    // client connects, the fallback answers. At a load of 16 it connects within seconds
    Eventually.await("connected", Duration.ofSeconds(30), () -> !budgets.isDegraded());
    busyTime = new LoopBusyTime();
    vertx = Vertx.vertx(new VertxOptions().setBlockedThreadCheckInterval(10).setBlockedThreadCheckIntervalUnit(TimeUnit.MILLISECONDS)
        .setMaxEventLoopExecuteTime(BLOCKED_MS).setMaxEventLoopExecuteTimeUnit(TimeUnit.MILLISECONDS));
    ((VertxInternal) vertx).blockedThreadChecker().setThreadBlockedHandler(e -> {
      // the checker reports a block every 10 ms while it lasts, and a report may arrive after the block
      // ended: a block that began in a test's deliberate spin is that spin, whenever it is reported
      long began = System.nanoTime() - e.duration();
      boolean deliberate = e.thread() == spinThread && began >= spinFrom - 5_000_000L && began <= spinUntil;
      // the checker counts wall time: a block is what the loop spent on a core or parked, not the
      // time it waited for a core (at a load of 16 on 2 cores a 5 ms task can take 150 ms of wall time)
      long busy = busyTime.busyMillis(e.thread(), began, TimeUnit.NANOSECONDS.toMillis(e.duration()));
      if (deliberate) {
        spinBusyMillis.accumulateAndGet(busy, Math::max);
      } else if (busy >= BLOCKED_MS) {
        blocked.add(e);
      }
      spunReports.incrementAndGet();
    });
    server = await(vertx.createHttpServer().requestHandler(req -> req.body().onSuccess(body -> {
      received.add(Map.of("method", req.method().name(),
          "attempt", String.valueOf(req.getHeader("X-Retry-Attempt")),
          "key", String.valueOf(req.getHeader("Idempotency-Key")),
          "deadline", String.valueOf(req.headers().getAll("X-Request-Deadline-Ms")),
          "body", body.toString()));
      Consumer<HttpServerRequest> next = script.poll();
      if (next == null) {
        req.response().setStatusCode(200).end("ok");
      } else {
        next.accept(req);
      }
    })).listen(0, "127.0.0.1"));
    // warm-up: the first request loads the HTTP client's and server's classes on their event loops
    WebClient warm = WebClient.create(vertx);
    await(warm.get(server.actualPort(), "127.0.0.1", "/warm-up").send());
    warm.close();
    // ... and the first call through the SDK's executor loads its classes on the caller's event loop
    try (VertxRetry retry = VertxRetry.builder(vertx, FAST).build()) {
      java.util.concurrent.atomic.AtomicInteger n = new java.util.concurrent.atomic.AtomicInteger();
      await(onEventLoop(() -> retry.execute(() -> n.incrementAndGet() < 2
          ? Future.failedFuture(new java.io.IOException("warm-up")) : Future.succeededFuture("warm")))
          .get(20, TimeUnit.SECONDS).getValue());
    }
    blocked.clear();
  }

  @AfterAll
  static void stop() throws Exception {
    budgets.close();
    await(vertx.close());
    busyTime.close();
  }

  private String testName;

  @BeforeEach
  void reset(TestInfo info) {
    testName = info.getDisplayName();
    script.clear();
    received.clear();
    blocked.clear();
    budgetName = "vertx-" + info.getTestMethod().orElseThrow().getName();
    web = WebClient.create(vertx);
  }

  @AfterEach
  void close() throws Exception {
    for (AutoCloseable c : closeables) {
      c.close();
    }
    web.close();
    if (budget != null) {
      budget.close();
    }
    assertEquals(List.of(), blocked, testName + ": an event loop was blocked for more than " + BLOCKED_MS + " ms");
  }

  static <T> T await(Future<T> f) throws Exception {
    return f.toCompletionStage().toCompletableFuture().get(20, TimeUnit.SECONDS);
  }

  static Throwable failureOf(Future<?> f) throws Exception {
    try {
      await(f);
    } catch (ExecutionException e) {
      return e.getCause();
    } catch (CancellationException e) {
      return e; // CompletableFuture.get throws a cancellation as itself
    }
    throw new AssertionError("expected a failure");
  }

  private CountingBudget budget(double ratio, int floor) {
    budget = new CountingBudget(budgets.budget(BudgetConfig.builder(budgetName).ratio(ratio).minRetriesPerSecond(floor).build()));
    return budget;
  }

  private RetryingWebClient http(RetryingWebClient.Builder b) {
    RetryingWebClient c = b.listener(recorder).build();
    closeables.add(c);
    return c;
  }

  private VertxRetry retry(VertxRetry.Builder b) {
    VertxRetry r = b.listener(recorder).build();
    closeables.add(r);
    return r;
  }

  static Consumer<HttpServerRequest> status(int code, String... headers) {
    return req -> {
      for (int i = 0; i < headers.length; i += 2) {
        req.response().putHeader(headers[i], headers[i + 1]);
      }
      req.response().setStatusCode(code).end("status " + code);
    };
  }

  static final Consumer<HttpServerRequest> HANG = req -> { };

  /** Runs {@code call} on a fresh event-loop context; answers the context and the call's future. */
  static <T> CompletableFuture<Map.Entry<Context, Future<T>>> onEventLoop(Supplier<Future<T>> call) {
    Context context = vertx.getOrCreateContext();
    CompletableFuture<Map.Entry<Context, Future<T>>> started = new CompletableFuture<>();
    context.runOnContext(v -> started.complete(Map.entry(context, call.get())));
    return started;
  }

  private io.vertx.ext.web.client.HttpRequest<Buffer> get() {
    return web.get(server.actualPort(), "127.0.0.1", "/items");
  }

  @Test
  void successIsOneAttemptCountedOnceAndCompletesOnTheCallersContext() throws Exception {
    RetryingWebClient http = http(RetryingWebClient.builder(vertx).policy(FAST).budget(budget(0.1, 10)));
    var started = onEventLoop(() -> http.send(get())).get(10, TimeUnit.SECONDS);
    CompletableFuture<Context> completedOn = new CompletableFuture<>();
    started.getValue().onComplete(ar -> completedOn.complete(Vertx.currentContext()));
    assertEquals(200, await(started.getValue()).statusCode());
    assertSame(started.getKey(), completedOn.get(10, TimeUnit.SECONDS));
    assertEquals("1", received.get(0).get("attempt"));
    assertEquals("null", received.get(0).get("key"));
    assertEquals("[]", received.get(0).get("deadline"), "no deadline, no attempt timeout: none sent");
    assertEquals(1, budget.firstAttempts.get());
    assertEquals(0, budget.acquires.get());
    assertEquals(List.of(RetryOutcome.SUCCESS + " 1"), recorder.outcomes(1));
  }

  @Test
  void retriesFiveHundredsThenSucceedsWithEveryAttemptAndTheResultOnTheCallersContext() throws Exception {
    script.add(status(503));
    script.add(status(500));
    RetryingWebClient http = http(RetryingWebClient.builder(vertx).policy(FAST).budget(budget(0.1, 10)));
    var started = onEventLoop(() -> http.send(get())).get(10, TimeUnit.SECONDS);
    CompletableFuture<Context> completedOn = new CompletableFuture<>();
    started.getValue().onComplete(ar -> completedOn.complete(Vertx.currentContext()));
    HttpResponse<Buffer> r = await(started.getValue());
    assertEquals(200, r.statusCode());
    assertEquals("ok", r.bodyAsString());
    assertSame(started.getKey(), completedOn.get(10, TimeUnit.SECONDS));
    assertEquals(List.of("1", "2", "3"), received.stream().map(m -> m.get("attempt")).toList());
    assertEquals(1, budget.firstAttempts.get());
    assertEquals(2, budget.acquires.get());
  }

  @Test
  void everyAttemptCarriesTheTimeItIsWaitedFor() throws Exception {
    script.add(status(503));
    RetryPolicy timed = FAST.toBuilder().attemptTimeout(Duration.ofSeconds(4)).deadline(Duration.ofSeconds(8)).build();
    RetryingWebClient http = http(RetryingWebClient.builder(vertx).policy(timed).budget(budget(0.1, 10)));
    var started = onEventLoop(() -> http.send(get().putHeader("X-Request-Deadline-Ms", "999999"))).get(10, TimeUnit.SECONDS);
    assertEquals(200, await(started.getValue()).statusCode());
    assertEquals(2, received.size());
    for (Map<String, String> r : received) {
      String h = r.get("deadline");
      assertTrue(h.matches("\\[\\d+\\]"), "one value per attempt, the caller's replaced: " + h);
      long ms = Long.parseLong(h.substring(1, h.length() - 1));
      assertTrue(ms > 0 && ms <= 4_000, "the attempt timeout cut to the deadline: " + received);
    }
  }

  @Test
  void everyAttemptOfTheCombinatorRunsOnTheCallersContext() throws Exception {
    VertxRetry retry = retry(VertxRetry.builder(vertx, FAST).budget(budget(0.1, 10)));
    List<Context> contexts = new CopyOnWriteArrayList<>();
    var started = onEventLoop(() -> retry.execute(() -> {
      contexts.add(Vertx.currentContext());
      return contexts.size() < 3 ? Future.failedFuture(new java.io.IOException("reset")) : Future.succeededFuture("done");
    })).get(10, TimeUnit.SECONDS);
    assertEquals("done", await(started.getValue()));
    assertEquals(3, contexts.size());
    contexts.forEach(c -> assertSame(started.getKey(), c));
  }

  @Test
  void otherClientErrorsAreNeverRetriedAndNegativePushbackStops() throws Exception {
    script.add(status(404));
    script.add(status(503, "X-Retry-Pushback-Ms", "-1"));
    RetryingWebClient http = http(RetryingWebClient.builder(vertx).policy(FAST).budget(budget(0.1, 10)));
    assertEquals(404, await(http.send(get())).statusCode());
    assertEquals(503, await(http.send(get())).statusCode());
    assertEquals(2, received.size());
    assertEquals(0, budget.acquires.get());
    assertEquals(List.of(RetryOutcome.SUCCESS + " 1", RetryOutcome.SERVER_SAYS_NO + " 1"), recorder.outcomes(2)); // a 404 is an answer
  }

  @Test
  void retryAfterInBothFormsAndPushbackAreWaitedAtLeast() throws Exception {
    Instant date = Instant.parse("2026-12-01T10:00:00Z");
    script.add(status(503, "Retry-After", DateTimeFormatter.RFC_1123_DATE_TIME.format(date.atZone(ZoneOffset.UTC))));
    script.add(status(429, "X-Retry-Pushback-Ms", "80"));
    script.add(status(503, "Retry-After", "3600"));
    RetryingWebClient http = http(RetryingWebClient.builder(vertx).budget(budget(1.0, 100))
        .policy(FAST.toBuilder().maxAttempts(4).backoff(Duration.ofMillis(1), Duration.ofSeconds(10)).build())
        .clock(Clock.fixed(date.minusMillis(120), ZoneOffset.UTC)));
    HttpResponse<Buffer> r = await(http.send(get()));
    assertEquals(503, r.statusCode()); // the hour asked for is beyond the cap: the call ends with it
    assertEquals(3, received.size());
    assertTrue(recorder.delaysNanos.get(0) >= TimeUnit.MILLISECONDS.toNanos(120), "slept " + recorder.delaysNanos);
    assertTrue(recorder.delaysNanos.get(1) >= TimeUnit.MILLISECONDS.toNanos(80), "slept " + recorder.delaysNanos);
    assertEquals(List.of(RetryOutcome.SERVER_DELAY_TOO_LONG + " 3"), recorder.outcomes(1));
  }

  @Test
  void postSendsTheSameBufferAndIdempotencyKeyOnEveryAttempt() throws Exception {
    script.add(status(503));
    RetryingWebClient http = http(RetryingWebClient.builder(vertx).policy(FAST).budget(budget(0.1, 10)));
    var request = web.post(server.actualPort(), "127.0.0.1", "/charges");
    assertEquals(200, await(http.send(request, Buffer.buffer("{\"amount\":42}"))).statusCode());
    assertEquals(2, received.size());
    assertNotNull(received.get(0).get("key"));
    assertFalse(received.get(0).get("key").equals("null"));
    assertEquals(received.get(0).get("key"), received.get(1).get("key"));
    assertEquals("{\"amount\":42}", received.get(1).get("body"));
    assertNull(request.headers().get("X-Retry-Attempt"), "the caller's request is not changed");
  }

  @Test
  void postWithoutAKeyIsNotRetriedWhenKeysAreNotMade() throws Exception {
    script.add(status(503));
    RetryingWebClient http = http(RetryingWebClient.builder(vertx).policy(FAST).idempotencyKeys(false).budget(budget(0.1, 10)));
    assertEquals(503, await(http.send(web.post(server.actualPort(), "127.0.0.1", "/charges"), Buffer.buffer("x"))).statusCode());
    assertEquals(1, received.size());
    assertEquals(List.of(RetryOutcome.NOT_IDEMPOTENT + " 1"), recorder.outcomes(1));
  }

  @Test
  void budgetDenialFailsFastWithoutSleeping() throws Exception {
    script.add(status(503));
    // ratio 1 ppm and no floor: Redis refuses every retry; an hour of backoff would hang a call that slept
    RetryingWebClient http = http(RetryingWebClient.builder(vertx).policy(FOREVER).budget(budget(0.000001, 0)));
    Throwable failure = failureOf(http.send(get()));
    RetryBudgetExhaustedException e = assertInstanceOf(RetryBudgetExhaustedException.class, failure);
    assertEquals(BudgetDecision.Reason.DENIED_EXHAUSTED, e.decision().reason());
    assertEquals(503, ((HttpResponse<?>) e.lastResult()).statusCode());
    assertEquals(0, recorder.delaysNanos.size());
    assertEquals(1, received.size());
  }

  @Test
  void deadlineEndsACallWhoseAttemptHangs() throws Exception {
    script.add(status(503));
    script.add(HANG);
    RetryingWebClient http = http(RetryingWebClient.builder(vertx).budget(budget(1.0, 100))
        .policy(FAST.toBuilder().deadline(Duration.ofMillis(300)).build()));
    Throwable failure = failureOf(http.send(get()));
    assertInstanceOf(AttemptTimeoutException.class, failure);
    assertEquals(2, received.size());
    assertEquals(List.of(RetryOutcome.DEADLINE + " 2"), recorder.outcomes(1));
  }

  @Test
  void cancellationStopsTheBackoffSleep() throws Exception {
    script.add(status(503));
    RetryingWebClient http = http(RetryingWebClient.builder(vertx).policy(FOREVER).budget(budget(1.0, 100)));
    Promise<Void> cancel = Promise.promise();
    recorder.onSleep = () -> cancel.tryComplete(); // cancelled as the hour-long sleep is scheduled
    Throwable failure = failureOf(http.send(get(), null, cancel.future()));
    assertInstanceOf(CancellationException.class, failure);
    assertEquals(1, received.size());
    assertEquals(1, budget.acquires.get());
    assertEquals(List.of(RetryOutcome.CANCELLED + " 1"), recorder.outcomes(1));
  }

  @Test
  void hedgeOnAnotherAttemptWinsOverOneThatHangs() throws Exception {
    script.add(HANG);
    VertxRetry retry = retry(VertxRetry.builder(vertx, FAST.toBuilder().deadline(Duration.ofSeconds(5)).build())
        .budget(budget(1.0, 100)).hedging(HedgePolicy.fixedDelay(Duration.ofMillis(50)).build()));
    HttpResponse<Buffer> r = await(retry.execute(() -> get().putHeader("X-Retry-Attempt", "x").send()));
    assertEquals(200, r.statusCode());
    assertEquals(2, received.size());
    assertEquals(1, budget.acquires.get());
    assertEquals(1, recorder.hedgesWon.size());
  }

  @Test
  void aBudgetSlowToAnswerBlocksNoEventLoop() throws Exception {
    script.add(status(503));
    script.add(status(503));
    script.add(status(503));
    // answers after 450 ms: asked with acquireBlocking() on an event loop it would trip the checker
    RetryBudget slow = new SlowBudget(budget(1.0, 100), vertx, 3 * BLOCKED_MS);
    RetryingWebClient http = http(RetryingWebClient.builder(vertx).policy(FAST.toBuilder().maxAttempts(2).build()).budget(slow));
    List<Future<HttpResponse<Buffer>>> calls = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      calls.add(onEventLoop(() -> http.send(get())).get(10, TimeUnit.SECONDS).getValue());
    }
    for (Future<HttpResponse<Buffer>> call : calls) {
      assertEquals(200, await(call).statusCode());
    }
    assertEquals(3, budget.acquires.get());
    // the checker is live: blocking a loop as long is seen (and then forgotten for this test's check)
    CompletableFuture<Void> spun = new CompletableFuture<>();
    int reportsBefore = spunReports.get();
    spinBusyMillis.set(0);
    vertx.getOrCreateContext().runOnContext(v -> {
      spinUntil = Long.MAX_VALUE;
      spinFrom = System.nanoTime();
      spinThread = Thread.currentThread();
      // 3 x the limit of CPU time (not of wall time, which a loaded machine stretches): a real block
      java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
      long end = mx.getCurrentThreadCpuTime() + TimeUnit.MILLISECONDS.toNanos(3 * BLOCKED_MS);
      while (mx.getCurrentThreadCpuTime() < end) {
        Thread.onSpinWait();
      }
      spinUntil = System.nanoTime();
      spun.complete(null);
    });
    spun.get(10, TimeUnit.SECONDS);
    io.retrybudget.testing.Eventually.await("the checker reports the spinning loop, measured busy past the limit",
        Duration.ofSeconds(5), () -> spunReports.get() > reportsBefore && spinBusyMillis.get() >= BLOCKED_MS);
  }

  /** A real budget whose answers take {@code delayMs}: asynchronously on a Vert.x timer, or by spinning. */
  static final class SlowBudget implements RetryBudget {
    final RetryBudget delegate;
    final Vertx vertx;
    final long delayMs;

    SlowBudget(RetryBudget delegate, Vertx vertx, long delayMs) {
      this.delegate = delegate;
      this.vertx = vertx;
      this.delayMs = delayMs;
    }

    @Override
    public String name() {
      return delegate.name();
    }

    @Override
    public void recordFirstAttempt() {
      delegate.recordFirstAttempt();
    }

    @Override
    public BudgetDecision acquireBlocking() {
      // CPU time, as LoopBusyTime counts a block: a loaded machine does not shorten it
      java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
      long end = mx.getCurrentThreadCpuTime() + TimeUnit.MILLISECONDS.toNanos(delayMs);
      while (mx.getCurrentThreadCpuTime() < end) {
        Thread.onSpinWait();
      }
      return delegate.acquireBlocking();
    }

    @Override
    public CompletionStage<BudgetDecision> acquire() {
      CompletableFuture<BudgetDecision> answer = new CompletableFuture<>();
      vertx.setTimer(delayMs, t -> delegate.acquire().whenComplete((d, e) -> {
        if (e != null) {
          answer.completeExceptionally(e);
        } else {
          answer.complete(d);
        }
      }));
      return answer;
    }

    @Override
    public void close() {
      delegate.close();
    }
  }

  static final class Recorder implements RetryListener {
    final List<String> outcomes = new CopyOnWriteArrayList<>();
    final List<Long> delaysNanos = new CopyOnWriteArrayList<>();
    final List<Integer> hedgesWon = new CopyOnWriteArrayList<>();
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
    public void onHedgeWon(int attempt) {
      hedgesWon.add(attempt);
    }

    @Override
    public void onOutcome(RetryOutcome outcome, int attempts) {
      outcomes.add(outcome + " " + attempts);
    }

    /** The outcomes once {@code n} calls have told theirs (the listener may hear after the future completes). */
    List<String> outcomes(int n) {
      io.retrybudget.testing.Eventually.await(n + " outcomes", Duration.ofSeconds(10), () -> outcomes.size() >= n);
      return List.copyOf(outcomes);
    }
  }
}
