package io.retrybudget.failsafe;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.failsafe.CircuitBreaker;
import dev.failsafe.Failsafe;
import dev.failsafe.FailsafeException;
import dev.failsafe.Fallback;
import dev.failsafe.RetryPolicy;
import dev.failsafe.Timeout;
import dev.failsafe.TimeoutExceededException;
import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.budget.BudgetDecision.Reason;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.retry.RetryBudgetExhaustedException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout.ThreadMode;

/**
 * Failsafe's synchronous scenarios through a budgeted retry policy: the budget is asked exactly
 * when Failsafe decided to retry, and a refusal ends the execution before Failsafe's wait.
 */
@org.junit.jupiter.api.Timeout(value = 30, threadMode = ThreadMode.SEPARATE_THREAD)
class BudgetedRetryPolicySyncTest {
  private final AtomicInteger attempts = new AtomicInteger();

  private String failTimes(int failures) {
    if (attempts.incrementAndGet() <= failures) {
      throw new UncheckedIOException(new IOException("attempt " + attempts.get() + " failed"));
    }
    return "ok";
  }

  @Test
  void grantedRetriesRunAsFailsafeWould() {
    ScriptedBudget budget = ScriptedBudget.answering();
    RetryPolicy<String> policy = BudgetedRetryPolicy.of(RetryPolicy.<String>builder().withMaxRetries(2).build(), budget);

    assertEquals("ok", Failsafe.with(policy).get(() -> failTimes(2)));
    assertEquals(3, attempts.get());
    assertEquals(1, budget.firstAttempts.get());
    assertEquals(2, budget.blockingAsks.get());
  }

  @Test
  void aRefusalEndsTheExecutionAtOnceWithoutFailsafesWait() {
    ScriptedBudget budget = ScriptedBudget.answering(BudgetDecision.DENIED_EXHAUSTED);
    AtomicInteger scheduled = new AtomicInteger();
    AtomicInteger failures = new AtomicInteger();
    AtomicInteger aborts = new AtomicInteger();
    AtomicInteger exceeded = new AtomicInteger();
    RetryPolicy<String> policy = BudgetedRetryPolicy.of(RetryPolicy.<String>builder()
        .withMaxRetries(5)
        .withDelay(Duration.ofHours(1)) // a wait before the refusal would hang past the class's timeout
        .onRetryScheduled(e -> scheduled.incrementAndGet())
        .onFailure(e -> {
          assertInstanceOf(RetryBudgetExhaustedException.class, e.getException());
          failures.incrementAndGet();
        })
        .onAbort(e -> aborts.incrementAndGet())
        .onRetriesExceeded(e -> exceeded.incrementAndGet())
        .build(), budget);

    RetryBudgetExhaustedException refused = assertThrows(RetryBudgetExhaustedException.class,
        () -> Failsafe.with(policy).get(() -> failTimes(10)));
    assertEquals(1, attempts.get());
    assertEquals(Reason.DENIED_EXHAUSTED, refused.decision().reason());
    assertInstanceOf(UncheckedIOException.class, refused.getCause(), "the cause is the last failure");
    assertEquals(0, scheduled.get(), "onRetryScheduled: no retry was scheduled");
    assertEquals(1, failures.get());
    assertEquals(0, aborts.get());
    assertEquals(0, exceeded.get());
  }

  @Test
  void theBudgetIsNotAskedWhenFailsafeWouldNotRetry() {
    ScriptedBudget budget = ScriptedBudget.answering();
    RetryPolicy<String> twoRetries = BudgetedRetryPolicy.of(RetryPolicy.<String>builder().withMaxRetries(2).build(), budget);
    assertThrows(UncheckedIOException.class, () -> Failsafe.with(twoRetries).get(() -> failTimes(10)));
    assertEquals(3, attempts.get());
    assertEquals(2, budget.asks(), "the last failure, with no retry left, asks nothing");

    ScriptedBudget aborted = ScriptedBudget.answering();
    RetryPolicy<String> abortOn = BudgetedRetryPolicy.of(RetryPolicy.<String>builder()
        .abortOn(IllegalStateException.class).build(), aborted);
    assertThrows(IllegalStateException.class, () -> Failsafe.with(abortOn).get(() -> {
      throw new IllegalStateException("abort");
    }));
    assertEquals(0, aborted.asks());

    ScriptedBudget notHandled = ScriptedBudget.answering();
    RetryPolicy<String> onlyIo = BudgetedRetryPolicy.of(RetryPolicy.<String>builder().handle(IOException.class).build(), notHandled);
    assertThrows(IllegalArgumentException.class, () -> Failsafe.with(onlyIo).get(() -> {
      throw new IllegalArgumentException("not handled");
    }));
    assertEquals(0, notHandled.asks());

    ScriptedBudget succeeded = ScriptedBudget.answering();
    assertEquals("fine", Failsafe.with(BudgetedRetryPolicy.of(RetryPolicy.<String>ofDefaults(), succeeded)).get(() -> "fine"));
    assertEquals(0, succeeded.asks());
    assertEquals(1, succeeded.firstAttempts.get());
  }

  @Test
  void resultsThePolicyHandlesArePaidForToo() {
    ScriptedBudget budget = ScriptedBudget.answering(BudgetDecision.GRANTED, BudgetDecision.DENIED_EXHAUSTED_CACHED);
    RetryPolicy<String> policy = BudgetedRetryPolicy.of(RetryPolicy.<String>builder().handleResult("busy").withMaxRetries(5).build(), budget);
    RetryBudgetExhaustedException refused = assertThrows(RetryBudgetExhaustedException.class,
        () -> Failsafe.with(policy).get(() -> {
          attempts.incrementAndGet();
          return "busy";
        }));
    assertEquals(2, attempts.get());
    assertEquals("busy", refused.lastResult());
    assertNull(refused.getCause());
  }

  @Test
  void noAnswerOrABrokenBudgetIsARefusal() {
    RetryBudget budget = new ThrowingBudget();
    RetryPolicy<String> policy = BudgetedRetryPolicy.of(RetryPolicy.<String>builder().withMaxRetries(3).build(), budget);
    RetryBudgetExhaustedException refused = assertThrows(RetryBudgetExhaustedException.class,
        () -> Failsafe.with(policy).get(() -> failTimes(10)));
    assertEquals(Reason.DENIED_FALLBACK, refused.decision().reason());
    assertEquals(1, attempts.get());
  }

  @Test
  void anOuterFallbackSeesTheRefusalAndInnerPoliciesRunOnEveryAttempt() {
    ScriptedBudget budget = ScriptedBudget.answering(BudgetDecision.GRANTED, BudgetDecision.DENIED_EXHAUSTED);
    RetryPolicy<String> policy = BudgetedRetryPolicy.of(RetryPolicy.<String>builder().withMaxRetries(5).build(), budget);
    Fallback<String> fallback = Fallback.of(e -> e.getLastException() instanceof RetryBudgetExhaustedException ? "refused" : "other");
    Timeout<String> perAttempt = Timeout.<String>builder(Duration.ofMillis(50)).withInterrupt().build();
    CircuitBreaker<String> breaker = CircuitBreaker.<String>builder().withFailureThreshold(100).build();

    String answer = Failsafe.with(fallback, policy, breaker, perAttempt).get(() -> {
      attempts.incrementAndGet();
      Thread.sleep(Duration.ofHours(1).toMillis()); // every attempt outlives the per-attempt timeout
      return "never";
    });
    assertEquals("refused", answer);
    assertEquals(2, attempts.get(), "the first attempt and one granted retry");
    assertEquals(2, breaker.getFailureCount(), "the breaker saw each attempt");
  }

  @Test
  void timeoutsAreFailuresFailsafeRetriesAndTheBudgetPaysFor() {
    ScriptedBudget budget = ScriptedBudget.answering(BudgetDecision.DENIED_EXHAUSTED);
    RetryPolicy<String> policy = BudgetedRetryPolicy.of(RetryPolicy.<String>builder().withMaxRetries(2).build(), budget);
    RetryBudgetExhaustedException refused = assertThrows(RetryBudgetExhaustedException.class,
        () -> Failsafe.with(policy, Timeout.<String>builder(Duration.ofMillis(20)).withInterrupt().build()).get(() -> {
          attempts.incrementAndGet();
          Thread.sleep(Duration.ofHours(1).toMillis());
          return "never";
        }));
    assertInstanceOf(TimeoutExceededException.class, refused.getCause());
    assertEquals(1, attempts.get());
  }

  @Test
  void checkedFailuresStayFailsafes() {
    ScriptedBudget budget = ScriptedBudget.answering(BudgetDecision.DENIED_EXHAUSTED);
    RetryPolicy<String> policy = BudgetedRetryPolicy.of(RetryPolicy.<String>builder().withMaxRetries(2).build(), budget);
    RetryBudgetExhaustedException refused = assertThrows(RetryBudgetExhaustedException.class,
        () -> Failsafe.with(policy).get(() -> {
          throw new IOException("checked");
        }));
    assertInstanceOf(IOException.class, refused.getCause());
    ScriptedBudget granting = ScriptedBudget.answering();
    FailsafeException wrapped = assertThrows(FailsafeException.class,
        () -> Failsafe.with(BudgetedRetryPolicy.of(RetryPolicy.<String>builder().withMaxRetries(1).build(), granting))
            .get(() -> {
              throw new IOException("checked");
            }));
    assertInstanceOf(IOException.class, wrapped.getCause(), "retries ran out: Failsafe's own exception");
  }

  @Test
  void oneBudgetPerPolicyAndTheConfigurationIsKept() {
    ScriptedBudget budget = ScriptedBudget.answering();
    RetryPolicy<String> original = RetryPolicy.<String>builder().withMaxRetries(7).withDelay(Duration.ofMillis(3)).build();
    RetryPolicy<String> budgeted = BudgetedRetryPolicy.of(original, budget);
    assertSame(original.getConfig(), budgeted.getConfig());
    assertSame(budget, BudgetedRetryPolicy.budgetOf(budgeted));
    assertNull(BudgetedRetryPolicy.budgetOf(original));
    assertThrows(IllegalArgumentException.class, () -> BudgetedRetryPolicy.of(budgeted, budget));
    assertThrows(NullPointerException.class, () -> BudgetedRetryPolicy.of(original, null));
  }

  @Test
  void theFailsafeOnTheClassPathHasWhatThePolicyUses() {
    assertNull(FailsafeInternals.findProblem());
    assertTrue(RetryPolicy.class.getPackage() != null);
  }

  /** A budget whose store throws: the policy must treat it as a refusal, never let it escape. */
  static final class ThrowingBudget implements RetryBudget {
    @Override
    public String name() {
      return "throwing";
    }

    @Override
    public void recordFirstAttempt() {}

    @Override
    public BudgetDecision acquireBlocking() {
      throw new IllegalStateException("store broke");
    }

    @Override
    public CompletionStage<BudgetDecision> acquire() {
      throw new IllegalStateException("store broke");
    }

    @Override
    public void close() {}
  }
}
