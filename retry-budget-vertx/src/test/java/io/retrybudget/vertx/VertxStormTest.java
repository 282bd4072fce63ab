package io.retrybudget.vertx;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.retry.RetryPolicy;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.ext.web.client.WebClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * 50 WebClient integrations, each with its own budget client on one fleet budget in a real Redis,
 * each sending one call after another from its own event-loop context against a Vert.x server that
 * fails every request: the retries the server sees stay near the budget's ratio.
 */
class VertxStormTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();

  static final int CLIENTS = 50;
  static final Duration STORM = Duration.ofSeconds(3);
  // only a guard against a hang: the storm ends on a count of first attempts, not a time. At a load
  // of 31 the 50 clients made 223 first attempts in 15 s (15 a second); at 16, 500 take well under a minute
  static final Duration LONGEST = Duration.ofSeconds(120);
  static final long ENOUGH = 500;

  /**
   * Stops the storm once it has run {@link #STORM} and the backend has seen {@link #ENOUGH} first
   * attempts, however long that takes on a loaded machine; at {@link #LONGEST} at the latest.
   */
  static void stopWhenEnough(AtomicBoolean stop, AtomicLong firsts) {
    long start = System.nanoTime();
    java.util.concurrent.ScheduledExecutorService timer = java.util.concurrent.Executors.newSingleThreadScheduledExecutor();
    timer.scheduleWithFixedDelay(() -> {
      long elapsed = System.nanoTime() - start;
      if ((elapsed >= STORM.toNanos() && firsts.get() >= ENOUGH) || elapsed >= LONGEST.toNanos()) {
        stop.set(true);
        timer.shutdown();
      }
    }, 100, 100, TimeUnit.MILLISECONDS);
  }

  @Test
  void fiftyClientsInATotalOutageRetryAboutTheFleetRatio() throws Exception {
    AtomicLong firsts = new AtomicLong();
    AtomicLong retries = new AtomicLong();
    Vertx vertx = Vertx.vertx();
    try (RedisBudgetClient budgets = RedisBudgetClient.builder(redis.connectionOptions().commandTimeout(Duration.ofSeconds(5)).build())
        .callTimeout(Duration.ofSeconds(5)).build()) {
      // Redis decides, not the fallback: the longest timeouts the client takes (a timed-out permit call
      // is a refusal, which lowers the ratio checked), and connected before the storm (build() gives up
      // waiting after 2 s, which a loaded machine misses). At a load of 16 the client connects within
      // seconds and a permit call to a local Redis answers well inside 5 s
      Eventually.await("connected", Duration.ofSeconds(30), () -> !budgets.isDegraded());
      HttpServer server = vertx.createHttpServer().requestHandler(req -> {
        String attempt = req.getHeader("X-Retry-Attempt");
        (attempt == null || attempt.equals("1") ? firsts : retries).incrementAndGet();
        req.response().setStatusCode(503).end("down");
      }).listen(0, "127.0.0.1").toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
      BudgetConfig config = BudgetConfig.builder("vertx-storm").ratio(0.10).minRetriesPerSecond(0).windowSeconds(10).build();
      RetryPolicy policy = RetryPolicy.builder().maxAttempts(3).backoff(Duration.ofMillis(1), Duration.ofMillis(5)).build();
      WebClient web = WebClient.create(vertx);
      AtomicBoolean stop = new AtomicBoolean();
      List<RetryBudget> fleet = new ArrayList<>();
      List<RetryingWebClient> clients = new ArrayList<>();
      List<CompletableFuture<Void>> runs = new ArrayList<>();
      for (int i = 0; i < CLIENTS; i++) {
        RetryBudget budget = budgets.budget(config);
        RetryingWebClient http = RetryingWebClient.builder(vertx).policy(policy).budget(budget).build();
        fleet.add(budget);
        clients.add(http);
        CompletableFuture<Void> done = new CompletableFuture<>();
        runs.add(done);
        vertx.getOrCreateContext().runOnContext(v -> loop(http, web, server.actualPort(), stop, done));
      }
      stopWhenEnough(stop, firsts);
      CompletableFuture.allOf(runs.toArray(new CompletableFuture<?>[0])).get(LONGEST.toSeconds() + 60, TimeUnit.SECONDS);
      clients.forEach(RetryingWebClient::close);
      fleet.forEach(RetryBudget::close);
      web.close();
    } finally {
      vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }
    double ratio = (double) retries.get() / firsts.get();
    System.out.printf("vertx storm: %d clients, %d first attempts, %d retries, ratio %.4f%n",
        CLIENTS, firsts.get(), retries.get(), ratio);
    assertTrue(firsts.get() >= ENOUGH, "too few first attempts for a ratio (stopped at " + LONGEST + "): " + firsts.get());
    assertTrue(ratio >= 0.05 && ratio <= 0.125, "fleet retry ratio " + ratio + " (" + retries + " / " + firsts + ")");
  }

  /** One call after another on this client's context until told to stop; any failure but a denial fails the run. */
  private static void loop(RetryingWebClient http, WebClient web, int port, AtomicBoolean stop, CompletableFuture<Void> done) {
    if (stop.get()) {
      done.complete(null);
      return;
    }
    Future<?> call = http.send(web.get(port, "127.0.0.1", "/pay"));
    call.onComplete(ar -> {
      if (ar.failed() && !(ar.cause() instanceof io.retrybudget.retry.RetryBudgetExhaustedException)) {
        done.completeExceptionally(ar.cause());
        return;
      }
      loop(http, web, port, stop, done);
    });
  }
}
