package io.retrybudget.failsafe;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.failsafe.Failsafe;
import dev.failsafe.RetryPolicy;
import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.retry.RetryBudgetExhaustedException;
import io.retrybudget.testing.RedisExtension;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A storm through Failsafe alone: 50 clients, each its own budgeted Failsafe retry policy (2
 * retries) and its own RedisBudgetClient, on one fleet budget (ratio 0.10, no floor), against a
 * backend that fails every call. Without the budget the backend would see 3 attempts per call; with
 * it, the fleet's retries stay near 10 % of its first attempts. The paced balance grants 0.10 of
 * what Redis has counted, so the ratio is never above 0.125 whatever the machine's load (a call
 * timeout of 250 ms keeps a loaded machine from sending decisions to the fallback). Below 0.10 it
 * comes out by timing alone: first attempts still unflushed when a retry asks, refusals cached until
 * the balance refills. Measured at load average 40 on 2 cores: 0.099 sync, 0.054 async (whose eight
 * threads ask in bursts). The lower bound 0.03 only says retries do flow: a budget that refused
 * everything would give 0.
 */
class BudgetedRetryPolicyStormTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();
  private static final int CLIENTS = 50;
  private static final int CALLS_PER_CLIENT = 300;
  private static final long PERIOD_MILLIS = 8; // per client: 50 / 8 ms = 6250 first attempts/s in all

  @Test
  void fiftyClientsKeepTheFleetNearTheRatio() throws Exception {
    storm("failsafe-storm", false);
  }

  @Test
  void fiftyClientsOnTheAsyncPathToo() throws Exception {
    storm("failsafe-storm-async", true);
  }

  private void storm(String budgetName, boolean async) throws Exception {
    redis.flushAll();
    BudgetConfig config = BudgetConfig.builder(budgetName).ratio(0.10).minRetriesPerSecond(0).windowSeconds(10).build();
    LongAdder backendCalls = new LongAdder();
    LongAdder refused = new LongAdder();
    LongAdder ranOut = new LongAdder();
    AtomicLong firstAttempts = new AtomicLong();

    List<RedisBudgetClient> clients = new ArrayList<>();
    List<RetryPolicy<String>> policies = new ArrayList<>();
    ScheduledExecutorService load = Executors.newScheduledThreadPool(8);
    try {
      for (int i = 0; i < CLIENTS; i++) {
        RedisBudgetClient client = RedisBudgetClient.builder(redis.connectionOptions().build())
            .callTimeout(Duration.ofMillis(250))
            .build();
        clients.add(client);
        policies.add(BudgetedRetryPolicy.of(RetryPolicy.<String>builder().withMaxRetries(2).build(), client.budget(config)));
      }
      CountDownLatch done = new CountDownLatch(CLIENTS * CALLS_PER_CLIENT);
      List<ScheduledFuture<?>> drivers = new ArrayList<>();
      for (RetryPolicy<String> policy : policies) {
        AtomicInteger calls = new AtomicInteger();
        drivers.add(load.scheduleAtFixedRate(() -> {
          if (calls.getAndIncrement() >= CALLS_PER_CLIENT) {
            return;
          }
          firstAttempts.incrementAndGet();
          if (async) {
            Failsafe.with(policy).with(load).getAsync(() -> {
              backendCalls.increment();
              throw new IOException("backend down");
            }).whenComplete((result, failure) -> {
              count(failure, refused, ranOut);
              done.countDown();
            });
            return;
          }
          try {
            Failsafe.with(policy).get(() -> {
              backendCalls.increment();
              throw new IOException("backend down");
            });
          } catch (RuntimeException e) {
            count(e, refused, ranOut);
          }
          done.countDown();
        }, 0, PERIOD_MILLIS, TimeUnit.MILLISECONDS));
      }
      assertTrue(done.await(60, TimeUnit.SECONDS), "the storm did not finish");
      drivers.forEach(d -> d.cancel(false));

      long requests = firstAttempts.get();
      long granted = backendCalls.sum() - requests;
      double ratio = (double) granted / requests;
      String report = String.format("requests=%d retries=%d ratio=%.4f refused=%d ran-out=%d",
          requests, granted, ratio, refused.sum(), ranOut.sum());
      System.out.println("failsafe storm (" + (async ? "async" : "sync") + "): " + report);
      assertEquals((long) CLIENTS * CALLS_PER_CLIENT, requests);
      assertTrue(ratio >= 0.03 && ratio <= 0.125, report);
      assertTrue(refused.sum() > requests / 2, "most calls end refused: " + report);
    } finally {
      load.shutdownNow();
      load.awaitTermination(5, TimeUnit.SECONDS);
      clients.forEach(RedisBudgetClient::close);
    }
  }

  private static void count(Throwable failure, LongAdder refused, LongAdder ranOut) {
    Throwable cause = failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
    if (cause instanceof RetryBudgetExhaustedException) {
      refused.increment();
    } else {
      ranOut.increment(); // retries ran out: both were granted
    }
  }
}
