package io.retrybudget.reactor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.retry.Jitter;
import io.retrybudget.retry.RetryPolicy;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;
import reactor.test.scheduler.VirtualTimeScheduler;

/**
 * A cancelled subscriber stops the call wherever it is: the backoff timer is disposed of and never
 * fires, no resubscription happens afterwards however far time runs, a budget answer that comes
 * after the cancel starts nothing, an attempt in flight is cancelled with its timeout timer. On
 * virtual time, through a scheduler that counts the timers set, fired and disposed of.
 */
class BudgetRetryCancellationTest {
  static final Duration VERIFY = Duration.ofSeconds(10);
  final VirtualTimeScheduler vts = VirtualTimeScheduler.create();
  final CountingScheduler timers = new CountingScheduler(vts);
  final ScriptedBudget budget = new ScriptedBudget();
  final RecordingListener events = new RecordingListener();
  final AtomicInteger subscriptions = new AtomicInteger();
  final RetryPolicy policy = RetryPolicy.builder().maxAttempts(5).backoff(Duration.ofSeconds(1), Duration.ofSeconds(1))
      .jitter(Jitter.NONE).build();
  final BudgetRetry retry = BudgetRetry.builder(policy).budget(budget).scheduler(timers)
      .nanoClock(() -> vts.now(TimeUnit.NANOSECONDS)).listener(events).build();

  Mono<String> failing() {
    return Mono.defer(() -> {
      subscriptions.incrementAndGet();
      return Mono.error(new IOException("down"));
    });
  }

  @Test
  void aSubscriberCancelledDuringTheBackoffDisposesOfTheTimerAndIsNeverResubscribed() {
    StepVerifier.withVirtualTime(() -> failing().retryWhen(retry), () -> vts, Long.MAX_VALUE)
        .expectSubscription()
        .expectNoEvent(Duration.ofMillis(500))
        .then(() -> {
          assertEquals(1, subscriptions.get());
          assertEquals(1, timers.pending(), "the backoff timer is armed");
        })
        .thenCancel()
        .verify(VERIFY);
    vts.advanceTimeBy(Duration.ofHours(1));
    assertEquals(1, subscriptions.get(), "no resubscription after the cancel");
    assertEquals(1, timers.timersDisposed.get(), "the backoff timer disposed of");
    assertEquals(0, timers.timersFired.get(), "and it never fired");
    assertEquals(1, budget.acquires.get(), "nothing more asked of the budget");
    assertEquals(List.of("outcome CANCELLED 1"), events.outcomes());
  }

  @Test
  void theSameThroughACall() {
    StepVerifier.withVirtualTime(() -> retry.apply(failing()), () -> vts, Long.MAX_VALUE)
        .expectSubscription()
        .expectNoEvent(Duration.ofMillis(500))
        .thenCancel()
        .verify(VERIFY);
    vts.advanceTimeBy(Duration.ofHours(1));
    assertEquals(1, subscriptions.get());
    assertEquals(0, timers.pending());
    assertEquals(0, timers.timersFired.get());
    assertEquals(List.of("outcome CANCELLED 1"), events.outcomes());
  }

  @Test
  void aBudgetAnswerThatComesAfterTheCancelStartsNothing() {
    CompletableFuture<BudgetDecision> answer = new CompletableFuture<>();
    budget.then(answer);
    StepVerifier.withVirtualTime(() -> failing().retryWhen(retry), () -> vts, Long.MAX_VALUE)
        .expectSubscription()
        .expectNoEvent(Duration.ofMillis(10))
        .then(() -> assertEquals(1, budget.acquires.get(), "waiting for the budget"))
        .thenCancel()
        .verify(VERIFY);
    assertTrue(!answer.isCancelled(), "a permit request is not cancelled: it may be shared");
    answer.complete(BudgetDecision.GRANTED);
    vts.advanceTimeBy(Duration.ofHours(1));
    assertEquals(1, subscriptions.get());
    assertEquals(0, timers.timersSet.get(), "no backoff timer set for a granted permit of a cancelled call");
    assertEquals(List.of("outcome CANCELLED 1"), events.outcomes());
  }

  @Test
  void aCancelledCallCancelsItsAttemptInFlightAndItsTimeout() {
    AtomicBoolean attemptCancelled = new AtomicBoolean();
    BudgetRetry bounded = BudgetRetry.builder(policy.toBuilder().attemptTimeout(Duration.ofSeconds(5)).build())
        .budget(budget).scheduler(timers).nanoClock(() -> vts.now(TimeUnit.NANOSECONDS)).listener(events).build();
    StepVerifier.withVirtualTime(() -> bounded.call(null, a -> Mono.<String>never()
            .doOnCancel(() -> attemptCancelled.set(true))), () -> vts, Long.MAX_VALUE)
        .expectSubscription()
        .expectNoEvent(Duration.ofSeconds(1))
        .thenCancel()
        .verify(VERIFY);
    vts.advanceTimeBy(Duration.ofHours(1));
    assertTrue(attemptCancelled.get(), "the attempt in flight is cancelled");
    assertEquals(1, timers.timersDisposed.get(), "its timeout timer disposed of");
    assertEquals(0, timers.timersFired.get());
    assertEquals(0, budget.acquires.get());
    assertEquals(List.of("outcome CANCELLED 1"), events.outcomes());
  }

  @Test
  void aRetriedResultHeldDuringTheBackoffIsGivenBackOnCancel() {
    List<Object> discarded = new CopyOnWriteArrayList<>();
    BudgetRetry results = BudgetRetry.builder(policy.toBuilder().<String>retryOnResult(s -> s.equals("busy")).build())
        .budget(budget).scheduler(timers).nanoClock(() -> vts.now(TimeUnit.NANOSECONDS)).discard(discarded::add).build();
    StepVerifier.withVirtualTime(() -> results.call(null, a -> Mono.just("busy")), () -> vts, Long.MAX_VALUE)
        .expectSubscription()
        .expectNoEvent(Duration.ofMillis(500))
        .then(() -> assertEquals(List.of(), discarded, "held: the call might still answer with it"))
        .thenCancel()
        .verify(VERIFY);
    assertEquals(List.of("busy"), discarded);
  }
}
