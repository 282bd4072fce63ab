package io.retrybudget.retry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.LocalRetryBudget;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** {@link RetryListener#onCallStart()} and {@link RetryListener#onAttemptEnded}: one listener per call, each attempt's end once. */
class CallScopedListenerTest {
  private static final long MS = 1_000_000L;
  private final FakeTime time = new FakeTime();

  /** Makes one recorder per call; each records its own call's events in order. */
  private static final class PerCall implements RetryListener {
    final List<Recorder> calls = Collections.synchronizedList(new ArrayList<>());

    @Override
    public RetryListener onCallStart() {
      Recorder r = new Recorder();
      calls.add(r);
      return r;
    }

    @Override
    public void onAttempt(int attempt) {
      throw new AssertionError("a call's events go to the listener made for it, not to its maker");
    }
  }

  private static final class Recorder implements RetryListener {
    final List<String> events = Collections.synchronizedList(new ArrayList<>());

    @Override
    public void onAttempt(int attempt) {
      events.add("attempt " + attempt);
    }

    @Override
    public void onAttemptSent(int attempt) {
      events.add("sent " + attempt);
    }

    @Override
    public void onAttemptEnded(int attempt, Object result, Throwable failure) {
      events.add("ended " + attempt + " " + (failure != null ? failure.getClass().getSimpleName() : result));
    }

    @Override
    public void onRetryScheduled(int nextAttempt, long delayNanos, Throwable failure) {
      events.add("retry " + nextAttempt);
    }

    @Override
    public void onBudgetDenied(io.retrybudget.budget.BudgetDecision decision) {
      events.add("denied " + decision.reason().tag());
    }

    @Override
    public void onOutcome(RetryOutcome outcome, int attempts) {
      events.add(outcome + " " + attempts);
    }
  }

  private RetryExecutor.Builder executor(RetryListener listener) {
    return RetryExecutor.builder(RetryPolicy.builder().maxAttempts(3)
            .backoff(Duration.ofMillis(100), Duration.ofSeconds(10)).<String>retryOnResult("503"::equals).build())
        .nanoClock(time::nanos).scheduler(time).sleeper(time).random(() -> 0.5).listener(listener);
  }

  @Test
  void aSyncCallTellsItsOwnListenerEveryAttemptsEnd() throws Exception {
    PerCall perCall = new PerCall();
    RetryExecutor x = executor(perCall).build();
    AtomicInteger n = new AtomicInteger();
    assertEquals("ok", x.call(() -> switch (n.getAndIncrement()) {
      case 0 -> throw new IOException("down");
      case 1 -> "503";
      default -> "ok";
    }));
    assertEquals("ok", x.call(() -> "ok"));
    assertEquals(2, perCall.calls.size(), "one listener per call");
    assertEquals(List.of("attempt 1", "sent 1", "ended 1 IOException", "retry 2", "attempt 2", "sent 2", "ended 2 503", "retry 3",
        "attempt 3", "sent 3", "ended 3 ok", "SUCCESS 3"), perCall.calls.get(0).events);
    assertEquals(List.of("attempt 1", "sent 1", "ended 1 ok", "SUCCESS 1"), perCall.calls.get(1).events);
  }

  @Test
  void anAsyncCallTellsEachAttemptsEndOnceWhetherItAnsweredAtOnceOrLater() {
    PerCall perCall = new PerCall();
    RetryExecutor x = executor(perCall).build();
    AtomicInteger n = new AtomicInteger();
    CompletableFuture<String> later = new CompletableFuture<>();
    CompletableFuture<String> call = x.callAsync(() -> switch (n.getAndIncrement()) {
      case 0 -> CompletableFuture.completedFuture("503"); // judged by callAsync itself, before the state machine
      case 1 -> CompletableFuture.failedFuture(new IOException("down"));
      default -> later;
    });
    time.advance(1_000 * MS);
    later.complete("ok");
    assertEquals("ok", call.join());
    assertEquals(List.of("attempt 1", "sent 1", "ended 1 503", "retry 2", "attempt 2", "sent 2", "ended 2 IOException", "retry 3",
        "attempt 3", "sent 3", "ended 3 ok", "SUCCESS 3"), perCall.calls.get(0).events);
  }

  @Test
  void aDenialEndsTheCallAfterTheAttemptsEnd() {
    PerCall perCall = new PerCall();
    // ratio 0.1 with no floor and one first attempt: no whole permit
    LocalRetryBudget none = new LocalRetryBudget(BudgetConfig.builder("none").ratio(0.1).minRetriesPerSecond(0).build(),
        () -> 0L);
    RetryExecutor x = executor(perCall).budget(none).build();
    assertThrows(RetryBudgetExhaustedException.class, () -> x.call(() -> "503"));
    assertEquals(List.of("attempt 1", "sent 1", "ended 1 503", "denied exhausted", "BUDGET_EXHAUSTED 1"),
        perCall.calls.get(0).events);
    CompletableFuture<String> async = x.callAsync(() -> CompletableFuture.failedFuture(new IOException("down")));
    time.advance(0);
    assertThrows(Exception.class, async::join);
    assertEquals(List.of("attempt 1", "sent 1", "ended 1 IOException", "denied exhausted", "BUDGET_EXHAUSTED 1"),
        perCall.calls.get(1).events);
  }

  @Test
  void aCallGivenNoTimeIsStartedAndEndedForItsListener() {
    PerCall perCall = new PerCall();
    RetryExecutor x = executor(perCall).build();
    assertThrows(AttemptTimeoutException.class, () -> x.call(null, Duration.ZERO, c -> "never"));
    assertEquals(List.of("DEADLINE 0"), perCall.calls.get(0).events);
  }

  @Test
  void statelessListenersShareTheExecutorsListenersWithNothingMadePerCall() {
    Listeners none = new Listeners(List.of());
    assertSame(none, none.forCall());
    Listeners counters = new Listeners(List.of(new RetryListener() {}, new RetryListener() {}));
    assertSame(counters, counters.forCall(), "every listener answered itself");
    Listeners scoped = new Listeners(List.of(new RetryListener() {}, new PerCall()));
    assertNotSame(scoped, scoped.forCall());
  }

  @Test
  void aListenerThatFailsToStartACallStillSeesItsEventsAndTheCallRuns() throws Exception {
    List<String> seen = Collections.synchronizedList(new ArrayList<>());
    RetryListener broken = new RetryListener() {
      @Override
      public RetryListener onCallStart() {
        throw new IllegalStateException("broken");
      }

      @Override
      public void onOutcome(RetryOutcome outcome, int attempts) {
        seen.add(outcome + " " + attempts);
      }
    };
    RetryListener ignoring = new RetryListener() {
      @Override
      public RetryListener onCallStart() {
        return null;
      }

      @Override
      public void onOutcome(RetryOutcome outcome, int attempts) {
        throw new AssertionError("null from onCallStart leaves the call unobserved");
      }
    };
    assertEquals("ok", executor(broken).listener(ignoring).build().call(() -> "ok"));
    assertEquals(List.of("SUCCESS 1"), seen);
  }
}
