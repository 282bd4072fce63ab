package io.retrybudget.reactor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.retry.AttemptTimeoutException;
import io.retrybudget.retry.Jitter;
import io.retrybudget.retry.RetryBudgetExhaustedException;
import io.retrybudget.retry.RetryListener;
import io.retrybudget.retry.RetryPolicy;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;
import reactor.test.scheduler.VirtualTimeScheduler;

/** The decisions of {@link BudgetRetry} on virtual time: backoff, deadline, denial, classification, server delays. */
class BudgetRetryTest {
  static final Duration VERIFY = Duration.ofSeconds(10); // wall time for a verification that needs none (virtual time)
  final VirtualTimeScheduler vts = VirtualTimeScheduler.create();
  final ScriptedBudget budget = new ScriptedBudget();
  final RecordingListener events = new RecordingListener();
  final AtomicInteger subscriptions = new AtomicInteger();

  BudgetRetry.Builder retry(RetryPolicy policy) {
    return BudgetRetry.builder(policy).budget(budget).scheduler(vts).nanoClock(() -> vts.now(TimeUnit.NANOSECONDS))
        .random(() -> 0.5).listener(events);
  }

  /** Fails every subscription with "down n" (n counts subscriptions). */
  <T> Mono<T> failing() {
    return Mono.defer(() -> Mono.error(new IOException("down " + subscriptions.incrementAndGet())));
  }

  long nowMillis() {
    return vts.now(TimeUnit.MILLISECONDS);
  }

  @Test
  void resubscribesAfterThePolicysJitteredBackoffAskingTheBudgetEachTime() {
    // Full Jitter at random 0.5 over base 100 ms, cap 1 s: 0.5 x 100, 0.5 x 200, 0.5 x 400 ms
    BudgetRetry r = retry(RetryPolicy.builder().maxAttempts(4).backoff(Duration.ofMillis(100), Duration.ofSeconds(1))
        .jitter(Jitter.FULL).build()).build();
    StepVerifier.withVirtualTime(() -> this.<String>failing().retryWhen(r), () -> vts, Long.MAX_VALUE)
        .expectSubscription()
        .expectNoEvent(Duration.ofMillis(49)).then(() -> assertEquals(1, subscriptions.get()))
        .thenAwait(Duration.ofMillis(1)).then(() -> assertEquals(2, subscriptions.get()))
        .expectNoEvent(Duration.ofMillis(99)).then(() -> assertEquals(2, subscriptions.get()))
        .thenAwait(Duration.ofMillis(1)).then(() -> assertEquals(3, subscriptions.get()))
        .expectNoEvent(Duration.ofMillis(199)).then(() -> assertEquals(3, subscriptions.get()))
        .thenAwait(Duration.ofMillis(1))
        .expectErrorMessage("down 4") // every attempt made: the last failure
        .verify(VERIFY);
    assertEquals(350, nowMillis());
    assertEquals(1, budget.firstAttempts.get(), "the call's first attempt, counted once");
    assertEquals(3, budget.acquires.get(), "one permit per resubscription");
    assertEquals(List.of("attempt 1", "retry 2 after 50ms", "attempt 2", "retry 3 after 100ms", "attempt 3",
        "retry 4 after 200ms", "attempt 4", "outcome MAX_ATTEMPTS 4"), events.events);
  }

  @Test
  void neverSleepsPastTheDeadlineAndEndsWithTheLastFailure() {
    // no jitter: 100 ms, then 200 ms, which the 300 ms deadline cannot hold after 100 ms
    BudgetRetry r = retry(RetryPolicy.builder().maxAttempts(10).backoff(Duration.ofMillis(100), Duration.ofSeconds(1))
        .jitter(Jitter.NONE).deadline(Duration.ofMillis(300)).build()).build();
    StepVerifier.withVirtualTime(() -> this.<String>failing().retryWhen(r), () -> vts, Long.MAX_VALUE)
        .expectSubscription()
        .expectNoEvent(Duration.ofMillis(100))
        .expectErrorMessage("down 2")
        .verify(VERIFY);
    assertEquals(100, nowMillis(), "ended when the next sleep would pass the deadline, not after it");
    assertEquals(1, budget.acquires.get(), "no permit asked for a retry that cannot happen");
    assertEquals("outcome DEADLINE 2", events.outcomes().get(0));
  }

  @Test
  void theDeadlineCutsAnAttemptInFlightOfACall() {
    BudgetRetry r = retry(RetryPolicy.builder().maxAttempts(5).deadline(Duration.ofMillis(300)).build()).build();
    StepVerifier.withVirtualTime(() -> r.call(null, a -> Mono.<String>never()), () -> vts, Long.MAX_VALUE)
        .expectSubscription()
        .expectNoEvent(Duration.ofMillis(300))
        .expectError(AttemptTimeoutException.class)
        .verify(VERIFY);
    assertEquals(300, nowMillis());
    assertEquals(List.of("attempt 1", "outcome DEADLINE 1"), events.events);
  }

  @Test
  void theAttemptTimeoutCutsEachAttemptOfACallWhichIsRetried() {
    BudgetRetry r = retry(RetryPolicy.builder().maxAttempts(2).backoff(Duration.ofMillis(10), Duration.ofMillis(10))
        .jitter(Jitter.NONE).attemptTimeout(Duration.ofMillis(100)).build()).build();
    List<Long> remaining = new CopyOnWriteArrayList<>();
    StepVerifier.withVirtualTime(() -> r.call(null, a -> {
      remaining.add(a.remainingMillis());
      return Mono.<String>never();
    }), () -> vts, Long.MAX_VALUE)
        .expectSubscription()
        .expectNoEvent(Duration.ofMillis(210))
        .expectError(AttemptTimeoutException.class)
        .verify(VERIFY);
    assertEquals(210, nowMillis(), "cut at 100, 10 ms backoff, cut again at 210");
    assertEquals(List.of(100L, 100L), remaining, "each attempt told the time its answer is waited for");
    assertEquals("outcome MAX_ATTEMPTS 2", events.outcomes().get(0));
  }

  @Test
  void aDenialEndsTheCallAtOnceWithTheLastFailureAndNoSleep() {
    budget.then(BudgetDecision.DENIED_EXHAUSTED);
    BudgetRetry r = retry(RetryPolicy.builder().maxAttempts(3).build()).build();
    StepVerifier.withVirtualTime(() -> this.<String>failing().retryWhen(r), () -> vts, Long.MAX_VALUE)
        .expectSubscription()
        .consumeErrorWith(e -> {
          RetryBudgetExhaustedException denied = assertInstanceOf(RetryBudgetExhaustedException.class, e);
          assertEquals(BudgetDecision.Reason.DENIED_EXHAUSTED, denied.decision().reason());
          assertEquals("down 1", denied.getCause().getMessage());
        })
        .verify(VERIFY);
    assertEquals(0, nowMillis(), "no sleep before failing");
    assertEquals(1, subscriptions.get());
    assertEquals(List.of("attempt 1", "denied exhausted", "outcome BUDGET_EXHAUSTED 1"), events.events);
  }

  @Test
  void aBudgetThatCannotAnswerIsARefusal() {
    budget.then(java.util.concurrent.CompletableFuture.failedFuture(new IllegalStateException("redis down")));
    BudgetRetry r = retry(RetryPolicy.builder().maxAttempts(3).build()).build();
    StepVerifier.withVirtualTime(() -> this.<String>failing().retryWhen(r), () -> vts, Long.MAX_VALUE)
        .expectSubscription()
        .expectErrorMatches(e -> e instanceof RetryBudgetExhaustedException d
            && d.decision() == BudgetDecision.DENIED_FALLBACK)
        .verify(VERIFY);
  }

  @Test
  void aBudgetAnswerFromAnotherThreadIsActedOnOnTheScheduler() throws Exception {
    java.util.concurrent.CompletableFuture<BudgetDecision> answer = new java.util.concurrent.CompletableFuture<>();
    budget.then(answer);
    reactor.core.scheduler.Scheduler timers = reactor.core.scheduler.Schedulers.newSingle("retry-timers");
    try {
      BudgetRetry r = BudgetRetry.builder(RetryPolicy.builder().maxAttempts(3).build()).budget(budget).scheduler(timers)
          .build();
      List<String> threads = new CopyOnWriteArrayList<>();
      java.util.concurrent.CompletableFuture<Void> ended = this.<String>failing().retryWhen(r)
          .doOnError(e -> threads.add(Thread.currentThread().getName())).then().toFuture();
      Thread redisIo = new Thread(() -> answer.complete(BudgetDecision.DENIED_EXHAUSTED), "redis-io");
      redisIo.start();
      redisIo.join();
      java.util.concurrent.ExecutionException e = org.junit.jupiter.api.Assertions.assertThrows(
          java.util.concurrent.ExecutionException.class, () -> ended.get(10, TimeUnit.SECONDS));
      assertInstanceOf(RetryBudgetExhaustedException.class, e.getCause());
      assertEquals(1, threads.size());
      assertTrue(threads.get(0).startsWith("retry-timers"), "the refusal reaches the caller on the scheduler: " + threads);
    } finally {
      timers.dispose();
    }
  }

  @Test
  void failuresThePolicyDoesNotRetryEndAtOnceWithoutAskingTheBudget() {
    BudgetRetry r = retry(RetryPolicy.builder().maxAttempts(3).build()).build();
    StepVerifier.withVirtualTime(() -> Mono.defer(() -> {
      subscriptions.incrementAndGet();
      return Mono.<String>error(new IllegalArgumentException("bad request"));
    }).retryWhen(r), () -> vts, Long.MAX_VALUE)
        .expectSubscription()
        .expectErrorMessage("bad request")
        .verify(VERIFY);
    assertEquals(1, subscriptions.get());
    assertEquals(0, budget.acquires.get());
    assertEquals(List.of("attempt 1", "outcome NOT_RETRYABLE 1"), events.events);
  }

  /** A failure that carries the delay its server asked for. */
  static final class Pushback extends IOException {
    final Duration delay;

    Pushback(Duration delay) {
      super("pushback " + delay);
      this.delay = delay;
    }
  }

  private BudgetRetry pushbackRetry() {
    return retry(RetryPolicy.builder().maxAttempts(3).backoff(Duration.ofMillis(10), Duration.ofSeconds(1))
        .jitter(Jitter.NONE).serverDelay((result, failure) -> failure instanceof Pushback p ? p.delay : null).build())
        .build();
  }

  private Mono<String> pushingBack(Duration delay) {
    return Mono.defer(() -> subscriptions.incrementAndGet() == 1 ? Mono.error(new Pushback(delay)) : Mono.just("ok"));
  }

  @Test
  void waitsAtLeastTheDelayTheServerAskedFor() {
    BudgetRetry r = pushbackRetry();
    StepVerifier.withVirtualTime(() -> pushingBack(Duration.ofMillis(500)).retryWhen(r), () -> vts, Long.MAX_VALUE)
        .expectSubscription()
        .expectNoEvent(Duration.ofMillis(499)).then(() -> assertEquals(1, subscriptions.get()))
        .thenAwait(Duration.ofMillis(1))
        .expectNext("ok")
        .verifyComplete();
  }

  @Test
  void aServerThatSaysNoOrAsksBeyondTheCapEndsTheCallNow() {
    for (Duration asked : new Duration[] {Duration.ofMillis(-1), Duration.ofSeconds(2)}) {
      subscriptions.set(0);
      BudgetRetry r = pushbackRetry();
      StepVerifier.withVirtualTime(() -> pushingBack(asked).retryWhen(r), () -> vts, Long.MAX_VALUE)
          .expectSubscription()
          .expectError(Pushback.class)
          .verify(VERIFY);
      assertEquals(1, subscriptions.get(), "asked " + asked);
    }
    assertEquals(List.of("outcome SERVER_SAYS_NO 1", "outcome SERVER_DELAY_TOO_LONG 1"), events.outcomes());
    assertEquals(0, budget.acquires.get());
  }

  @Test
  void aCallRetriesResultsAndAnswersWithTheLastWhenRetriesRunOut() {
    List<Object> discarded = new CopyOnWriteArrayList<>();
    BudgetRetry r = retry(RetryPolicy.builder().maxAttempts(3).backoff(Duration.ofMillis(10), Duration.ofMillis(10))
        .jitter(Jitter.NONE).<String>retryOnResult(s -> s.startsWith("busy")).build()).discard(discarded::add).build();
    StepVerifier.withVirtualTime(() -> r.call(null, a -> Mono.just("busy " + a.attempt())), () -> vts, Long.MAX_VALUE)
        .expectSubscription()
        .expectNoEvent(Duration.ofMillis(20))
        .expectNext("busy 3")
        .verifyComplete();
    assertEquals(List.of("busy 1", "busy 2"), discarded, "retried results given back, the answer kept");
    assertEquals("outcome MAX_ATTEMPTS 3", events.outcomes().get(0));
    assertEquals(1, events.outcomes().size(), "one outcome per call");
  }

  @Test
  void aCallReportsItsSuccessOnceAndTheResultTheBudgetRefusedIsGivenBack() {
    List<Object> discarded = new CopyOnWriteArrayList<>();
    BudgetRetry r = retry(RetryPolicy.builder().maxAttempts(3).backoff(Duration.ofMillis(10), Duration.ofMillis(10))
        .<String>retryOnResult(s -> s.equals("busy")).build()).discard(discarded::add).build();
    StepVerifier.withVirtualTime(() -> r.call(null, a -> Mono.just(a.attempt() == 1 ? "busy" : "ok")), () -> vts,
        Long.MAX_VALUE).expectSubscription().thenAwait(Duration.ofMillis(10)).expectNext("ok").verifyComplete();
    assertEquals(List.of("outcome SUCCESS 2"), events.outcomes());

    budget.then(BudgetDecision.DENIED_EXHAUSTED);
    StepVerifier.withVirtualTime(() -> r.call(null, a -> Mono.just("busy")), () -> vts, Long.MAX_VALUE)
        .expectSubscription()
        .consumeErrorWith(e -> assertEquals("busy", assertInstanceOf(RetryBudgetExhaustedException.class, e).lastResult()))
        .verify(VERIFY);
    assertEquals(List.of("busy", "busy"), discarded);
  }

  @Test
  void eachSubscriptionIsACallWithItsFirstAttemptCountedOnce() {
    BudgetRetry r = retry(RetryPolicy.builder().build()).build();
    Mono<String> ok = Mono.just("ok").retryWhen(r);
    StepVerifier.create(ok).expectNext("ok").verifyComplete();
    StepVerifier.create(ok).expectNext("ok").verifyComplete();
    StepVerifier.create(r.apply(Mono.just("ok"))).expectNext("ok").verifyComplete();
    assertEquals(3, budget.firstAttempts.get());
    assertEquals(0, budget.acquires.get());
    assertEquals(List.of("outcome SUCCESS 1"), events.outcomes(), "retryWhen cannot see a success; apply can");
  }

  @Test
  void aNonIdempotentCallIsRetriedOnlyWithAKeyTheSameOnEveryAttempt() {
    RetryPolicy policy = RetryPolicy.builder().maxAttempts(3).backoff(Duration.ofMillis(1), Duration.ofMillis(1))
        .idempotent(false).build();
    BudgetRetry r = retry(policy).build();
    List<String> keys = new CopyOnWriteArrayList<>();
    StepVerifier.withVirtualTime(() -> r.call(null, a -> {
      keys.add(a.idempotencyKey());
      return Mono.<String>error(new IOException("reset"));
    }), () -> vts, Long.MAX_VALUE).expectSubscription().thenAwait(Duration.ofSeconds(1))
        .expectError(IOException.class).verify(VERIFY);
    assertEquals(3, keys.size());
    assertEquals(1, keys.stream().distinct().count(), "one key for the call: " + keys);

    StepVerifier.withVirtualTime(() -> r.call(null, a -> Mono.<String>error(new IOException("reset"))), () -> vts,
        Long.MAX_VALUE).expectSubscription().expectError(IOException.class).verify(VERIFY);
    assertTrue(events.outcomes().contains("outcome NOT_IDEMPOTENT 1"), "no key, no retry: " + events.outcomes());
  }

  @Test
  void aListenerThatThrowsChangesNothing() {
    BudgetRetry r = retry(RetryPolicy.builder().maxAttempts(2).backoff(Duration.ofMillis(1), Duration.ofMillis(1)).build())
        .listener(new RetryListener() {
          @Override
          public void onAttempt(int attempt) {
            throw new IllegalStateException("listener bug");
          }
        }).build();
    StepVerifier.withVirtualTime(() -> pushingBack(Duration.ZERO).retryWhen(r), () -> vts, Long.MAX_VALUE)
        .expectSubscription().thenAwait(Duration.ofMillis(1)).expectNext("ok").verifyComplete();
    assertSame(2, subscriptions.get());
  }
}
