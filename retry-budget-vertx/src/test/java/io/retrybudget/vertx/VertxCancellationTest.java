package io.retrybudget.vertx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.retry.AttemptTimeoutException;
import io.retrybudget.retry.HedgePolicy;
import io.retrybudget.retry.RetryPolicy;
import io.retrybudget.testing.CountingBudget;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServer;
import io.vertx.ext.web.client.HttpResponse;
import io.vertx.ext.web.client.WebClient;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Stopping attempts in flight, against a real Vert.x HTTP server whose {@code /hang} never answers
 * (it counts the connections the clients close) and whose {@code /fast} answers at once, with a
 * real Redis budget. The retry helpers get a Vertx that counts the timers they set, cancel and see
 * fire: after every call, none is left pending.
 */
class VertxCancellationTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();

  private static RedisBudgetClient budgets;
  private static Vertx real;
  private static HttpServer server;
  private static final AtomicInteger hanging = new AtomicInteger();
  private static final AtomicInteger closedByClient = new AtomicInteger();

  /** Timers set through {@link #vertx} and neither fired nor cancelled yet. */
  private final Set<Long> pendingTimers = ConcurrentHashMap.newKeySet();
  private Vertx vertx;
  private CountingBudget budget;
  private final List<AutoCloseable> closeables = new CopyOnWriteArrayList<>();

  @BeforeAll
  static void start() throws Exception {
    // the subject is cancellation, not Redis's speed: the longest timeouts the client takes (at 1 s a
    // permit call on a loaded machine timed out, a refusal), and connected before the first test
    // (build() gives up waiting after 2 s, which a loaded machine misses; until the client connects,
    // the fallback answers). At a load of 16 it connects within seconds and a permit call to a local
    // Redis answers well inside 5 s
    budgets = RedisBudgetClient.builder(redis.connectionOptions().commandTimeout(Duration.ofSeconds(5)).build())
        .callTimeout(Duration.ofSeconds(5)).build();
    Eventually.await("connected", Duration.ofSeconds(30), () -> !budgets.isDegraded());
    real = Vertx.vertx();
    server = real.createHttpServer().requestHandler(req -> {
      if (req.path().equals("/hang")) {
        hanging.incrementAndGet();
        req.connection().closeHandler(v -> closedByClient.incrementAndGet()); // never answered: only the client ends it
      } else {
        req.response().end("fast");
      }
    }).listen(0, "127.0.0.1").toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
  }

  @AfterAll
  static void stop() throws Exception {
    budgets.close();
    real.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
  }

  @BeforeEach
  void counting(TestInfo info) {
    hanging.set(0);
    closedByClient.set(0);
    vertx = (Vertx) Proxy.newProxyInstance(Vertx.class.getClassLoader(), new Class<?>[] {Vertx.class}, (p, m, args) -> {
      try {
        if (m.getName().equals("setTimer") && args.length == 2 && args[1] instanceof Handler<?> h) {
          @SuppressWarnings("unchecked")
          Handler<Long> handler = (Handler<Long>) h;
          long[] id = new long[1];
          synchronized (pendingTimers) {
            id[0] = real.setTimer((Long) args[0], t -> {
              pendingTimers.remove(t);
              handler.handle(t);
            });
            pendingTimers.add(id[0]);
          }
          return id[0];
        }
        Object result = m.invoke(real, args);
        if (m.getName().equals("cancelTimer") && Boolean.TRUE.equals(result)) {
          pendingTimers.remove((Long) args[0]);
        }
        return result;
      } catch (InvocationTargetException e) {
        throw e.getCause();
      }
    });
    budget = new CountingBudget(budgets.budget(BudgetConfig.builder("vertx-cancel-" + info.getTestMethod().orElseThrow().getName())
        .ratio(0.1).minRetriesPerSecond(10).build()));
  }

  @AfterEach
  void close() throws Exception {
    for (AutoCloseable c : closeables) {
      c.close();
    }
    budget.close();
  }

  private static <T> T await(Future<T> f) throws Exception {
    return f.toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
  }

  private static Throwable failure(Future<?> f) throws Exception {
    try {
      await(f);
    } catch (ExecutionException e) {
      return e.getCause();
    } catch (CancellationException e) {
      return e; // the stage of a future failed with a CancellationException is itself cancelled
    }
    throw new AssertionError("the call did not fail");
  }

  /** Waits for what a real server or timer makes true: the bound only stops a hang, so it is generous. */
  private static void eventually(String what, BooleanSupplier condition) throws InterruptedException {
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (!condition.getAsBoolean() && System.nanoTime() < end) {
      TimeUnit.MILLISECONDS.sleep(5);
    }
    assertTrue(condition.getAsBoolean(), what);
  }

  @Test
  void cancellingAWebClientCallResetsTheRequestInFlightAndItsTimers() throws Exception {
    WebClient web = WebClient.create(real);
    closeables.add(web::close);
    RetryingWebClient http = RetryingWebClient.builder(vertx).webClient(web).budget(budget)
        .policy(RetryPolicy.builder().maxAttempts(3).deadline(Duration.ofMinutes(10)).build()).build();
    closeables.add(http);
    Promise<Void> cancel = Promise.promise();

    Future<HttpResponse<Buffer>> call = http.send(web.get(server.actualPort(), "127.0.0.1", "/hang"), null, cancel.future());
    eventually("the request reached the server", () -> hanging.get() == 1);
    assertEquals(0, closedByClient.get());
    assertTrue(!pendingTimers.isEmpty(), "the deadline's timer"); // what cancelling must take away

    cancel.complete();

    assertInstanceOf(CancellationException.class, failure(call));
    eventually("the attempt's connection closed by the client", () -> closedByClient.get() == 1);
    eventually("timers left: " + pendingTimers, pendingTimers::isEmpty);
    assertEquals(1, hanging.get()); // not retried
    assertEquals(0, budget.acquires.get());
  }

  @Test
  void theAttemptThatLostToAHedgeIsReset() throws Exception {
    HttpClient client = real.createHttpClient();
    closeables.add(() -> client.close());
    VertxRetry retry = VertxRetry.builder(vertx, RetryPolicy.builder().maxAttempts(3).build())
        .budget(budget).hedging(HedgePolicy.fixedDelay(Duration.ofMillis(50)).build()).build();
    closeables.add(retry);

    Future<String> call = retry.executeCancellable(null, (context, abandoned) ->
        client.request(HttpMethod.GET, server.actualPort(), "127.0.0.1", context.attempt() == 1 ? "/hang" : "/fast")
            .compose(req -> {
              abandoned.onComplete(v -> req.reset());
              return req.send().compose(HttpClientResponse::body).map(Buffer::toString);
            }), null);

    assertEquals("fast", await(call));
    assertEquals(1, budget.acquires.get()); // the hedge asked the budget
    eventually("the losing attempt's connection closed by the client", () -> closedByClient.get() == 1);
    eventually("timers left: " + pendingTimers, pendingTimers::isEmpty);
  }

  @Test
  void anAttemptPastItsTimeoutIsResetBeforeTheRetry() throws Exception {
    HttpClient client = real.createHttpClient();
    closeables.add(() -> client.close());
    VertxRetry retry = VertxRetry.builder(vertx, RetryPolicy.builder().maxAttempts(2)
        .attemptTimeout(Duration.ofMillis(200)).backoff(Duration.ofMillis(1), Duration.ofMillis(5)).build())
        .budget(budget).build();
    closeables.add(retry);

    Future<String> call = retry.executeCancellable(null, (context, abandoned) ->
        client.request(HttpMethod.GET, server.actualPort(), "127.0.0.1", "/hang").compose(req -> {
          abandoned.onComplete(v -> req.reset());
          return req.send().compose(HttpClientResponse::body).map(Buffer::toString);
        }), null);

    assertInstanceOf(AttemptTimeoutException.class, failure(call));
    assertEquals(2, hanging.get());
    eventually("both attempts' connections closed by the client", () -> closedByClient.get() == 2);
    eventually("timers left: " + pendingTimers, pendingTimers::isEmpty);
  }
}
