package io.retrybudget.okhttp;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.retry.RetryPolicy;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import mockwebserver3.Dispatcher;
import mockwebserver3.MockResponse;
import mockwebserver3.MockWebServer;
import mockwebserver3.RecordedRequest;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * 50 OkHttp clients, each with its own interceptor and budget client (own counts, own client id)
 * on one fleet budget in a real Redis, against a backend that fails every request: the retries
 * the backend sees stay near the budget's ratio of the first attempts it sees.
 */
class OkHttpStormTest {
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
    try (MockWebServer server = new MockWebServer();
        RedisBudgetClient budgets = RedisBudgetClient.builder(redis.connectionOptions().commandTimeout(Duration.ofSeconds(5)).build())
            .callTimeout(Duration.ofSeconds(5)).build()) {
      // Redis decides, not the fallback: the longest timeouts the client takes (a timed-out permit call
      // is a refusal, which lowers the ratio checked), and connected before the storm (build() gives up
      // waiting after 2 s, which a loaded machine misses). At a load of 16 the client connects within
      // seconds and a permit call to a local Redis answers well inside 5 s
      Eventually.await("connected", Duration.ofSeconds(30), () -> !budgets.isDegraded());
      server.setDispatcher(new Dispatcher() {
        @Override
        public MockResponse dispatch(RecordedRequest request) {
          String attempt = request.getHeaders().get("X-Retry-Attempt");
          (attempt == null || attempt.equals("1") ? firsts : retries).incrementAndGet();
          return new MockResponse.Builder().code(503).body("down").build();
        }
      });
      server.start();
      // no floor: over a few seconds the fleet floor would dominate the ratio being checked
      BudgetConfig config = BudgetConfig.builder("okhttp-storm").ratio(0.10).minRetriesPerSecond(0).windowSeconds(10).build();
      RetryPolicy policy = RetryPolicy.builder().maxAttempts(3).backoff(Duration.ofMillis(1), Duration.ofMillis(5)).build();
      List<RetryBudget> fleet = new ArrayList<>();
      List<RetryBudgetInterceptor> interceptors = new ArrayList<>();
      List<CompletableFuture<Void>> runs = new ArrayList<>();
      AtomicBoolean stop = new AtomicBoolean();
      Request request = new Request.Builder().url(server.url("/pay")).build();
      for (int i = 0; i < CLIENTS; i++) {
        RetryBudget budget = budgets.budget(config);
        RetryBudgetInterceptor interceptor = RetryBudgetInterceptor.builder().policy(policy).budget(budget).build();
        fleet.add(budget);
        interceptors.add(interceptor);
        OkHttpClient http = new OkHttpClient.Builder().addInterceptor(interceptor).retryOnConnectionFailure(false).build();
        runs.add(CompletableFuture.runAsync(() -> {
          while (!stop.get()) {
            try (Response r = http.newCall(request).execute()) {
              r.body().string();
            } catch (RetryBudgetExhaustedIOException denied) {
              // the budget said no: the call ended at once
            } catch (IOException e) {
              throw new AssertionError(e);
            }
          }
        }, runnable -> new Thread(runnable, "storm-client").start()));
      }
      stopWhenEnough(stop, firsts);
      CompletableFuture.allOf(runs.toArray(new CompletableFuture<?>[0])).get(LONGEST.toSeconds() + 60, TimeUnit.SECONDS);
      interceptors.forEach(RetryBudgetInterceptor::close);
      fleet.forEach(RetryBudget::close);
    }
    double ratio = (double) retries.get() / firsts.get();
    System.out.printf("okhttp storm: %d clients, %d first attempts, %d retries, ratio %.4f%n",
        CLIENTS, firsts.get(), retries.get(), ratio);
    assertTrue(firsts.get() >= ENOUGH, "too few first attempts for a ratio (stopped at " + LONGEST + "): " + firsts.get());
    assertTrue(ratio >= 0.05 && ratio <= 0.125, "fleet retry ratio " + ratio + " (" + retries + " / " + firsts + ")");
  }
}
