package io.retrybudget.retry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.budget.LocalRetryBudget;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.function.Consumer;
import java.util.function.IntFunction;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Every functional scenario through both {@code call} and {@code callAsync}, with one set of
 * assertions (as Failsafe's {@code Testing} runs sync, async and stage executions alike).
 */
class ExecutionKitTest {
  private static final long MS = 1_000_000L;

  enum Path { SYNC, ASYNC }

  /** One attempt's answer: a value or a failure, after {@code tookNanos} of fake time. */
  record Answer(Object value, Exception failure, long tookNanos) {
    static Answer ok(Object value) {
      return new Answer(value, null, 0);
    }

    static Answer fail(Exception e) {
      return new Answer(null, e, 0);
    }

    static Answer failAfter(Exception e, long nanos) {
      return new Answer(null, e, nanos);
    }
  }

  /** What a call did, the same record whichever path ran it. */
  record Run(Object value, Throwable failure, boolean cancelled, int attempts, List<Long> delays, RetryOutcome outcome,
      int outcomeAttempts, int timersLeft) {}

  private final FakeTime time = new FakeTime();

  private Run run(Path path, RetryPolicy policy, Consumer<RetryExecutor.Builder> setup, IntFunction<Answer> script,
      boolean cancelInFirstBackoff) throws Exception {
    List<Long> delays = new ArrayList<>();
    RetryOutcome[] outcome = new RetryOutcome[1];
    int[] outcomeAttempts = new int[1];
    int[] attempts = new int[1];
    boolean[] cancelNow = new boolean[1];
    @SuppressWarnings("unchecked")
    CompletableFuture<Object>[] future = new CompletableFuture[1];
    RetryListener recorder = new RetryListener() {
      @Override
      public void onRetryScheduled(int next, long delayNanos, Throwable failure) {
        delays.add(delayNanos);
        if (cancelInFirstBackoff && delays.size() == 1) {
          if (path == Path.ASYNC) {
            future[0].cancel(true);
          } else {
            cancelNow[0] = true; // as an interrupt: the sleep throws
          }
        }
      }

      @Override
      public void onOutcome(RetryOutcome why, int n) {
        outcome[0] = why;
        outcomeAttempts[0] = n;
      }
    };
    RetryExecutor.Builder b = RetryExecutor.builder(policy).nanoClock(time::nanos).scheduler(time).random(() -> 0.5)
        .listener(recorder).sleeper(nanos -> {
          if (cancelNow[0]) {
            throw new InterruptedException("cancelled in the backoff");
          }
          time.sleepNanos(nanos);
        });
    setup.accept(b);
    RetryExecutor executor = b.build();
    Object value = null;
    Throwable failure = null;
    boolean cancelled = false;
    if (path == Path.SYNC) {
      try {
        value = executor.call(() -> {
          Answer a = script.apply(++attempts[0]);
          time.advance(a.tookNanos());
          if (a.failure() != null) {
            throw a.failure();
          }
          return a.value();
        });
      } catch (InterruptedException e) {
        cancelled = true;
      } catch (Exception e) {
        failure = e;
      }
    } else {
      future[0] = executor.callAsync(() -> {
        Answer a = script.apply(++attempts[0]);
        CompletableFuture<Object> f = new CompletableFuture<>();
        // answered from the scheduler, as a real client's I/O completes later
        time.schedule(() -> {
          if (a.failure() != null) {
            f.completeExceptionally(a.failure());
          } else {
            f.complete(a.value());
          }
        }, a.tookNanos());
        return f;
      });
      time.advance(Duration.ofSeconds(60).toNanos());
      assertTrue(future[0].isDone(), "an async call ends");
      try {
        value = future[0].get();
      } catch (CancellationException e) {
        cancelled = true;
      } catch (ExecutionException e) {
        failure = e.getCause();
      }
    }
    time.advance(Duration.ofSeconds(60).toNanos()); // nothing may run after the end
    return new Run(value, failure, cancelled, attempts[0], delays, outcome[0], outcomeAttempts[0], time.pendingTasks());
  }

  private Run run(Path path, RetryPolicy policy, IntFunction<Answer> script) throws Exception {
    return run(path, policy, b -> { }, script, false);
  }

  private static RetryPolicy.Builder policy() {
    return RetryPolicy.builder().maxAttempts(3).backoff(Duration.ofMillis(100), Duration.ofSeconds(10));
  }

  private static void assertEnded(Run r, RetryOutcome outcome, int attempts) {
    assertEquals(outcome, r.outcome(), "outcome");
    assertEquals(attempts, r.attempts(), "attempts run");
    assertEquals(attempts, r.outcomeAttempts(), "attempts reported");
    assertEquals(0, r.timersLeft(), "no timer left");
  }

  @ParameterizedTest
  @EnumSource(Path.class)
  void success(Path path) throws Exception {
    Run r = run(path, policy().build(), n -> Answer.ok("ok"));
    assertEquals("ok", r.value());
    assertNull(r.failure());
    assertEquals(List.of(), r.delays());
    assertEnded(r, RetryOutcome.SUCCESS, 1);
  }

  @ParameterizedTest
  @EnumSource(Path.class)
  void retryThenSuccess(Path path) throws Exception {
    Run r = run(path, policy().build(), n -> n < 3 ? Answer.fail(new IOException("down " + n)) : Answer.ok("ok"));
    assertEquals("ok", r.value());
    assertEquals(List.of(50 * MS, 100 * MS), r.delays(), "full jitter at 0.5: U(0, 100 ms), U(0, 200 ms)");
    assertEnded(r, RetryOutcome.SUCCESS, 3);
  }

  @ParameterizedTest
  @EnumSource(Path.class)
  void exhaustedAttemptsEndWithTheLastFailure(Path path) throws Exception {
    IOException last = new IOException("third");
    Run r = run(path, policy().build(), n -> Answer.fail(n == 3 ? last : new IOException("down")));
    assertSame(last, r.failure());
    assertEnded(r, RetryOutcome.MAX_ATTEMPTS, 3);
  }

  @ParameterizedTest
  @EnumSource(Path.class)
  void retryableResultsEndWithTheLastResult(Path path) throws Exception {
    Run r = run(path, policy().<Integer>retryOnResult(s -> s == 503).build(), n -> Answer.ok(503));
    assertEquals(503, r.value());
    assertEnded(r, RetryOutcome.MAX_ATTEMPTS, 3);
  }

  @ParameterizedTest
  @EnumSource(Path.class)
  void aBudgetDenialEndsAtOnceWithTheLastFailure(Path path) throws Exception {
    LocalRetryBudget empty = new LocalRetryBudget(BudgetConfig.builder("kit").minRetriesPerSecond(0).build(), () -> 0L);
    IOException down = new IOException("down");
    Run r = run(path, policy().build(), b -> b.budget(empty), n -> Answer.fail(down), false);
    RetryBudgetExhaustedException e = (RetryBudgetExhaustedException) r.failure();
    assertSame(down, e.getCause());
    assertEquals(BudgetDecision.Reason.DENIED_EXHAUSTED, e.decision().reason());
    assertEquals(List.of(), r.delays(), "no sleep before failing");
    assertEnded(r, RetryOutcome.BUDGET_EXHAUSTED, 1);
    assertEquals(1, empty.windowCounts()[0], "one first attempt counted");
    assertEquals(1, empty.windowCounts()[2], "one refusal counted");
  }

  @ParameterizedTest
  @EnumSource(Path.class)
  void theDeadlineIsNeverSleptPast(Path path) throws Exception {
    RetryPolicy p = policy().maxAttempts(10).deadline(Duration.ofMillis(120)).build();
    Run r = run(path, p, b -> b.random(() -> 0.99), n -> Answer.failAfter(new IOException("slow"), 10 * MS), false);
    // 10 ms, sleep 99 ms, 10 ms (119 ms): the next sleep (198 ms) would pass the deadline
    assertEquals(List.of(99 * MS), r.delays());
    assertTrue(r.failure() instanceof IOException, String.valueOf(r.failure()));
    assertEnded(r, RetryOutcome.DEADLINE, 2);
  }

  @ParameterizedTest
  @EnumSource(Path.class)
  void aNonRetryableFailureIsNotRetried(Path path) throws Exception {
    Run r = run(path, policy().build(), n -> Answer.fail(new IllegalStateException("400")));
    assertTrue(r.failure() instanceof IllegalStateException);
    assertEnded(r, RetryOutcome.NOT_RETRYABLE, 1);
  }

  @ParameterizedTest
  @EnumSource(Path.class)
  void aNonIdempotentCallWithoutAKeyIsNotRetried(Path path) throws Exception {
    Run r = run(path, policy().idempotent(false).build(), n -> Answer.fail(new IOException("lost reply")));
    assertTrue(r.failure() instanceof IOException);
    assertEnded(r, RetryOutcome.NOT_IDEMPOTENT, 1);
  }

  @ParameterizedTest
  @EnumSource(Path.class)
  void aServerDelayIsWaitedAtLeast(Path path) throws Exception {
    RetryPolicy p = policy().serverDelay((v, f) -> f != null ? Duration.ofMillis(700) : null).build();
    Run r = run(path, p, n -> n == 1 ? Answer.fail(new IOException("503 Retry-After")) : Answer.ok("ok"));
    assertEquals("ok", r.value());
    assertEquals(List.of(700 * MS), r.delays());
    assertEnded(r, RetryOutcome.SUCCESS, 2);
  }

  @ParameterizedTest
  @EnumSource(Path.class)
  void aServerDelayBeyondTheCapOrANegativeOneEndsTheCallNow(Path path) throws Exception {
    Run tooLong = run(path, policy().serverDelay((v, f) -> Duration.ofSeconds(11)).build(),
        n -> Answer.fail(new IOException("busy")));
    assertTrue(tooLong.failure() instanceof IOException);
    assertEnded(tooLong, RetryOutcome.SERVER_DELAY_TOO_LONG, 1);
    Run no = run(path, policy().serverDelay((v, f) -> Duration.ofMillis(-1)).build(),
        n -> Answer.fail(new IOException("do not retry")));
    assertEnded(no, RetryOutcome.SERVER_SAYS_NO, 1);
  }

  @ParameterizedTest
  @EnumSource(Path.class)
  void cancellationInTheBackoffStopsTheCall(Path path) throws Exception {
    Run r = run(path, policy().build(), b -> { }, n -> Answer.fail(new IOException("down")), true);
    assertTrue(r.cancelled(), "the caller sees its cancellation");
    assertEquals(List.of(50 * MS), r.delays());
    assertEnded(r, RetryOutcome.CANCELLED, 1);
  }
}
