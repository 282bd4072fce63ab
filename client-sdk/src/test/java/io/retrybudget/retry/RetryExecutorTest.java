package io.retrybudget.retry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
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
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class RetryExecutorTest {
  private static final long MS = 1_000_000L;
  private final FakeTime time = new FakeTime();

  private RetryExecutor.Builder executor(RetryPolicy policy) {
    return RetryExecutor.builder(policy).nanoClock(time::nanos).scheduler(time).sleeper(time).random(() -> 0.5);
  }

  private static RetryPolicy.Builder policy() {
    return RetryPolicy.builder().maxAttempts(3).backoff(Duration.ofMillis(100), Duration.ofSeconds(10));
  }

  /** An attempt source that fails with the given failures, then succeeds. */
  private static java.util.concurrent.Callable<String> failing(AtomicInteger calls, Exception... failures) {
    return () -> {
      int n = calls.getAndIncrement();
      if (n < failures.length) {
        throw failures[n];
      }
      return "ok after " + n;
    };
  }

  @Test
  void syncRetriesTransientFailuresWithFullJitterDelays() throws Exception {
    AtomicInteger calls = new AtomicInteger();
    String result = executor(policy().build()).build().call(failing(calls, new IOException("a"), new IOException("b")));
    assertEquals("ok after 2", result);
    assertEquals(List.of(50 * MS, 100 * MS), time.sleeps, "U(0, 100ms) and U(0, 200ms) at 0.5");
  }

  @Test
  void syncStopsAtMaxAttemptsWithTheLastFailure() {
    AtomicInteger calls = new AtomicInteger();
    IOException last = new IOException("third");
    IOException thrown = assertThrows(IOException.class, () -> executor(policy().build()).build()
        .call(failing(calls, new IOException("1"), new IOException("2"), last)));
    assertSame(last, thrown);
    assertEquals(3, calls.get());
  }

  @Test
  void neverRetriesWhatIsNotRetryable() {
    AtomicInteger calls = new AtomicInteger();
    assertThrows(IllegalStateException.class, () -> executor(policy().build()).build()
        .call(failing(calls, new IllegalStateException("bad request"))));
    assertEquals(1, calls.get());
    assertEquals(List.of(), time.sleeps);
  }

  @Test
  void retriesResultsThePolicyNamesAndReturnsTheLastOne() throws Exception {
    AtomicInteger calls = new AtomicInteger();
    RetryPolicy p = policy().<Integer>retryOnResult(status -> status == 503).build();
    Integer status = executor(p).build().call(() -> calls.incrementAndGet() < 10 ? 503 : 200);
    assertEquals(503, status);
    assertEquals(3, calls.get());
  }

  @Test
  void theDeadlineIsNeverSleptPast() {
    AtomicInteger calls = new AtomicInteger();
    RetryPolicy p = policy().maxAttempts(10).deadline(Duration.ofMillis(120)).build();
    RetryExecutor e = executor(p).random(() -> 0.99).build();
    assertThrows(IOException.class, () -> e.call(() -> {
      calls.incrementAndGet();
      time.advance(10 * MS); // each attempt takes 10 ms
      throw new IOException("down");
    }));
    // 10 ms, sleep 99 ms, 10 ms (119 ms): the next sleep (198 ms) would pass the deadline
    assertEquals(2, calls.get());
    assertEquals(List.of(99 * MS), time.sleeps);
  }

  @Test
  void aBudgetDenialEndsTheCallAtOnceCarryingTheLastFailure() {
    LocalRetryBudget empty = new LocalRetryBudget(BudgetConfig.builder("deps").minRetriesPerSecond(0).build(), () -> 0L);
    AtomicInteger calls = new AtomicInteger();
    IOException failure = new IOException("down");
    RetryBudgetExhaustedException e = assertThrows(RetryBudgetExhaustedException.class,
        () -> executor(policy().build()).budget(empty).build().call(failing(calls, failure)));
    assertSame(failure, e.getCause());
    assertEquals(BudgetDecision.Reason.DENIED_EXHAUSTED, e.decision().reason());
    assertEquals(1, calls.get());
    assertEquals(List.of(), time.sleeps, "denied: no sleep first");
    assertEquals(1, empty.windowCounts()[0], "the first attempt was counted");
  }

  @Test
  void theBudgetExhaustedErrorSaysWhenTheNextPermitIsExpected() {
    java.util.concurrent.atomic.AtomicLong millis = new java.util.concurrent.atomic.AtomicLong(5_000);
    // the least ratio: the call's one first attempt deposits a millionth of a permit, the floor the rest
    LocalRetryBudget floor = new LocalRetryBudget(BudgetConfig.builder("deps").ratio(0.000001).minRetriesPerSecond(2).build(),
        millis::get);
    assertTrue(floor.acquireBlocking().granted(), "the one permit half a second of 2 a second holds");
    millis.addAndGet(100);
    RetryBudgetExhaustedException e = assertThrows(RetryBudgetExhaustedException.class,
        () -> executor(policy().build()).budget(floor).build().call(failing(new AtomicInteger(), new IOException("down"))));
    assertEquals(java.util.Optional.of(java.time.Duration.ofMillis(400)), e.nextPermitIn(), "2 a second, 100 ms refilled");
    assertEquals("retry budget 'deps' refused a retry (exhausted); next permit expected in 400 ms", e.getMessage());

    LocalRetryBudget none = new LocalRetryBudget(BudgetConfig.builder("idle").minRetriesPerSecond(0).build(), millis::get);
    assertEquals(java.util.Optional.empty(), none.acquireBlocking().nextPermitIn());
    RetryBudgetExhaustedException unknown = new RetryBudgetExhaustedException("idle", none.acquireBlocking(), null, null);
    assertEquals(java.util.Optional.empty(), unknown.nextPermitIn(), "no traffic, no floor: no next permit to expect");
    assertEquals("retry budget 'idle' refused a retry (exhausted)", unknown.getMessage());
  }

  @Test
  void aGrantedBudgetLetsTheRetryRun() throws Exception {
    LocalRetryBudget budget = new LocalRetryBudget(BudgetConfig.builder("deps").minRetriesPerSecond(1).build(), () -> 0L);
    AtomicInteger calls = new AtomicInteger();
    assertEquals("ok after 1", executor(policy().build()).budget(budget).build().call(failing(calls, new IOException())));
    assertEquals(1, budget.windowCounts()[1]);
  }

  @Test
  void serverDelaysAreWaitedAtLeast() throws Exception {
    AtomicInteger calls = new AtomicInteger();
    RetryPolicy p = policy().serverDelay((r, f) -> f != null ? Duration.ofMillis(700) : null).build();
    executor(p).build().call(failing(calls, new IOException("503 Retry-After")));
    assertEquals(List.of(700 * MS), time.sleeps);
  }

  @Test
  void aServerDelayBeyondTheCapOrDeadlineEndsTheCallNow() {
    RetryPolicy beyondCap = policy().serverDelay((r, f) -> Duration.ofSeconds(11)).build();
    assertThrows(IOException.class, () -> executor(beyondCap).build().call(failing(new AtomicInteger(), new IOException())));
    RetryPolicy beyondDeadline = policy().deadline(Duration.ofSeconds(1)).serverDelay((r, f) -> Duration.ofSeconds(2)).build();
    assertThrows(IOException.class, () -> executor(beyondDeadline).build().call(failing(new AtomicInteger(), new IOException())));
    RetryPolicy saysNo = policy().serverDelay((r, f) -> Duration.ofMillis(-1)).build();
    AtomicInteger calls = new AtomicInteger();
    assertThrows(IOException.class, () -> executor(saysNo).build().call(failing(calls, new IOException())));
    assertEquals(1, calls.get());
    assertEquals(List.of(), time.sleeps);
  }

  @Test
  void asyncRetriesOnTheSchedulerAndLeavesNoTimerBehind() throws Exception {
    AtomicInteger calls = new AtomicInteger();
    CompletableFuture<String> f = executor(policy().build()).build().callAsync(() -> calls.incrementAndGet() < 3
        ? CompletableFuture.failedFuture(new IOException("down")) : CompletableFuture.completedFuture("ok"));
    assertEquals(1, calls.get());
    time.advance(50 * MS);
    assertEquals(2, calls.get());
    time.advance(100 * MS);
    assertEquals("ok", f.get());
    assertEquals(0, time.pendingTasks());
  }

  @Test
  void asyncAttemptTimeoutCancelsTheAttemptInFlight() throws Exception {
    List<CompletableFuture<String>> attempts = new ArrayList<>();
    RetryPolicy p = policy().attemptTimeout(Duration.ofMillis(30)).build();
    CompletableFuture<String> f = executor(p).build().callAsync(() -> {
      CompletableFuture<String> never = new CompletableFuture<>();
      attempts.add(never);
      return never;
    });
    time.advance(30 * MS);
    assertTrue(attempts.get(0).isCancelled(), "the timed-out attempt is cancelled");
    time.advance(50 * MS + 30 * MS);
    time.advance(100 * MS + 30 * MS);
    ExecutionException e = assertThrows(ExecutionException.class, f::get);
    assertTrue(e.getCause() instanceof AttemptTimeoutException, String.valueOf(e.getCause()));
    assertEquals(3, attempts.size());
    assertTrue(attempts.stream().allMatch(CompletableFuture::isCancelled));
    assertEquals(0, time.pendingTasks());
  }

  @Test
  void cancellingAnAsyncCallStopsTheSleepAndTheAttempt() {
    List<CompletableFuture<String>> attempts = new ArrayList<>();
    AtomicInteger calls = new AtomicInteger();
    CompletableFuture<String> f = executor(policy().build()).build().callAsync(() -> {
      calls.incrementAndGet();
      CompletableFuture<String> a = new CompletableFuture<>();
      attempts.add(a);
      return a;
    });
    attempts.get(0).completeExceptionally(new IOException("down")); // now sleeping before retry 2
    assertEquals(1, time.pendingTasks());
    f.cancel(true);
    assertEquals(0, time.pendingTasks(), "the sleep was called off");
    time.advance(Duration.ofSeconds(60).toNanos());
    assertEquals(1, calls.get(), "no attempt after cancel");

    CompletableFuture<String> g = executor(policy().build()).build().callAsync(() -> {
      CompletableFuture<String> a = new CompletableFuture<>();
      attempts.add(a);
      return a;
    });
    g.cancel(true);
    assertTrue(attempts.get(1).isCancelled(), "the attempt in flight is cancelled");
  }

  @Test
  void asyncDeadlineCutsTheAttemptTimeoutToTheTimeLeft() {
    RetryPolicy p = policy().maxAttempts(5).deadline(Duration.ofMillis(100)).attemptTimeout(Duration.ofMillis(80)).build();
    List<CompletableFuture<String>> attempts = new ArrayList<>();
    CompletableFuture<String> f = executor(p).random(() -> 0.0).build().callAsync(() -> {
      CompletableFuture<String> a = new CompletableFuture<>();
      attempts.add(a);
      return a;
    });
    time.advance(80 * MS); // first attempt times out; retry at once (random 0) with 20 ms left
    assertEquals(2, attempts.size());
    time.advance(20 * MS);
    assertTrue(f.isDone(), "the whole call ends at its deadline");
    assertEquals(2, attempts.size());
    assertTrue(attempts.get(1).isCancelled());
    assertEquals(0, time.pendingTasks());
  }

  @Test
  void asyncBudgetDenialSchedulesNothing() {
    LocalRetryBudget empty = new LocalRetryBudget(BudgetConfig.builder("deps").minRetriesPerSecond(0).build(), () -> 0L);
    CompletableFuture<String> f = executor(policy().build()).budget(empty).build()
        .callAsync(() -> CompletableFuture.failedFuture(new IOException("down")));
    ExecutionException e = assertThrows(ExecutionException.class, f::get);
    assertTrue(e.getCause() instanceof RetryBudgetExhaustedException);
    assertTrue(e.getCause().getCause() instanceof IOException);
    assertEquals(0, time.pendingTasks());
  }

  @Test
  void aNonIdempotentCallWithoutAKeyIsNotRetried() {
    RetryPolicy p = policy().idempotent(false).build();
    AtomicInteger calls = new AtomicInteger();
    assertThrows(IOException.class, () -> executor(p).build().call(failing(calls, new IOException("lost reply"))));
    assertEquals(1, calls.get());
  }

  @Test
  void aKeyedCallKeepsOneKeyOnEveryAttempt() throws Exception {
    RetryPolicy p = policy().idempotent(false).build();
    List<String> keys = new ArrayList<>();
    List<Integer> numbers = new ArrayList<>();
    String result = executor(p).build().call(ctx -> {
      keys.add(ctx.idempotencyKey());
      numbers.add(ctx.attempt());
      if (numbers.size() < 3) {
        throw new IOException("lost reply");
      }
      return "charged once";
    });
    assertEquals("charged once", result);
    assertEquals(List.of(1, 2, 3), numbers);
    assertEquals(3, keys.size());
    assertTrue(keys.stream().allMatch(keys.get(0)::equals), keys.toString());

    List<String> own = new ArrayList<>();
    executor(p).build().call("order-42", ctx -> {
      own.add(ctx.idempotencyKey());
      if (own.size() < 2) {
        throw new IOException("lost reply");
      }
      return "ok";
    });
    assertEquals(List.of("order-42", "order-42"), own);
  }

  @Test
  void theKeyIsMadeOnlyWhenAsked() throws Exception {
    AttemptContext[] seen = new AttemptContext[1];
    executor(policy().build()).build().call(ctx -> {
      seen[0] = ctx;
      return "fine";
    });
    assertTrue(!seen[0].hasIdempotencyKey());
  }

  @Test
  void asyncAttemptsKnowTheirAttemptTimeoutCutToTheDeadline() {
    // attempt timeout 300 ms, deadline 1 s, attempts that hang; backoff 50 then 100 ms (random 0.5):
    // attempt 1 at 0 (300 left), 2 at 350 (300), 3 at 750 (the deadline leaves 250)
    RetryPolicy p = policy().attemptTimeout(Duration.ofMillis(300)).deadline(Duration.ofSeconds(1)).build();
    List<Long> left = new ArrayList<>();
    CompletableFuture<String> f = executor(p).build().callAsync(ctx -> {
      assertTrue(ctx.hasDeadline());
      left.add(ctx.remainingMillis());
      return new CompletableFuture<String>();
    });
    time.advance(Duration.ofSeconds(2).toNanos());
    assertTrue(f.isCompletedExceptionally());
    assertEquals(List.of(300L, 300L, 250L), left);
  }

  @Test
  void syncAttemptsKnowTheirAttemptTimeoutCutToTheDeadline() throws Exception {
    RetryPolicy p = policy().attemptTimeout(Duration.ofMillis(300)).deadline(Duration.ofSeconds(1)).build();
    List<Long> left = new ArrayList<>();
    assertThrows(IOException.class, () -> executor(p).build().call(ctx -> {
      left.add(ctx.remainingMillis());
      time.advance(Duration.ofMillis(300).toNanos()); // the attempt takes its whole timeout
      left.add(ctx.remainingMillis());
      throw new IOException("slow and failed");
    }));
    assertEquals(List.of(300L, 0L, 300L, 0L, 250L, 0L), left);
  }

  @Test
  void withoutDeadlineOrAttemptTimeoutAnAttemptIsUnbounded() throws Exception {
    List<Boolean> bounded = new ArrayList<>();
    executor(policy().build()).build().call(ctx -> {
      bounded.add(ctx.hasDeadline());
      assertEquals(Long.MAX_VALUE, ctx.remainingMillis());
      return "ok";
    });
    executor(policy().build()).build().callAsync(ctx -> {
      bounded.add(ctx.hasDeadline());
      return CompletableFuture.completedFuture("ok");
    }).join();
    assertEquals(List.of(false, false), bounded);
  }

  @Test
  void aPerCallDeadlineBoundsTheCallWhenEarlierThanThePolicys() {
    // attempts fail at once; backoff 50 then 100 ms: attempts at 0, 50, 150
    RetryPolicy p = policy().deadline(Duration.ofSeconds(10)).build();
    List<Long> left = new ArrayList<>();
    CompletableFuture<String> f = executor(p).build().callAsync(null, Duration.ofMillis(400), ctx -> {
      left.add(ctx.remainingMillis());
      return CompletableFuture.failedFuture(new IOException("down"));
    });
    time.advance(Duration.ofSeconds(1).toNanos());
    assertTrue(f.isCompletedExceptionally());
    assertEquals(List.of(400L, 350L, 250L), left);

    left.clear(); // the policy's own deadline (200 ms) is earlier than the call's: it binds
    RetryPolicy tight = policy().deadline(Duration.ofMillis(200)).build();
    executor(tight).build().callAsync(null, Duration.ofMillis(400), ctx -> {
      left.add(ctx.remainingMillis());
      return CompletableFuture.failedFuture(new IOException("down"));
    });
    time.advance(Duration.ofSeconds(1).toNanos());
    assertEquals(List.of(200L, 150L, 50L), left);
  }

  @Test
  void aPerCallDeadlineCannotStartAnAttemptItLeavesNoTimeFor() throws Exception {
    // 120 ms: attempts at 0 and 50; the next backoff (100 ms) would end past it, so no third attempt
    RetryPolicy p = policy().build();
    AtomicInteger calls = new AtomicInteger();
    List<RetryOutcome> outcomes = new ArrayList<>();
    RetryExecutor x = executor(p).listener(new RetryListener() {
      @Override
      public void onOutcome(RetryOutcome outcome, int attempts) {
        outcomes.add(outcome);
      }
    }).build();
    CompletableFuture<String> f = x.callAsync(null, Duration.ofMillis(120), ctx -> {
      calls.incrementAndGet();
      return CompletableFuture.failedFuture(new IOException("down"));
    });
    time.advance(Duration.ofSeconds(1).toNanos());
    assertTrue(f.isCompletedExceptionally());
    assertEquals(2, calls.get());
    calls.set(0);
    ExecutionException spent = assertThrows(ExecutionException.class, () -> x.callAsync(null, Duration.ZERO, ctx -> {
      calls.incrementAndGet();
      return CompletableFuture.completedFuture("never");
    }).get());
    assertInstanceOf(AttemptTimeoutException.class, spent.getCause());
    assertThrows(AttemptTimeoutException.class, () -> x.call(null, Duration.ofMillis(-5), ctx -> {
      calls.incrementAndGet();
      return "never";
    }));
    assertEquals(0, calls.get(), "a spent deadline sends nothing");
    assertEquals(List.of(RetryOutcome.DEADLINE, RetryOutcome.DEADLINE, RetryOutcome.DEADLINE), outcomes);
  }

  @Test
  void asyncAttemptsSeeTheirNumberAndOneKey() throws Exception {
    RetryPolicy p = policy().idempotent(false).build();
    List<String> seen = new ArrayList<>();
    CompletableFuture<String> f = executor(p).build().callAsync(ctx -> {
      seen.add(ctx.attempt() + ":" + ctx.idempotencyKey());
      return ctx.attempt() < 2 ? CompletableFuture.failedFuture(new IOException()) : CompletableFuture.completedFuture("ok");
    });
    time.advance(Duration.ofSeconds(1).toNanos());
    assertEquals("ok", f.get());
    assertEquals(2, seen.size());
    assertEquals(seen.get(0).substring(2), seen.get(1).substring(2));
  }

  @Test
  void aThrowingPredicateEndsAnAsyncCallInsteadOfLeavingItPending() {
    RetryPolicy p = policy().<String>retryOnResult(r -> {
      throw new NullPointerException("bug in a predicate");
    }).build();
    CompletableFuture<String> f = executor(p).build().callAsync(() -> CompletableFuture.completedFuture("x"));
    ExecutionException e = assertThrows(ExecutionException.class, f::get);
    assertTrue(e.getCause() instanceof NullPointerException);
  }

  @Test
  void aServerDelayTooLargeForNanosecondsEndsTheCall() throws Exception {
    RetryPolicy p = policy().serverDelay((r, f) -> Duration.ofSeconds(10_000_000_000L)).build();
    CompletableFuture<String> f = executor(p).build().callAsync(() -> CompletableFuture.failedFuture(new IOException("busy")));
    ExecutionException e = assertThrows(ExecutionException.class, f::get);
    assertTrue(e.getCause() instanceof IOException);
  }

  @Test
  void closingTheExecutorEndsTheCallsStillRunning() {
    RetryExecutor e = executor(policy().build()).build();
    CompletableFuture<String> never = new CompletableFuture<>();
    CompletableFuture<String> f = e.callAsync(() -> never);
    e.close();
    ExecutionException ex = assertThrows(ExecutionException.class, f::get);
    assertTrue(ex.getCause() instanceof IllegalStateException);
    assertTrue(never.isCancelled());
    assertTrue(e.callAsync(() -> CompletableFuture.completedFuture("late")).isCompletedExceptionally());
  }

  @Test
  void aBudgetAnsweringOnItsOwnThreadHandsTheRestOfTheCallToTheScheduler() throws Exception {
    // as Redis answers on Lettuce's I/O thread: nothing of the call may run there
    java.util.List<CompletableFuture<BudgetDecision>> answers = new java.util.concurrent.CopyOnWriteArrayList<>();
    io.retrybudget.budget.RetryBudget remote = new io.retrybudget.budget.RetryBudget() {
      public String name() { return "remote"; }
      public void recordFirstAttempt() { }
      public BudgetDecision acquireBlocking() { throw new AssertionError("the async path asks acquire()"); }
      public java.util.concurrent.CompletionStage<BudgetDecision> acquire() {
        CompletableFuture<BudgetDecision> answer = new CompletableFuture<>();
        answers.add(answer);
        return answer;
      }
      public void close() { }
    };
    AtomicInteger calls = new AtomicInteger();
    CompletableFuture<String> f = executor(policy().build()).budget(remote).build().callAsync(() -> {
      calls.incrementAndGet();
      return CompletableFuture.failedFuture(new IOException("down"));
    });
    assertEquals(1, answers.size(), "asked the budget after the first failure");
    answerFromAnotherThread(answers.get(0), BudgetDecision.GRANTED);
    assertEquals(1, time.pendingTasks(), "the grant is handed to the scheduler, not acted on by the budget's thread");
    time.advance(0);
    time.advance(50 * MS); // the backoff
    assertEquals(2, calls.get());
    assertEquals(2, answers.size());
    answerFromAnotherThread(answers.get(1), BudgetDecision.DENIED_EXHAUSTED);
    assertFalse(f.isDone(), "the refusal does not complete the call on the budget's thread");
    time.advance(0);
    ExecutionException e = assertThrows(ExecutionException.class, f::get);
    assertTrue(e.getCause() instanceof RetryBudgetExhaustedException, String.valueOf(e.getCause()));
    assertEquals(0, time.pendingTasks());
  }

  private static void answerFromAnotherThread(CompletableFuture<BudgetDecision> answer, BudgetDecision d)
      throws InterruptedException {
    Thread t = new Thread(() -> answer.complete(d), "budget-io");
    t.start();
    t.join();
  }

  @Test
  void aSlowBudgetCallCannotPushTheSleepPastTheDeadline() {
    // a budget whose answer takes 80 ms of the call's 120 ms
    io.retrybudget.budget.RetryBudget slow = new io.retrybudget.budget.RetryBudget() {
      public String name() { return "slow"; }
      public void recordFirstAttempt() { }
      public BudgetDecision acquireBlocking() {
        time.advance(80 * MS);
        return BudgetDecision.GRANTED;
      }
      public java.util.concurrent.CompletionStage<BudgetDecision> acquire() {
        return CompletableFuture.completedFuture(acquireBlocking());
      }
      public void close() { }
    };
    RetryPolicy p = policy().deadline(Duration.ofMillis(120)).build();
    AtomicInteger calls = new AtomicInteger();
    assertThrows(IOException.class, () -> executor(p).budget(slow).build().call(failing(calls, new IOException("down"))));
    assertEquals(1, calls.get());
    assertEquals(List.of(), time.sleeps, "50 ms of sleep no longer fit in the 40 ms left");
  }

  @Test
  void policyValidationNamesTheField() {
    assertMessage("maxAttempts", () -> RetryPolicy.builder().maxAttempts(0));
    assertMessage("maxAttempts", () -> RetryPolicy.builder().maxAttempts(101));
    assertMessage("deadline", () -> RetryPolicy.builder().deadline(Duration.ZERO));
    assertMessage("attemptTimeout", () -> RetryPolicy.builder().attemptTimeout(Duration.ofMillis(-1)));
    assertMessage("base", () -> RetryPolicy.builder().backoff(Duration.ZERO, Duration.ofSeconds(1)));
    assertMessage("cap", () -> RetryPolicy.builder().backoff(Duration.ofSeconds(2), Duration.ofSeconds(1)));
    assertMessage("attemptTimeout", () -> RetryPolicy.builder().deadline(Duration.ofSeconds(1))
        .attemptTimeout(Duration.ofSeconds(2)).build());
  }

  private static void assertMessage(String field, org.junit.jupiter.api.function.Executable call) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call);
    assertTrue(e.getMessage().startsWith(field + " "), e.getMessage());
  }
}
