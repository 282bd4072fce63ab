package io.retrybudget.retry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.budget.LocalRetryBudget;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.Test;

/** Hedged requests on a fake clock: no test waits for real time. */
class HedgingTest {
  private static final long MS = 1_000_000L;
  private final FakeTime time = new FakeTime();
  private final List<CompletableFuture<String>> attempts = new ArrayList<>();
  private final List<AttemptContext> contexts = new ArrayList<>();
  private final List<String> events = new ArrayList<>();

  private final RetryListener recorder = new RetryListener() {
    @Override
    public void onHedge(int attempt) {
      events.add("hedge " + attempt);
    }

    @Override
    public void onHedgeWon(int attempt) {
      events.add("won " + attempt);
    }

    @Override
    public void onHedgeDenied(BudgetDecision decision) {
      events.add("denied " + decision.reason().tag());
    }
  };

  private RetryExecutor.Builder executor(RetryPolicy policy, HedgePolicy hedging) {
    return RetryExecutor.builder(policy).hedging(hedging).nanoClock(time::nanos).scheduler(time).sleeper(time)
        .random(() -> 0.5).listener(recorder);
  }

  private static RetryPolicy policy(int maxAttempts) {
    return RetryPolicy.builder().maxAttempts(maxAttempts).backoff(Duration.ofMillis(100), Duration.ofSeconds(1)).build();
  }

  /** Every attempt returns a future the test completes by hand. */
  private CompletableFuture<String> start(RetryExecutor e) {
    return e.callAsync(ctx -> {
      CompletableFuture<String> f = new CompletableFuture<>();
      attempts.add(f);
      contexts.add(ctx);
      return f;
    });
  }

  @Test
  void aSlowPrimaryIsHedgedAndTheFirstAnswerWins() throws Exception {
    CompletableFuture<String> call = start(executor(policy(3), HedgePolicy.fixedDelay(Duration.ofMillis(20)).build()).build());
    time.advance(19 * MS);
    assertEquals(1, attempts.size(), "no hedge before its delay");
    time.advance(1 * MS);
    assertEquals(2, attempts.size(), "hedged after 20 ms");
    AttemptContext hedge = contexts.get(1);
    assertTrue(hedge.isHedge());
    assertEquals(2, hedge.attempt());
    assertEquals(1, hedge.replica(), "a different replica than the primary's");
    attempts.get(1).complete("from the hedge");
    assertEquals("from the hedge", call.get());
    assertTrue(attempts.get(0).isCancelled(), "the losing attempt is cancelled");
    assertEquals(List.of("hedge 2", "won 2"), events);
    assertEquals(0, time.pendingTasks());
  }

  @Test
  void everyHedgeCarriesTheCallsIdempotencyKey() {
    RetryPolicy payment = policy(3).toBuilder().idempotent(false).build();
    executor(payment, HedgePolicy.fixedDelay(Duration.ofMillis(20)).build()).build().callAsync("order-9", ctx -> {
      contexts.add(ctx);
      return new CompletableFuture<String>();
    });
    time.advance(20 * MS);
    assertEquals(2, contexts.size());
    assertEquals("order-9", contexts.get(0).idempotencyKey());
    assertEquals("order-9", contexts.get(1).idempotencyKey());
  }

  @Test
  void aNonIdempotentCallWithoutAKeyIsNotHedged() {
    RetryPolicy payment = policy(3).toBuilder().idempotent(false).build();
    start(executor(payment, HedgePolicy.fixedDelay(Duration.ofMillis(20)).build()).build());
    time.advance(100 * MS);
    assertEquals(1, attempts.size());
  }

  @Test
  void aBudgetDenialSuppressesTheHedgeAndThePrimaryGoesOn() throws Exception {
    LocalRetryBudget spent = new LocalRetryBudget(BudgetConfig.builder("b").minRetriesPerSecond(0).build(), () -> 0L);
    CompletableFuture<String> call = start(executor(policy(3), HedgePolicy.fixedDelay(Duration.ofMillis(20)).build())
        .budget(spent).build());
    time.advance(50 * MS);
    assertEquals(1, attempts.size(), "no hedge without a permit");
    assertEquals(List.of("denied exhausted"), events);
    assertFalse(attempts.get(0).isDone());
    attempts.get(0).complete("primary");
    assertEquals("primary", call.get());
  }

  @Test
  void hedgesDrawOnTheSameBudgetAsRetries() throws Exception {
    LocalRetryBudget budget = new LocalRetryBudget(BudgetConfig.builder("b").minRetriesPerSecond(0).ratio(1.0).build(), () -> 0L);
    CompletableFuture<String> call = start(executor(policy(3), HedgePolicy.fixedDelay(Duration.ofMillis(20)).build())
        .budget(budget).build());
    time.advance(20 * MS);
    assertEquals(2, attempts.size());
    assertEquals(1, budget.windowCounts()[1], "the hedge took a permit");
    attempts.get(0).complete("primary");
    assertEquals("primary", call.get());
    assertTrue(attempts.get(1).isCancelled());
  }

  @Test
  void theDeadlineBoundsAHedgedCall() {
    RetryPolicy p = policy(5).toBuilder().deadline(Duration.ofMillis(100)).build();
    CompletableFuture<String> call = start(executor(p, HedgePolicy.fixedDelay(Duration.ofMillis(30)).build()).build());
    time.advance(30 * MS);
    assertEquals(2, attempts.size());
    time.advance(70 * MS);
    assertTrue(call.isDone(), "ended at the deadline");
    ExecutionException e = assertThrows(ExecutionException.class, call::get);
    assertTrue(e.getCause() instanceof AttemptTimeoutException, String.valueOf(e.getCause()));
    assertTrue(attempts.stream().allMatch(CompletableFuture::isCancelled));
    assertEquals(0, time.pendingTasks(), "no timer left behind");
  }

  @Test
  void aNonFatalFailureWaitsForTheOtherAttempts() throws Exception {
    CompletableFuture<String> call = start(executor(policy(3), HedgePolicy.fixedDelay(Duration.ofMillis(20)).build()).build());
    time.advance(20 * MS);
    attempts.get(0).completeExceptionally(new IOException("primary lost"));
    assertFalse(call.isDone(), "the hedge is still running");
    attempts.get(1).complete("hedge");
    assertEquals("hedge", call.get());
  }

  @Test
  void aFatalFailureEndsTheCallAndCancelsTheRest() {
    CompletableFuture<String> call = start(executor(policy(3), HedgePolicy.fixedDelay(Duration.ofMillis(20)).build()).build());
    time.advance(20 * MS);
    attempts.get(1).completeExceptionally(new IllegalStateException("400 bad request"));
    ExecutionException e = assertThrows(ExecutionException.class, call::get);
    assertTrue(e.getCause() instanceof IllegalStateException);
    assertTrue(attempts.get(0).isCancelled());
  }

  @Test
  void aRoundThatFailsIsRetriedWithBackoffWithinMaxAttempts() throws Exception {
    CompletableFuture<String> call = start(executor(policy(3), HedgePolicy.fixedDelay(Duration.ofMillis(20)).build()).build());
    time.advance(20 * MS);
    attempts.get(0).completeExceptionally(new IOException("a"));
    attempts.get(1).completeExceptionally(new IOException("b"));
    assertEquals(2, attempts.size());
    time.advance(99 * MS);
    assertEquals(2, attempts.size(), "backoff: U(0, 200 ms) at 0.5 = 100 ms");
    time.advance(1 * MS);
    assertEquals(3, attempts.size(), "the retry round starts");
    time.advance(50 * MS);
    assertEquals(3, attempts.size(), "max attempts 3: no hedge left for this round");
    attempts.get(2).complete("third");
    assertEquals("third", call.get());
  }

  @Test
  void aPrimaryThatFailsBeforeTheHedgeDelayIsRetriedNotHedged() throws Exception {
    CompletableFuture<String> call = start(executor(policy(3), HedgePolicy.fixedDelay(Duration.ofMillis(200)).build()).build());
    attempts.get(0).completeExceptionally(new IOException("fast failure"));
    time.advance(50 * MS); // backoff U(0,100ms) at 0.5
    assertEquals(2, attempts.size());
    assertFalse(contexts.get(1).isHedge());
    attempts.get(1).complete("retry");
    assertEquals("retry", call.get());
    assertEquals(List.of(), events);
  }

  @Test
  void cancellingAHedgedCallCancelsEveryAttempt() {
    CompletableFuture<String> call = start(executor(policy(3), HedgePolicy.fixedDelay(Duration.ofMillis(20)).build()).build());
    time.advance(20 * MS);
    call.cancel(true);
    assertTrue(attempts.stream().allMatch(CompletableFuture::isCancelled));
    assertEquals(0, time.pendingTasks());
  }

  @Test
  void theAttemptsAWinnerBeatTeachTheAdaptiveDelayToo() throws Exception {
    HedgePolicy adaptive = HedgePolicy.adaptive(0.9, Duration.ofMillis(20)).minSamples(1).nanoClock(time::nanos).build();
    CompletableFuture<String> call = start(executor(policy(2), adaptive).build());
    time.advance(20 * MS);
    assertEquals(2, attempts.size());
    time.advance(2 * MS);
    attempts.get(1).complete("hedge"); // the hedge answered after 2 ms; the primary had run 22 ms
    assertEquals("hedge", call.get());
    time.advance(50 * MS);
    long median = adaptive.delayNanos();
    assertTrue(median >= 20 * MS, "the beaten primary's 22 ms counts, not only the winner's 2 ms: " + median);
  }

  @Test
  void adaptiveDelayFollowsThePercentileOfRecentLatency() {
    HedgePolicy adaptive = HedgePolicy.adaptive(0.95, Duration.ofMillis(50)).minSamples(100).nanoClock(time::nanos).build();
    assertEquals(50 * MS, adaptive.delayNanos(), "initial delay until enough is known");
    for (int i = 1; i <= 1000; i++) {
      adaptive.recordLatency(i * MS / 100); // 0.01 ms .. 10 ms, uniform
    }
    assertEquals(50 * MS, adaptive.delayNanos(), "recomputed at most every 50 ms");
    time.advance(50 * MS);
    long p95 = adaptive.delayNanos();
    assertTrue(p95 >= 9_500_000 && p95 <= 9_500_000 * 1.13, "p95 " + p95);
  }
}
