package io.retrybudget.retry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.AdaptiveThrottle;
import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.budget.LocalRetryBudget;
import io.retrybudget.budget.RetryBudget;
import java.io.IOException;
import java.time.Duration;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The throttle in front of a fleet budget, driven by a real executor on fake time. */
class SuccessAwareBudgetTest {
  private static final long MS = 1_000_000L;
  private final FakeTime time = new FakeTime();
  private final SplittableRandom draws = new SplittableRandom(3);

  private static final RetryPolicy THREE = RetryPolicy.builder().maxAttempts(3)
      .backoff(Duration.ofMillis(10), Duration.ofMillis(50)).build();

  private LocalRetryBudget fleet(double ratio) {
    return new LocalRetryBudget(BudgetConfig.builder("deps").ratio(ratio).minRetriesPerSecond(0).build(),
        () -> time.nanos() / MS);
  }

  private SuccessAwareBudget successAware(RetryBudget fleet) {
    return SuccessAwareBudget.builder(fleet).nanoClock(time::nanos).random(draws::nextDouble).build();
  }

  private RetryExecutor executor(RetryBudget budget, RetryListener listener) {
    RetryExecutor.Builder b = RetryExecutor.builder(THREE).nanoClock(time::nanos).scheduler(time).sleeper(time)
        .random(() -> 0.5).budget(budget);
    if (listener != null) {
      b.listener(listener);
    }
    return b.build();
  }

  record Run(int calls, int attempts, int ok) {
    double attemptsPerCall() {
      return attempts / (double) calls;
    }
  }

  /** {@code calls} calls 10 ms apart; each attempt fails with probability {@code failure} (seeded). */
  private Run drive(RetryExecutor executor, int calls, double failure, long seed) {
    SplittableRandom outcomes = new SplittableRandom(seed);
    AtomicInteger attempts = new AtomicInteger();
    int ok = 0;
    for (int i = 0; i < calls; i++) {
      try {
        executor.call(() -> {
          attempts.incrementAndGet();
          if (outcomes.nextDouble() < failure) {
            throw new IOException("down");
          }
          return "ok";
        });
        ok++;
      } catch (Exception failed) {
        // counted as not ok
      }
      time.advance(10 * MS);
    }
    return new Run(calls, attempts.get(), ok);
  }

  @Test
  void aTotalOutageStopsRetriesThatTheFleetBudgetAloneWouldGrant() {
    Run fixed = drive(executor(fleet(0.5), null), 500, 1.0, 1);
    SuccessAwareBudget aware = successAware(fleet(0.5));
    Run adaptive = drive(executor(aware, aware.listener()), 500, 1.0, 1);
    assertTrue(fixed.attemptsPerCall() > 1.4, "a fixed ratio of 0.5 spends half a retry per call: " + fixed);
    assertTrue(adaptive.attemptsPerCall() < 1.03, "the throttle sees nothing accepted and stops: " + adaptive);
    assertTrue(aware.throttled() > 480, "throttled " + aware.throttled());
    AdaptiveThrottle.Snapshot s = aware.throttleState();
    assertEquals(0, s.accepts());
    assertTrue(s.rejectProbability() > 0.99, s.toString());
  }

  @Test
  void randomFailuresLetEveryRetryTheFleetBudgetGrantsThrough() {
    Run fixed = drive(executor(fleet(0.5), null), 1_000, 0.3, 2);
    SuccessAwareBudget aware = successAware(fleet(0.5));
    Run adaptive = drive(executor(aware, aware.listener()), 1_000, 0.3, 2);
    assertEquals(0, aware.throttled(), "70 % accepted: the throttle refuses nothing");
    assertEquals(fixed, adaptive, "so the calls go exactly as with the fleet budget alone");
    assertTrue(adaptive.ok() >= 960, "3 attempts at 30 %: " + adaptive);
  }

  @Test
  void retriesComeBackOnceTheFailuresLeaveTheWindow() {
    SuccessAwareBudget aware = successAware(fleet(0.5));
    RetryExecutor executor = executor(aware, aware.listener());
    drive(executor, 300, 1.0, 4); // 3 s of outage: throttle closed
    long throttledInOutage = aware.throttled();
    assertTrue(throttledInOutage > 280, "throttled " + throttledInOutage);
    time.advance(10_000 * MS); // the default 10 s window passes
    assertEquals(0.0, aware.throttleState().rejectProbability());
    Run healed = drive(executor, 300, 0.3, 5);
    assertEquals(throttledInOutage, aware.throttled(), "nothing throttled after recovery");
    assertTrue(healed.attemptsPerCall() > 1.3, "retries flow again: " + healed);
  }

  @Test
  void withoutTheListenerTheThrottleSeesNothingAndNeverRefuses() {
    SuccessAwareBudget aware = successAware(fleet(0.5));
    Run fixed = drive(executor(fleet(0.5), null), 300, 1.0, 6);
    Run unfed = drive(executor(aware, null), 300, 1.0, 6);
    assertEquals(fixed, unfed, "the fleet budget alone");
    assertEquals(0, aware.throttled());
  }

  @Test
  void onlyRetriesCountEachWhenItEndedAndANotRetryableAnswerIsAnAccept() {
    SuccessAwareBudget aware = successAware(fleet(0.5));
    RetryListener l = aware.listener();
    IOException down = new IOException("down");
    for (int i = 0; i < 50; i++) {
      l.onAttempt(1);
      l.onRetryScheduled(2, 0, down); // the first attempt failed: not counted
      l.onAttempt(2); // a retry in flight: not counted yet
      l.onOutcome(i % 2 == 0 ? RetryOutcome.SUCCESS : RetryOutcome.MAX_ATTEMPTS, 1);
    }
    assertEquals(new AdaptiveThrottle.Snapshot(0, 0, 0.0), aware.throttleState(),
        "first attempts are not counted, retries in flight neither");
    l.onOutcome(RetryOutcome.NOT_RETRYABLE, 2); // the retry answered: 1 / 1
    l.onRetryScheduled(3, 0, down); // attempt 2 failed: 1 / 0
    assertEquals(new AdaptiveThrottle.Snapshot(2, 1, 0.0), aware.throttleState(),
        "a failed retry counts as soon as the next is scheduled (below min_requests: nothing refused)");
    l.onOutcome(RetryOutcome.SUCCESS, 3); // attempt 3 answered: 1 / 1
    for (RetryOutcome o : new RetryOutcome[] {RetryOutcome.MAX_ATTEMPTS, RetryOutcome.DEADLINE,
        RetryOutcome.SERVER_SAYS_NO, RetryOutcome.BUDGET_EXHAUSTED, RetryOutcome.NOT_IDEMPOTENT,
        RetryOutcome.SERVER_DELAY_TOO_LONG}) {
      l.onOutcome(o, 2); // the last attempt, a retry, failed
    }
    assertEquals(new AdaptiveThrottle.Snapshot(9, 2, AdaptiveThrottle.rejectProbability(9, 2, 2.0)), aware.throttleState());
    for (RetryOutcome o : new RetryOutcome[] {RetryOutcome.CANCELLED, RetryOutcome.CLOSED, RetryOutcome.ERROR}) {
      l.onOutcome(o, 3);
    }
    assertEquals(9, aware.throttleState().requests(), "no telling how a cancelled, closed or broken call's last attempt went");
  }

  @Test
  void aHealthyPastDoesNotDelayTheReactionToAnOutage() {
    SuccessAwareBudget aware = successAware(fleet(0.5));
    RetryExecutor executor = executor(aware, aware.listener());
    Run healthy = drive(executor, 900, 0.0, 8); // 9 s of success: 900 first attempts in the window
    assertEquals(900, healthy.attempts());
    Run outage = drive(executor, 100, 1.0, 9);
    assertTrue(outage.attempts() <= 100 + 12, "a handful of failed retries closes it: " + outage);
  }

  /** Counts what is asked of it and answers from a script. */
  static final class ScriptedFleet implements RetryBudget {
    int firsts;
    int blocking;
    int async;
    boolean closed;
    BudgetDecision answer = BudgetDecision.GRANTED;

    @Override
    public String name() {
      return "scripted";
    }

    @Override
    public void recordFirstAttempt() {
      firsts++;
    }

    @Override
    public BudgetDecision acquireBlocking() {
      blocking++;
      return answer;
    }

    @Override
    public CompletionStage<BudgetDecision> acquire() {
      async++;
      return CompletableFuture.completedFuture(answer);
    }

    @Override
    public Optional<BudgetConfig> configInForce() {
      return Optional.of(BudgetConfig.builder("scripted").build());
    }

    @Override
    public boolean isDegraded() {
      return true;
    }

    @Override
    public void close() {
      closed = true;
    }
  }

  @Test
  void aThrottledAttemptNeverAsksTheFleetBudgetAndTheRestIsDelegated() {
    ScriptedFleet fleet = new ScriptedFleet();
    double[] draw = {0.0};
    SuccessAwareBudget aware = SuccessAwareBudget.builder(fleet).nanoClock(time::nanos).random(() -> draw[0])
        .throttle(AdaptiveThrottle.Config.builder().minRequests(0).build()).build();
    assertSame(BudgetDecision.GRANTED, aware.acquireBlocking(), "nothing seen yet: asks the fleet");
    assertEquals(1, fleet.blocking);
    aware.listener().onOutcome(RetryOutcome.MAX_ATTEMPTS, 2); // one retry, not accepted: p = 1/2
    draw[0] = 0.4;
    assertSame(BudgetDecision.DENIED_THROTTLED, aware.acquireBlocking());
    assertSame(BudgetDecision.DENIED_THROTTLED, aware.acquire().toCompletableFuture().join());
    assertEquals(1, fleet.blocking, "throttled: the fleet is not asked");
    assertEquals(0, fleet.async);
    assertEquals(2, aware.throttled());
    draw[0] = 0.9999;
    fleet.answer = BudgetDecision.DENIED_FALLBACK;
    assertSame(BudgetDecision.DENIED_FALLBACK, aware.acquire().toCompletableFuture().join(), "the fleet's own answer");
    assertEquals(1, fleet.async);
    aware.recordFirstAttempt();
    assertEquals(1, fleet.firsts);
    assertEquals("scripted", aware.name());
    assertTrue(aware.isDegraded());
    assertEquals("scripted", aware.configInForce().orElseThrow().name());
    assertSame(fleet, aware.fleet());
    aware.close();
    assertTrue(fleet.closed);
  }

  @Test
  void theAsyncPathFeedsAndObeysTheThrottleToo() {
    SuccessAwareBudget aware = successAware(fleet(0.5));
    RetryExecutor executor = executor(aware, aware.listener());
    AtomicInteger attempts = new AtomicInteger();
    int failed = 0;
    for (int i = 0; i < 300; i++) {
      CompletableFuture<String> f = executor.callAsync(() -> {
        attempts.incrementAndGet();
        return CompletableFuture.failedFuture(new IOException("down"));
      });
      time.advance(100 * MS);
      assertTrue(f.isDone(), "fake time ran the call to its end");
      failed += f.isCompletedExceptionally() ? 1 : 0;
    }
    assertEquals(300, failed);
    assertTrue(attempts.get() < 310, "attempts " + attempts.get());
    assertEquals(0, time.pendingTasks(), "no timer left behind");
    AdaptiveThrottle.Snapshot s = aware.throttleState();
    assertTrue(s.requests() >= 90 && s.accepts() == 0, "the last 10 s of retries asked, all refused or failed: " + s);
  }

  @Test
  void builderRefusesNulls() {
    assertThrows(NullPointerException.class, () -> SuccessAwareBudget.builder(null));
    SuccessAwareBudget.Builder b = SuccessAwareBudget.builder(fleet(0.1));
    assertThrows(NullPointerException.class, () -> b.throttle(null));
    assertThrows(NullPointerException.class, () -> b.nanoClock(null));
    assertThrows(NullPointerException.class, () -> b.random(null));
  }
}
