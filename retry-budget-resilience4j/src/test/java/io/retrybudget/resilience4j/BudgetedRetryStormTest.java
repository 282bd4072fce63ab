package io.retrybudget.resilience4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.resilience4j.retry.RetryConfig;
import io.github.resilience4j.retry.internal.RetryImpl;
import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.retry.RetryBudgetExhaustedException;
import io.retrybudget.testing.RedisExtension;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A storm through Resilience4j alone: 50 clients, each its own Resilience4j Retry (3 attempts) and
 * its own RedisBudgetClient, on one fleet budget (ratio 0.10, no floor), against a backend that
 * fails every call. Without the budget the backend would see 3 attempts per call; with it, the
 * fleet's retries stay near 10 % of its first attempts.
 */
class BudgetedRetryStormTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();
  private static final int CLIENTS = 50;
  private static final int CALLS_PER_CLIENT = 300;
  private static final long PERIOD_MILLIS = 8; // per client: 50 / 8 ms = 6250 first attempts/s in all

  @BeforeAll
  static void noWaits() {
    RetryImpl.setSleepFunction(millis -> { }); // the storm is about admission, not backoff
  }

  @AfterAll
  static void restoreSleeps() {
    RetryImpl.setSleepFunction(Thread::sleep);
  }

  @Test
  void fiftyClientsKeepTheFleetNearTheRatio() throws Exception {
    storm("r4j-storm", false);
  }

  @Test
  void fiftyClientsOnTheCompletionStagePathToo() throws Exception {
    storm("r4j-storm-async", true);
  }

  private void storm(String budgetName, boolean async) throws Exception {
    redis.flushAll();
    BudgetConfig config = BudgetConfig.builder(budgetName).ratio(0.10).minRetriesPerSecond(0).windowSeconds(10).build();
    RetryConfig retryConfig = RetryConfig.custom().maxAttempts(3).waitDuration(Duration.ofMillis(10)).build();
    LongAdder backendCalls = new LongAdder();
    LongAdder refused = new LongAdder();
    LongAdder otherFailures = new LongAdder();
    AtomicLong firstAttempts = new AtomicLong();

    List<RedisBudgetClient> clients = new ArrayList<>();
    List<BudgetedRetry> retries = new ArrayList<>();
    ScheduledExecutorService load = Executors.newScheduledThreadPool(8);
    try {
      for (int i = 0; i < CLIENTS; i++) {
        RedisBudgetClient client = RedisBudgetClient.builder(redis.connectionOptions().build())
            .callTimeout(Duration.ofMillis(250)) // a shared, loaded build machine: measure admission, not timeouts
            .build();
        clients.add(client);
        RetryBudget budget = client.budget(config);
        retries.add(BudgetedRetry.of("storm-" + i, retryConfig, budget));
      }
      CountDownLatch done = new CountDownLatch(CLIENTS * CALLS_PER_CLIENT); // every call has ended
      List<ScheduledFuture<?>> drivers = new ArrayList<>();
      for (BudgetedRetry retry : retries) {
        AtomicInteger calls = new AtomicInteger();
        ScheduledFuture<?>[] self = new ScheduledFuture<?>[1];
        self[0] = load.scheduleAtFixedRate(() -> {
          if (calls.getAndIncrement() >= CALLS_PER_CLIENT) {
            return;
          }
          firstAttempts.incrementAndGet();
          if (async) {
            retry.executeCompletionStage(load, () -> {
              backendCalls.increment();
              return CompletableFuture.failedFuture(new IOException("backend down"));
            }).whenComplete((result, failure) -> {
              count(failure, refused, otherFailures);
              done.countDown();
            });
            return;
          }
          try {
            retry.executeCallable(() -> {
              backendCalls.increment();
              throw new IOException("backend down");
            });
          } catch (Exception e) {
            count(e, refused, otherFailures);
          }
          done.countDown();
        }, 0, PERIOD_MILLIS, TimeUnit.MILLISECONDS);
        drivers.add(self[0]);
      }
      assertTrue(done.await(60, TimeUnit.SECONDS), "the storm did not finish");
      drivers.forEach(d -> d.cancel(false));

      long requests = firstAttempts.get();
      long granted = backendCalls.sum() - requests;
      double ratio = (double) granted / requests;
      String report = String.format("requests=%d retries=%d ratio=%.4f refused=%d ran-out=%d",
          requests, granted, ratio, refused.sum(), otherFailures.sum());
      System.out.println("r4j storm (" + (async ? "CompletionStage" : "sync") + "): " + report);
      assertEquals((long) CLIENTS * CALLS_PER_CLIENT, requests);
      assertTrue(ratio >= 0.05 && ratio <= 0.125, report);
      assertTrue(refused.sum() > requests / 2, "most calls end refused: " + report);
    } finally {
      load.shutdownNow();
      load.awaitTermination(5, TimeUnit.SECONDS);
      clients.forEach(RedisBudgetClient::close);
    }
  }

  private static void count(Throwable failure, LongAdder refused, LongAdder ranOut) {
    if (failure instanceof RetryBudgetExhaustedException) {
      refused.increment();
    } else {
      ranOut.increment(); // attempts ran out: both retries were granted
    }
  }
}
