package io.retrybudget.resilience4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.resilience4j.retry.RetryConfig;
import io.github.resilience4j.retry.internal.RetryImpl;
import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.budget.redis.protocol.BudgetKeys;
import io.retrybudget.budget.redis.protocol.LuaScript;
import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.retry.RetryBudgetExhaustedException;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The budgeted Resilience4j Retry against a fleet budget in a real Redis. */
class RedisBudgetedRetryTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();
  private static final List<Long> SLEEPS = new CopyOnWriteArrayList<>();
  private static final RetryConfig CONFIG = RetryConfig.custom().maxAttempts(3).waitDuration(Duration.ofMillis(200)).build();

  private RedisBudgetClient client;
  private RedisBudgetStore statusStore;

  @BeforeAll
  static void recordSleeps() {
    RetryImpl.setSleepFunction(SLEEPS::add);
  }

  @AfterAll
  static void restoreSleeps() {
    RetryImpl.setSleepFunction(Thread::sleep);
  }

  @BeforeEach
  void start() {
    SLEEPS.clear();
    redis.flushAll();
    client = RedisBudgetClient.builder(redis.connectionOptions().build())
        .callTimeout(Duration.ofMillis(500)) // correctness here, not the timeout
        .build();
    statusStore = RedisBudgetStore.connect(redis.connectionOptions().build());
  }

  @AfterEach
  void stop() {
    client.close();
    statusStore.close();
  }

  /** {requests, retries, denied} in Redis's window. */
  private long[] status(String name) throws Exception {
    BudgetKeys k = new BudgetKeys(name);
    List<Object> s = statusStore.run(LuaScript.STATUS, new String[] {k.config(), k.window()},
        "100000", "10", "10", "enforce").get(5, TimeUnit.SECONDS);
    return new long[] {(Long) s.get(1), (Long) s.get(2), (Long) s.get(3)};
  }

  private RetryBudget budget(String name, int floorPerSecond) {
    return client.budget(BudgetConfig.builder(name).ratio(0.10).minRetriesPerSecond(floorPerSecond).build());
  }

  @Test
  void retryGrantedByRedisThenSuccess() throws Exception {
    RetryBudget budget = budget("r4j-granted", 10);
    BudgetedRetry retry = BudgetedRetry.of("payments", CONFIG, budget);
    AtomicInteger calls = new AtomicInteger();

    String result = retry.executeCallable(() -> {
      if (calls.incrementAndGet() == 1) {
        throw new IOException("down");
      }
      return "ok";
    });

    assertEquals("ok", result);
    assertEquals(List.of(200L), SLEEPS);
    // the permit request carried the first attempt: both are in Redis at once
    long[] s = status("r4j-granted");
    assertEquals(1, s[0]);
    assertEquals(1, s[1]);
  }

  @Test
  void exhaustedFleetBudgetFailsFastWithoutWaiting() throws Exception {
    RetryBudget budget = budget("r4j-exhausted", 0); // 10 % of one first attempt: no retry
    BudgetedRetry retry = BudgetedRetry.of("payments", CONFIG, budget);
    AtomicInteger calls = new AtomicInteger();

    RetryBudgetExhaustedException e = assertThrows(RetryBudgetExhaustedException.class, () -> retry.executeCallable(() -> {
      calls.incrementAndGet();
      throw new IOException("down");
    }));

    assertEquals(1, calls.get());
    assertInstanceOf(IOException.class, e.getCause());
    assertEquals(BudgetDecision.Reason.DENIED_EXHAUSTED, e.decision().reason());
    assertTrue(SLEEPS.isEmpty(), SLEEPS.toString());
    assertEquals(1, status("r4j-exhausted")[2]);
    // the next refusal is answered from the local cache, without a round trip
    RetryBudgetExhaustedException cached = assertThrows(RetryBudgetExhaustedException.class, () -> retry.executeCallable(() -> {
      throw new IOException("down");
    }));
    assertEquals(BudgetDecision.Reason.DENIED_EXHAUSTED_CACHED, cached.decision().reason());
  }

  private static Supplier<CompletionStage<String>> failingOnce(AtomicInteger calls) {
    return () -> calls.incrementAndGet() == 1
        ? CompletableFuture.failedFuture(new IOException("down"))
        : CompletableFuture.completedFuture("ok");
  }

  @Test
  void completionStageGrantedByRedis() throws Exception {
    RetryBudget budget = budget("r4j-async-granted", 10);
    BudgetedRetry retry = BudgetedRetry.of("payments", CONFIG, budget);
    ManualScheduler scheduler = new ManualScheduler();
    AtomicInteger calls = new AtomicInteger();

    CompletableFuture<String> result = retry.executeCompletionStage(scheduler, failingOnce(calls)).toCompletableFuture();

    // Redis answers on its own thread, which only schedules the retry after Resilience4j's wait
    Eventually.await("the retry scheduled", Duration.ofSeconds(5), () -> scheduler.queuedCount() == 1);
    assertEquals(200, scheduler.history().get(0).delayMillis);
    scheduler.runQueued();
    assertEquals("ok", result.get(5, TimeUnit.SECONDS));
    assertEquals(1, status("r4j-async-granted")[1]);
  }

  @Test
  void completionStageRefusedByRedis() throws Exception {
    RetryBudget budget = budget("r4j-async-exhausted", 0);
    BudgetedRetry retry = BudgetedRetry.of("payments", CONFIG, budget);
    ManualScheduler scheduler = new ManualScheduler();
    AtomicInteger calls = new AtomicInteger();

    Supplier<CompletionStage<String>> failing = () -> {
      calls.incrementAndGet();
      return CompletableFuture.failedFuture(new IOException("down"));
    };
    CompletableFuture<String> result = retry.executeCompletionStage(scheduler, failing).toCompletableFuture();

    // Redis's answer is handed to the scheduler (or used at once if it was already there)
    Eventually.await("the refusal", Duration.ofSeconds(5), () -> result.isDone() || scheduler.queuedCount() == 1);
    scheduler.runQueued();
    ExecutionException e = assertThrows(ExecutionException.class, () -> result.get(5, TimeUnit.SECONDS));
    RetryBudgetExhaustedException refused = assertInstanceOf(RetryBudgetExhaustedException.class, e.getCause());
    assertEquals(BudgetDecision.Reason.DENIED_EXHAUSTED, refused.decision().reason());
    assertInstanceOf(IOException.class, refused.getCause());
    assertEquals(1, calls.get());
    for (ManualScheduler.Task task : scheduler.history()) {
      assertEquals(0, task.delayMillis, "no wait before the refusal");
    }
  }
}
