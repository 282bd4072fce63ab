package io.retrybudget.retry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.budget.RetryBudget;
import java.io.IOException;
import java.nio.channels.ClosedByInterruptException;
import java.time.Duration;
import java.util.AbstractSet;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/**
 * One test per defect the adversarial review of issue 10 found (findings 2 to 5; finding 1, the
 * property test's weak checks, is fixed in {@link SeededScheduleTest}). Each fails without its fix.
 */
class ReviewRegressionTest {
  private final FakeTime time = new FakeTime();
  private final List<String> outcomes = new ArrayList<>();

  private final RetryListener recorder = new RetryListener() {
    @Override
    public void onOutcome(RetryOutcome outcome, int attempts) {
      outcomes.add(outcome + "/" + attempts);
    }
  };

  private RetryExecutor.Builder executor(RetryPolicy policy) {
    return RetryExecutor.builder(policy).nanoClock(time::nanos).scheduler(time).sleeper(time).random(() -> 0.5)
        .listener(recorder);
  }

  private static RetryPolicy.Builder policy(int maxAttempts) {
    return RetryPolicy.builder().maxAttempts(maxAttempts).backoff(Duration.ofMillis(100), Duration.ofSeconds(1));
  }

  // ---- finding 2: an interrupted synchronous call went on retrying ------------------------------

  /**
   * A 0 ns backoff (FULL jitter of a 1 ns base) and the default sleeper, {@code TimeUnit.sleep(0)},
   * which does not look at the interrupt flag; {@code ClosedByInterruptException} (what NIO throws
   * when the caller interrupts a blocking read) is an IOException, transient by default.
   */
  @Test
  void finding2_aFailureWhileInterruptedEndsTheSyncCallAsCancelled() {
    RetryPolicy p = RetryPolicy.builder().maxAttempts(3).backoff(Duration.ofNanos(1), Duration.ofNanos(1)).build();
    RetryExecutor e = RetryExecutor.builder(p).random(() -> 0.5).listener(recorder).build(); // the default sleeper
    AtomicInteger attempts = new AtomicInteger();
    boolean stillInterrupted;
    try {
      assertThrows(ClosedByInterruptException.class, () -> e.call(() -> {
        attempts.incrementAndGet();
        Thread.currentThread().interrupt(); // the caller interrupted this thread during blocking NIO
        throw new ClosedByInterruptException();
      }));
    } finally {
      stillInterrupted = Thread.interrupted();
    }
    assertEquals(1, attempts.get(), "no attempt after the thread was interrupted");
    assertEquals(List.of("CANCELLED/1"), outcomes);
    assertTrue(stillInterrupted, "the interrupt flag is left for the caller");
  }

  /** A broad predicate would retry the InterruptedException the attempt threw (which cleared the flag). */
  @Test
  void finding2_anInterruptedExceptionFromTheAttemptIsNeverRetried() {
    RetryExecutor e = executor(policy(3).retryOn(t -> true).build()).build();
    AtomicInteger attempts = new AtomicInteger();
    assertThrows(InterruptedException.class, () -> e.call(() -> {
      attempts.incrementAndGet();
      throw new InterruptedException("interrupted in a blocking call");
    }));
    assertEquals(1, attempts.get());
    assertEquals(List.of("CANCELLED/1"), outcomes);
  }

  /** Interrupted while the budget was asked (which does not throw for it), with a sleep that does not look. */
  @Test
  void finding2_anInterruptBetweenAttemptsStartsNoFurtherAttempt() {
    RetryBudget interruptingBudget = new StubBudget() {
      @Override
      public BudgetDecision acquireBlocking() {
        Thread.currentThread().interrupt(); // the caller interrupts while the budget answers
        return BudgetDecision.GRANTED;
      }
    };
    RetryExecutor e = executor(policy(3).build()).budget(interruptingBudget).build(); // FakeTime's sleeper never throws
    AtomicInteger attempts = new AtomicInteger();
    Exception thrown;
    boolean stillInterrupted;
    try {
      thrown = assertThrows(Exception.class, () -> e.call(() -> {
        attempts.incrementAndGet();
        throw new IOException("down");
      }));
    } finally {
      stillInterrupted = Thread.interrupted();
    }
    assertEquals(1, attempts.get(), "no attempt after the thread was interrupted");
    assertEquals(List.of("CANCELLED/1"), outcomes);
    assertInstanceOf(InterruptedException.class, thrown);
    assertFalse(stillInterrupted, "an InterruptedException thrown clears the flag, as the JDK's do");
  }

  // ---- finding 3: close() racing callAsync left the first attempt running ------------------------

  /** The transition function alone: a Stop that reaches a call before its Start (close() in between). */
  @Test
  void finding3_aStopBeforeStartCancelsTheFirstAttempt() {
    RetryPolicy p = policy(3).build();
    CompletableFuture<String> first = new CompletableFuture<>();
    CallState<String> state = new CallState<>(p, new RetryPlanner(p), null, null, new AttemptContext(null), 0, first);
    List<CallState.Action> out = new ArrayList<>();
    state.transition(new CallState.Stop(RetryOutcome.CLOSED, new IllegalStateException("closed")), out, 0);
    state.transition(new CallState.Start(null, null, 0), out, 0); // begin() calls start() after: ignored, ENDED
    assertTrue(out.stream().anyMatch(a -> a instanceof CallState.CancelAttempt c && c.future() == first),
        "the first attempt (sent already) is cancelled: " + out);
    assertTrue(out.stream().anyMatch(a -> a instanceof CallState.Complete c && c.attempts() == 1),
        "the outcome counts the attempt sent: " + out);
    assertEquals(CallState.Phase.ENDED, state.snapshot().phase());
  }

  /**
   * Through the public API, deterministically: {@code close()} runs on another thread, to its end,
   * exactly between registering the call and starting it in {@code callAsync} (the executor's
   * package-private {@code liveCalls} seam).
   */
  @Test
  void finding3_closeRacingCallAsyncCancelsTheFirstAttemptSent() {
    RetryExecutor[] executor = new RetryExecutor[1];
    Set<AsyncCall<?>> closeOnAdd = new RegisteringSet(added -> {
      Thread closer = new Thread(executor[0]::close); // another thread calls close() right now
      closer.start();
      joinQuietly(closer);
    });
    executor[0] = executor(policy(3).build()).liveCalls(closeOnAdd).build();
    CompletableFuture<String> attempt = new CompletableFuture<>();
    CompletableFuture<String> call = executor[0].callAsync(() -> attempt);
    assertTrue(call.isCompletedExceptionally(), "the call was ended by close()");
    assertTrue(attempt.isCancelled(), "the first attempt, sent already, is cancelled");
    assertEquals(List.of("CLOSED/1"), outcomes, "one attempt was sent");
    assertEquals(0, closeOnAdd.size(), "and the call is not left registered");
    assertEquals(0, time.pendingTasks());
  }

  /** A concurrent set that runs {@code onAdd} inside {@code add}, after the element is in. */
  private static final class RegisteringSet extends AbstractSet<AsyncCall<?>> {
    private final Set<AsyncCall<?>> real = ConcurrentHashMap.newKeySet();
    private final Consumer<AsyncCall<?>> onAdd;

    RegisteringSet(Consumer<AsyncCall<?>> onAdd) {
      this.onAdd = onAdd;
    }

    @Override
    public boolean add(AsyncCall<?> c) {
      boolean added = real.add(c);
      onAdd.accept(c);
      return added;
    }

    @Override
    public boolean remove(Object o) {
      return real.remove(o);
    }

    @Override
    public Iterator<AsyncCall<?>> iterator() {
      return real.iterator();
    }

    @Override
    public int size() {
      return real.size();
    }
  }

  private static void joinQuietly(Thread t) {
    try {
      t.join();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  // ---- finding 4: a retry was sent after the caller's cancel() returned true ---------------------

  @Test
  void finding4_noRetryIsSentAfterTheCallWasCancelled() {
    @SuppressWarnings("unchecked")
    CompletableFuture<String>[] call = new CompletableFuture[1];
    boolean[] cancelled = new boolean[1];
    RetryExecutor e = executor(policy(3).build()).listener(new RetryListener() {
      @Override
      public void onAttempt(int attempt) {
        if (attempt == 2) {
          cancelled[0] = call[0].cancel(true); // a client-side limiter, or the caller on another thread
        }
      }
    }).build();
    AtomicInteger sent = new AtomicInteger();
    call[0] = e.callAsync(() -> {
      sent.incrementAndGet();
      return CompletableFuture.failedFuture(new IOException("down"));
    });
    time.advance(Duration.ofSeconds(1).toNanos()); // the backoff timer fires: the retry is reserved, then cancelled
    assertTrue(cancelled[0], "cancel() returned true");
    assertEquals(1, sent.get(), "the retry's request is not sent after the call was cancelled");
    assertEquals(List.of("CANCELLED/2"), outcomes);
    assertEquals(0, time.pendingTasks());
  }

  // ---- finding 5: the sync path reported no outcome when code outside the attempt threw ----------

  @Test
  void finding5_aThrowingSleeperIsReportedOnce() {
    RetryExecutor e = executor(policy(3).build()).sleeper(n -> {
      throw new IllegalStateException("sleeper shut down");
    }).build();
    assertThrows(IllegalStateException.class, () -> e.call(() -> {
      throw new IOException("down");
    }));
    assertEquals(List.of("ERROR/1"), outcomes);
  }

  @Test
  void finding5_aThrowingRandomSourceIsReportedOnce() {
    RetryExecutor e = executor(policy(3).build()).random(() -> {
      throw new IllegalStateException("no entropy");
    }).build();
    assertThrows(IllegalStateException.class, () -> e.call(() -> {
      throw new IOException("down");
    }));
    assertEquals(List.of("ERROR/1"), outcomes);
  }

  @Test
  void finding5_aBudgetThatThrowsAnErrorIsReportedOnce() {
    RetryExecutor e = executor(policy(3).build()).budget(new StubBudget() {
      @Override
      public BudgetDecision acquireBlocking() {
        throw new StackOverflowError("budget bug");
      }
    }).build();
    assertThrows(StackOverflowError.class, () -> e.call(() -> {
      throw new IOException("down");
    }));
    assertEquals(List.of("ERROR/1"), outcomes);
  }

  @Test
  void finding5_aBudgetThatCannotCountTheFirstAttemptIsReportedWithNoAttempt() {
    RetryExecutor e = executor(policy(3).build()).budget(new StubBudget() {
      @Override
      public void recordFirstAttempt() {
        throw new IllegalStateException("budget closed");
      }
    }).build();
    AtomicInteger attempts = new AtomicInteger();
    assertThrows(IllegalStateException.class, () -> e.call(attempts::incrementAndGet));
    assertEquals(0, attempts.get());
    assertEquals(List.of("ERROR/0"), outcomes);
  }

  /** A budget that grants everything; tests override what misbehaves. */
  private static class StubBudget implements RetryBudget {
    @Override
    public String name() {
      return "stub";
    }

    @Override
    public void recordFirstAttempt() {}

    @Override
    public BudgetDecision acquireBlocking() {
      return BudgetDecision.GRANTED;
    }

    @Override
    public CompletionStage<BudgetDecision> acquire() {
      return CompletableFuture.completedFuture(BudgetDecision.GRANTED);
    }

    @Override
    public void close() {}
  }
}
