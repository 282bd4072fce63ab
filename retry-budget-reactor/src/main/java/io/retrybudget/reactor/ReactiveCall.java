package io.retrybudget.reactor;

import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.retry.AttemptTimeoutException;
import io.retrybudget.retry.RetryBudgetExhaustedException;
import io.retrybudget.retry.RetryOutcome;
import io.retrybudget.retry.RetryPlanner;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.util.retry.Retry;

/**
 * One subscription of a {@link BudgetRetry}: its attempts, its last answer and its outcome, and the
 * companion that {@code retryWhen} asks after every failed attempt. Every decision is the SDK's
 * {@link RetryPlanner}'s (the one the executor's sync loop and async state machine use): judge the
 * answer, plan the retry (backoff with jitter, deadline, server delay, idempotency), ask the budget,
 * then sleep on the retry's scheduler. The companion handles one failure at a time ({@code concatMap});
 * the outcome is reported once, by whichever of the companion, the caller's cancel or the success
 * gets there first.
 */
final class ReactiveCall extends Retry {
  private enum Phase { RUNNING, DECIDING, BACKING_OFF }

  private final BudgetRetry retry;
  private final RetryPlanner planner;
  private final long start;
  private volatile String key;
  private volatile int attempts = 1;
  private volatile Phase phase = Phase.RUNNING;
  private long previousDelay;
  private Throwable lastSignal; // what the call ends with when it ends with its last answer
  private Throwable lastFailure;
  private Object lastValue;
  private Object held; // a retried result not yet discarded (a response whose body is still open)
  private boolean ended;

  /** Counts the call's first attempt in the budget, once, as the SDK executor does. */
  ReactiveCall(BudgetRetry retry, String ownKey) {
    this.retry = retry;
    this.planner = retry.planner;
    this.key = ownKey;
    this.start = retry.nanoClock.getAsLong();
    if (retry.budget != null) {
      retry.budget.recordFirstAttempt();
    }
    retry.listeners.onAttempt(1);
  }

  long now() {
    return retry.nanoClock.getAsLong();
  }

  private long elapsed() {
    return now() - start;
  }

  String idempotencyKey() {
    String k = key;
    if (k == null) {
      synchronized (this) {
        k = key;
        if (k == null) {
          k = UUID.randomUUID().toString();
          key = k;
        }
      }
    }
    return k;
  }

  boolean hasIdempotencyKey() {
    return key != null;
  }

  // ---- the attempt (BudgetRetry.call only) -----------------------------------------------

  /**
   * Starts the current attempt: bounded by what the attempt timeout and the deadline leave
   * (cancelled when that runs out), its result judged by the policy once.
   */
  <T> Mono<T> attempt(Function<ReactiveAttempt, ? extends Mono<T>> function) {
    long now = now();
    long allowed = planner.attemptBudgetNanos(now - start);
    long answerBy = allowed == Long.MAX_VALUE ? Long.MAX_VALUE : saturatedAdd(now, allowed);
    Mono<T> attempt;
    try {
      attempt = function.apply(new ReactiveAttempt(this, attempts, answerBy));
    } catch (Throwable t) {
      return Mono.error(t); // judged as the attempt's failure, as the executor judges a throwing attempt
    }
    if (allowed != Long.MAX_VALUE) {
      Duration deadline = retry.policy.deadline();
      boolean deadlineBinds = deadline != null && now + allowed - (start + deadline.toNanos()) >= 0;
      attempt = attempt.timeout(Duration.ofNanos(allowed), Mono.error(() -> deadlineBinds
          ? AttemptSignal.deadline(new AttemptTimeoutException(deadline))
          : new AttemptTimeoutException(Duration.ofNanos(allowed))), retry.scheduler);
    }
    return new JudgedAttempt<>(attempt, this::judge);
  }

  /** Null for a result the policy accepts; else what carries it (or the policy's own failure) to the companion. */
  private Throwable judge(Object value) {
    RetryPlanner.Verdict verdict;
    try {
      verdict = planner.judge(value, null);
    } catch (Throwable t) {
      retry.discard(value);
      return AttemptSignal.policyError(t);
    }
    return verdict.retryable() ? AttemptSignal.result(value, verdict) : null;
  }

  // ---- the companion ---------------------------------------------------------------------

  @Override
  public Publisher<?> generateCompanion(Flux<RetrySignal> signals) {
    return signals.concatMap(s -> decide(s.failure())).doOnCancel(this::companionCancelled);
  }

  /** After a failed attempt: a retry's go-ahead (after the budget and the backoff), or the call's end. */
  private Mono<Integer> decide(Throwable signal) {
    phase = Phase.DECIDING;
    RetryPlanner.Verdict verdict;
    Object value = null;
    Throwable failure = signal;
    if (signal instanceof AttemptSignal s) {
      switch (s.kind) {
        case POLICY_ERROR:
          return endWith(RetryOutcome.ERROR, s.getCause());
        case DEADLINE:
          return endWith(RetryOutcome.DEADLINE, s.getCause());
        default:
          value = s.value;
          verdict = s.verdict;
          failure = null;
      }
    } else {
      try {
        verdict = planner.judge(null, signal);
      } catch (Throwable t) {
        return endWith(RetryOutcome.ERROR, t);
      }
    }
    synchronized (this) {
      lastSignal = signal;
      lastFailure = failure;
      lastValue = value;
      held = value;
    }
    RetryPlanner.Plan plan;
    try {
      double random = verdict.retryable() ? retry.random.getAsDouble() : 0;
      plan = planner.next(verdict, attempts, previousDelay, elapsed(), hasIdempotencyKey(), random);
    } catch (Throwable t) {
      return endWith(RetryOutcome.ERROR, t);
    }
    if (!plan.retry()) {
      return endWithLast(plan.stop());
    }
    long delay = plan.delayNanos();
    if (retry.budget == null) {
      return backOff(delay);
    }
    return askBudget().flatMap(decision -> {
      switch (planner.afterBudget(decision, elapsed(), delay)) {
        case DENIED:
          return deny(decision);
        case DEADLINE:
          return endWithLast(RetryOutcome.DEADLINE); // the budget call took the time the sleep needed
        default:
          return backOff(delay);
      }
    });
  }

  /**
   * The budget's answer; no answer (it failed or threw) is a refusal, as in the executor. An answer
   * that comes later, on the budget's I/O thread, is handed to the scheduler: nothing of the call
   * runs on Redis's thread.
   */
  private Mono<BudgetDecision> askBudget() {
    CompletionStage<BudgetDecision> stage;
    try {
      stage = retry.budget.acquire();
    } catch (Throwable t) {
      return Mono.just(BudgetDecision.DENIED_FALLBACK);
    }
    CompletableFuture<BudgetDecision> answer;
    try {
      answer = stage.toCompletableFuture();
    } catch (UnsupportedOperationException notAFuture) {
      CompletableFuture<BudgetDecision> relay = new CompletableFuture<>();
      stage.whenComplete((d, error) -> relay.complete(error == null ? d : null));
      answer = relay;
    }
    if (answer.isDone()) {
      BudgetDecision d = answer.isCompletedExceptionally() ? null : answer.getNow(null);
      return Mono.just(d == null ? BudgetDecision.DENIED_FALLBACK : d);
    }
    return Mono.fromFuture(answer, true) // a permit request is never cancelled: it may be shared
        .onErrorReturn(BudgetDecision.DENIED_FALLBACK)
        .defaultIfEmpty(BudgetDecision.DENIED_FALLBACK)
        .publishOn(retry.scheduler);
  }

  private Mono<Integer> deny(BudgetDecision decision) {
    retry.listeners.onBudgetDenied(decision);
    Throwable failure;
    Object value;
    synchronized (this) {
      failure = lastFailure;
      value = lastValue;
    }
    RetryBudgetExhaustedException denied = new RetryBudgetExhaustedException(retry.budget.name(), decision, failure, value);
    if (end(RetryOutcome.BUDGET_EXHAUSTED)) {
      discardHeld(); // the exception carries the result; its resources are given back
    }
    return Mono.error(denied);
  }

  private Mono<Integer> backOff(long delay) {
    previousDelay = delay;
    phase = Phase.BACKING_OFF;
    retry.listeners.onRetryScheduled(attempts + 1, delay, lastFailure);
    return Mono.delay(Duration.ofNanos(delay), retry.scheduler).then(Mono.defer(this::resume));
  }

  /** The backoff is over: the next attempt starts, unless the deadline leaves it no time. */
  private Mono<Integer> resume() {
    if (planner.attemptBudgetNanos(elapsed()) <= 0) {
      return endWithLast(RetryOutcome.DEADLINE); // the timer fired too late for another attempt
    }
    discardHeld(); // only now: a call that ends here instead answers with that result
    int next = attempts + 1;
    attempts = next;
    phase = Phase.RUNNING;
    retry.listeners.onAttempt(next);
    return Mono.just(next);
  }

  private Mono<Integer> endWithLast(RetryOutcome outcome) {
    Throwable last;
    synchronized (this) {
      last = lastSignal;
      held = null; // the caller gets it
    }
    end(outcome);
    return Mono.error(last);
  }

  private Mono<Integer> endWith(RetryOutcome outcome, Throwable failure) {
    end(outcome);
    return Mono.error(failure);
  }

  // ---- the end ---------------------------------------------------------------------------

  /** Reports the outcome unless one was reported already; true when this call did. */
  boolean end(RetryOutcome outcome) {
    synchronized (this) {
      if (ended) {
        return false;
      }
      ended = true;
    }
    retry.listeners.onOutcome(outcome, attempts);
    return true;
  }

  /** The caller cancelled: reported, and a retried result still held is given back. */
  void cancelled() {
    if (end(RetryOutcome.CANCELLED)) {
      discardHeld();
    }
  }

  /**
   * {@code retryWhen} cancels the companion when the call succeeds and when the caller cancels,
   * alike. While the call sleeps or waits for the budget no attempt runs, so it was the caller;
   * while an attempt runs there is no telling (see {@link BudgetRetry}: {@code call} knows).
   */
  private void companionCancelled() {
    if (phase != Phase.RUNNING) {
      cancelled();
    }
  }

  private void discardHeld() {
    Object value;
    synchronized (this) {
      value = held;
      held = null;
    }
    if (value != null) {
      retry.discard(value);
    }
  }

  private static long saturatedAdd(long a, long b) {
    long r = a + b;
    return ((a ^ r) & (b ^ r)) < 0 ? Long.MAX_VALUE - 1 : Math.min(r, Long.MAX_VALUE - 1);
  }
}
