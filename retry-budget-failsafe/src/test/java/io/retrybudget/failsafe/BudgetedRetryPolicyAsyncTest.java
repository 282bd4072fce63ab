package io.retrybudget.failsafe;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.failsafe.Failsafe;
import dev.failsafe.RetryPolicy;
import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.budget.BudgetDecision.Reason;
import io.retrybudget.retry.RetryBudgetExhaustedException;
import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout.ThreadMode;

/**
 * Failsafe's asynchronous scenarios ({@code getAsync}, {@code getStageAsync},
 * {@code runAsyncExecution}) through a budgeted retry policy whose budget answers when the test
 * says: no thread blocks on the budget, a pending answer holds the retry, a refusal completes the
 * future, a cancelled execution asks nothing more.
 */
@org.junit.jupiter.api.Timeout(value = 30, threadMode = ThreadMode.SEPARATE_THREAD)
class BudgetedRetryPolicyAsyncTest {
  private final ScheduledExecutorService scheduler = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread t = new Thread(r, "failsafe-scheduler");
    t.setDaemon(true);
    return t;
  });
  private final AtomicInteger attempts = new AtomicInteger();

  @AfterEach
  void stop() throws InterruptedException {
    scheduler.shutdownNow();
    assertTrue(scheduler.awaitTermination(10, TimeUnit.SECONDS));
  }

  /** Runs everything already queued on the single scheduler thread (0-delay tasks run in order). */
  private void drain() throws Exception {
    for (int i = 0; i < 3; i++) {
      scheduler.submit(() -> { }).get(10, TimeUnit.SECONDS);
    }
  }

  private void awaitAsks(ScriptedBudget budget, int n) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (budget.asyncAsks() < n) {
      assertTrue(System.nanoTime() < deadline, "the budget was not asked " + n + " times");
      drain();
    }
  }

  private CompletableFuture<String> alwaysFailing(RetryPolicy<String> policy) {
    return Failsafe.with(policy).with(scheduler).getAsync(() -> {
      attempts.incrementAndGet();
      throw new IOException("down");
    });
  }

  @Test
  void aPendingAnswerHoldsTheRetryAndAGrantLetsItRun() throws Exception {
    ScriptedBudget budget = ScriptedBudget.pending();
    RetryPolicy<String> policy = BudgetedRetryPolicy.of(RetryPolicy.<String>builder().withMaxRetries(1).build(), budget);
    CompletableFuture<String> call = alwaysFailing(policy);
    awaitAsks(budget, 1);
    drain();
    assertEquals(1, attempts.get(), "no retry before the budget answered");
    assertFalse(call.isDone());

    budget.answer(0, BudgetDecision.GRANTED);
    ExecutionException e = assertThrows(ExecutionException.class, () -> call.get(10, TimeUnit.SECONDS));
    assertInstanceOf(IOException.class, e.getCause(), "retries ran out: Failsafe's own failure");
    assertEquals(2, attempts.get());
    assertEquals(1, budget.asyncAsks());
    assertEquals(1, budget.firstAttempts.get());
  }

  @Test
  void aRefusalCompletesTheFutureOnFailsafesSchedulerNotTheAnsweringThread() throws Exception {
    ScriptedBudget budget = ScriptedBudget.pending();
    RetryPolicy<String> policy = BudgetedRetryPolicy.of(
        RetryPolicy.<String>builder().withMaxRetries(3).withDelay(Duration.ofHours(1)).build(), budget);
    CompletableFuture<String> call = alwaysFailing(policy);
    awaitAsks(budget, 1);
    AtomicReference<String> completedOn = new AtomicReference<>();
    CompletableFuture<String> observed = call.whenComplete((v, e) -> completedOn.set(Thread.currentThread().getName()));

    Thread redisIo = new Thread(() -> budget.answer(0, BudgetDecision.DENIED_EXHAUSTED), "redis-io");
    redisIo.start(); // answered on a thread of its own, as Redis's I/O thread would
    redisIo.join();
    ExecutionException e = assertThrows(ExecutionException.class, () -> observed.get(10, TimeUnit.SECONDS));
    RetryBudgetExhaustedException refused = assertInstanceOf(RetryBudgetExhaustedException.class, e.getCause());
    assertEquals(Reason.DENIED_EXHAUSTED, refused.decision().reason());
    assertInstanceOf(IOException.class, refused.getCause());
    assertEquals("failsafe-scheduler", completedOn.get());
    assertEquals(1, attempts.get());
  }

  @Test
  void aFailedAnswerIsARefusal() throws Exception {
    ScriptedBudget budget = ScriptedBudget.pending();
    RetryPolicy<String> policy = BudgetedRetryPolicy.of(RetryPolicy.<String>builder().withMaxRetries(3).build(), budget);
    CompletableFuture<String> call = alwaysFailing(policy);
    awaitAsks(budget, 1);
    budget.fail(0, new IllegalStateException("store broke"));
    ExecutionException e = assertThrows(ExecutionException.class, () -> call.get(10, TimeUnit.SECONDS));
    assertEquals(Reason.DENIED_FALLBACK, assertInstanceOf(RetryBudgetExhaustedException.class, e.getCause()).decision().reason());
  }

  @Test
  void aCancelledExecutionRetriesNoMoreWhateverTheAnswer() throws Exception {
    ScriptedBudget budget = ScriptedBudget.pending();
    RetryPolicy<String> policy = BudgetedRetryPolicy.of(RetryPolicy.<String>builder().withMaxRetries(3).build(), budget);
    CompletableFuture<String> call = alwaysFailing(policy);
    awaitAsks(budget, 1);
    assertTrue(call.cancel(true));
    budget.answer(0, BudgetDecision.GRANTED);
    drain();
    assertEquals(1, attempts.get());
    assertEquals(1, budget.asyncAsks());
  }

  @Test
  void getStageAsyncPaysForEachRetry() throws Exception {
    ScriptedBudget budget = ScriptedBudget.answering(BudgetDecision.GRANTED, BudgetDecision.GRANTED);
    RetryPolicy<String> policy = BudgetedRetryPolicy.of(RetryPolicy.<String>builder().withMaxRetries(4).build(), budget);
    CompletableFuture<String> call = Failsafe.with(policy).with(scheduler).getStageAsync(() -> attempts.incrementAndGet() <= 2
        ? CompletableFuture.failedFuture(new IOException("down"))
        : CompletableFuture.completedFuture("ok"));
    assertEquals("ok", call.get(10, TimeUnit.SECONDS));
    assertEquals(3, attempts.get());
    assertEquals(2, budget.asyncAsks());
    assertEquals(0, budget.blockingAsks.get(), "the asynchronous path never blocks on the budget");
  }

  @Test
  void runAsyncExecutionWithRecordedOutcomesToo() throws Exception {
    ScriptedBudget budget = ScriptedBudget.answering(BudgetDecision.GRANTED, BudgetDecision.DENIED_EXHAUSTED);
    RetryPolicy<Object> policy = BudgetedRetryPolicy.of(RetryPolicy.builder().withMaxRetries(5).build(), budget);
    CompletableFuture<Void> call = Failsafe.with(policy).with(scheduler).runAsyncExecution(execution -> {
      attempts.incrementAndGet();
      scheduler.execute(() -> execution.recordException(new IOException("down")));
    });
    ExecutionException e = assertThrows(ExecutionException.class, () -> call.get(10, TimeUnit.SECONDS));
    assertInstanceOf(RetryBudgetExhaustedException.class, e.getCause());
    assertEquals(2, attempts.get());
    assertEquals(2, budget.asyncAsks());
    assertEquals(1, budget.firstAttempts.get());
  }
}
