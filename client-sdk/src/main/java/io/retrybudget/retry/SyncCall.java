package io.retrybudget.retry;

import io.retrybudget.budget.BudgetDecision;
import java.util.concurrent.Callable;

/**
 * The synchronous path: a loop on the caller's thread over the same planner steps as the
 * asynchronous state machine (judge, next, afterBudget, attemptBudgetNanos). The clock is re-read
 * before every attempt after the first, so a sleeper that wakes late never starts an attempt the
 * deadline leaves no time for. Interruption is looked at after every failed attempt and before
 * every retry, not only by the sleep (which does not look at it for a 0 ns delay). Whatever user
 * code outside the attempt throws (the sleeper, the random source, the budget, a predicate) is
 * reported as {@code ERROR} and rethrown: exactly one outcome per call. A successful first attempt
 * allocates nothing (and reads the clock only when the policy has a deadline).
 */
final class SyncCall {
  private SyncCall() {}

  /** For an attempt function (with a context) or a plain callable (without). */
  static <T> T run(RetryExecutor x, RetryPolicy policy, RetryPlanner planner, String idempotencyKey,
      AttemptFunction<T> function, Callable<T> callable) throws Exception {
    int started = 0; // attempts started: what an ERROR outcome reports
    boolean reported = false; // whether the outcome has been told (then what follows is only rethrown)
    Listeners listeners = x.listeners.forCall(); // the executor's own unless one keeps state per call
    try {
      AttemptContext context = function != null ? new AttemptContext(idempotencyKey, x.nanoClock) : null;
      boolean timed = policy.deadline() != null;
      // what X-Request-Deadline-Ms carries: the attempt timeout cut to what the deadline leaves (this
      // blocking path cannot cut an attempt at its timeout; the server is told it all the same)
      boolean bounded = context != null && (timed || policy.attemptTimeout() != null);
      long start = timed ? x.nanoClock.getAsLong() : 0;
      long previousDelay = 0;
      T value = null;
      Throwable failure = null;
      for (int attempt = 1; ; attempt++) {
        if (attempt == 1) {
          if (x.budget != null) {
            x.budget.recordFirstAttempt(); // the executor is the only place that counts a call's first attempt
          }
        } else if (Thread.interrupted()) {
          // interrupted while the budget was asked or during a sleep that did not look (a 0 ns one)
          reported = true;
          listeners.onOutcome(RetryOutcome.CANCELLED, started);
          throw new InterruptedException("interrupted between attempts");
        } else if (timed && planner.attemptBudgetNanos(x.nanoClock.getAsLong() - start) <= 0) {
          reported = true;
          return stop(listeners, RetryOutcome.DEADLINE, started, value, failure); // woke too late for another attempt
        }
        if (context != null) {
          if (bounded) {
            long now = x.nanoClock.getAsLong();
            context.startAttempt(attempt, AttemptContext.answerBy(now, planner.attemptBudgetNanos(timed ? now - start : 0)));
          } else {
            context.startAttempt(attempt);
          }
        }
        listeners.onAttempt(attempt);
        value = null;
        failure = null;
        started = attempt;
        try {
          value = context != null ? function.apply(context) : callable.call();
        } catch (Throwable t) {
          failure = t;
        }
        listeners.onAttemptSent(attempt);
        listeners.onAttemptEnded(attempt, value, failure);
        if (failure != null && (failure instanceof InterruptedException || Thread.currentThread().isInterrupted())) {
          // the caller interrupted this thread (a ClosedByInterruptException, say): no predicate may retry
          // that; an InterruptedException is rethrown as JDK methods do, having cleared the flag
          reported = true;
          listeners.onOutcome(RetryOutcome.CANCELLED, started);
          return stop(failure);
        }
        RetryPlanner.Verdict verdict = planner.judge(value, failure); // the policy's code: what it throws ends the call
        if (verdict == RetryPlanner.Verdict.ACCEPTED) {
          listeners.onOutcome(RetryOutcome.SUCCESS, attempt); // the common case: no clock, no random draw
          return value;
        }
        RetryPlanner.Plan plan = planner.next(verdict, attempt, previousDelay,
            timed ? x.nanoClock.getAsLong() - start : 0, context != null && context.hasIdempotencyKey(),
            verdict.retryable() ? x.random.getAsDouble() : 0);
        if (!plan.retry()) {
          reported = true;
          return stop(listeners, plan.stop(), attempt, value, failure);
        }
        if (x.budget != null) {
          BudgetDecision decision;
          try {
            decision = x.budget.acquireBlocking();
          } catch (RuntimeException e) {
            decision = null; // no answer counts as a refusal, as on the asynchronous path
          }
          switch (planner.afterBudget(decision, timed ? x.nanoClock.getAsLong() - start : 0, plan.delayNanos())) {
            case DENIED: {
              BudgetDecision d = decision != null ? decision : BudgetDecision.DENIED_FALLBACK;
              listeners.onBudgetDenied(d);
              reported = true;
              listeners.onOutcome(RetryOutcome.BUDGET_EXHAUSTED, attempt);
              throw new RetryBudgetExhaustedException(x.budget.name(), d, failure, value);
            }
            case DEADLINE:
              reported = true;
              return stop(listeners, RetryOutcome.DEADLINE, attempt, value, failure); // the budget took the sleep's time
            default:
              break;
          }
        }
        listeners.onRetryScheduled(attempt + 1, plan.delayNanos(), failure);
        try {
          x.sleeper.sleepNanos(plan.delayNanos());
        } catch (InterruptedException e) {
          reported = true;
          listeners.onOutcome(RetryOutcome.CANCELLED, attempt);
          throw e;
        }
        previousDelay = plan.delayNanos();
      }
    } catch (RuntimeException | Error e) {
      if (!reported) {
        // user code outside the attempt (sleeper, random source, budget, predicate, clock) failed
        listeners.onOutcome(RetryOutcome.ERROR, started);
      }
      throw e;
    }
  }

  private static <T> T stop(Listeners listeners, RetryOutcome why, int attempts, T value, Throwable failure)
      throws Exception {
    listeners.onOutcome(why, attempts);
    return failure == null ? value : stop(failure);
  }

  /** Rethrows an attempt's failure as it was thrown. */
  private static <T> T stop(Throwable failure) throws Exception {
    if (failure instanceof Exception e) {
      throw e;
    }
    if (failure instanceof Error e) {
      throw e;
    }
    throw new RuntimeException(failure);
  }
}
