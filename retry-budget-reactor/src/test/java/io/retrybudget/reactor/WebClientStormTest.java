package io.retrybudget.reactor;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.retry.RetryBudgetExhaustedException;
import io.retrybudget.retry.RetryPolicy;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.web.reactive.function.client.WebClient;
import reactor.core.publisher.Mono;

/**
 * 50 WebClients, each with its own {@link BudgetRetryFilter} and budget client (own counts, own
 * client id) on one fleet budget in a real Redis, each sending one call after another against a
 * Reactor Netty server that fails every request: the retries the server sees stay near the
 * budget's ratio of the first attempts it sees. The same storm, bounds and stopping rule as the
 * OkHttp and Vert.x integrations' ({@code OkHttpStormTest}, {@code VertxStormTest}).
 */
class WebClientStormTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();

  static final int CLIENTS = 50;
  static final Duration STORM = Duration.ofSeconds(3);
  // only a guard against a hang: the storm ends on a count of first attempts, not a time. At a load
  // of 31 the 50 clients made 223 first attempts in 15 s (15 a second); at 16, 500 take well under a minute
  static final Duration LONGEST = Duration.ofSeconds(120);
  static final long ENOUGH = 500;

  /**
   * Stops the storm once it has run {@link #STORM} and the server has seen {@link #ENOUGH} first
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
    try (TestServer server = new TestServer();
        RedisBudgetClient budgets = RedisBudgetClient.builder(redis.connectionOptions().commandTimeout(Duration.ofSeconds(5)).build())
            .callTimeout(Duration.ofSeconds(5)).build()) {
      // Redis decides, not the fallback: the longest timeouts the client takes (a timed-out permit call
      // is a refusal, which lowers the ratio checked), and connected before the storm (build() gives up
      // waiting after 2 s, which a loaded machine misses). At a load of 16 the client connects within
      // seconds and a permit call to a local Redis answers well inside 5 s
      Eventually.await("connected", Duration.ofSeconds(30), () -> !budgets.isDegraded());
      server.answer((req, res) -> {
        String attempt = req.requestHeaders().get("X-Retry-Attempt");
        (attempt == null || attempt.equals("1") ? firsts : retries).incrementAndGet();
        return res.status(503).sendString(Mono.just("down"));
      });
      // no floor: over a few seconds the fleet floor would dominate the ratio being checked
      BudgetConfig config = BudgetConfig.builder("webclient-storm").ratio(0.10).minRetriesPerSecond(0).windowSeconds(10).build();
      RetryPolicy policy = RetryPolicy.builder().maxAttempts(3).backoff(Duration.ofMillis(1), Duration.ofMillis(5)).build();
      AtomicBoolean stop = new AtomicBoolean();
      List<RetryBudget> fleet = new ArrayList<>();
      List<CompletableFuture<Void>> runs = new ArrayList<>();
      for (int i = 0; i < CLIENTS; i++) {
        RetryBudget budget = budgets.budget(config);
        fleet.add(budget);
        WebClient web = WebClient.builder().filter(BudgetRetryFilter.builder().policy(policy).budget(budget).build()).build();
        Mono<Void> oneCall = web.get().uri(server.url("/pay")).exchangeToMono(r -> r.releaseBody())
            .onErrorResume(RetryBudgetExhaustedException.class, denied -> Mono.empty()); // the budget said no: ended at once
        runs.add(oneCall.repeat(() -> !stop.get()).then().toFuture()); // any other failure fails the run
      }
      stopWhenEnough(stop, firsts);
      CompletableFuture.allOf(runs.toArray(new CompletableFuture<?>[0])).get(LONGEST.toSeconds() + 60, TimeUnit.SECONDS);
      fleet.forEach(RetryBudget::close);
    }
    double ratio = (double) retries.get() / firsts.get();
    System.out.printf("webclient storm: %d clients, %d first attempts, %d retries, ratio %.4f%n",
        CLIENTS, firsts.get(), retries.get(), ratio);
    assertTrue(firsts.get() >= ENOUGH, "too few first attempts for a ratio (stopped at " + LONGEST + "): " + firsts.get());
    assertTrue(ratio >= 0.05 && ratio <= 0.125, "fleet retry ratio " + ratio + " (" + retries + " / " + firsts + ")");
  }
}
