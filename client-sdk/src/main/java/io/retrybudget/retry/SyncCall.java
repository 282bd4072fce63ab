package io.retrybudget.retry;

import io.retrybudget.budget.BudgetDecision;
import java.util.concurrent.Callable;

/**
 * The synchronous path: a loop on the caller's thread over the same planner steps as the
 * asynchronous state machine (judge, next, afterBudget, attemptBudgetNanos). The clock is re-read
 * before every attempt after the first, so a sleeper that wakes late never starts an attempt the
 * deadline leaves no time for. A successful first attempt reads no clock and allocates nothing.
 */
final class SyncCall {
  private SyncCall() {}

  /** For an attempt function (with a context) or a plain callable (without). */
  static <T> T run(RetryExecutor x, String idempotencyKey, AttemptFunction<T> function, Callable<T> callable)
      throws Exception {
    AttemptContext context = function != null ? new AttemptContext(idempotencyKey) : null;
    boolean timed = x.policy.deadline() != null;
    long start = timed ? x.nanoClock.getAsLong() : 0;
    long previousDelay = 0;
    T value = null;
    Throwable failure = null;
    for (int attempt = 1; ; attempt++) {
      if (attempt == 1) {
        if (x.budget != null) {
          x.budget.recordFirstAttempt(); // the executor is the only place that counts a call's first attempt
        }
      } else if (timed && x.planner.attemptBudgetNanos(x.nanoClock.getAsLong() - start) <= 0) {
        return stop(x, RetryOutcome.DEADLINE, attempt - 1, value, failure); // woke too late for another attempt
      }
      if (context != null) {
        context.startAttempt(attempt);
      }
      x.listeners.onAttempt(attempt);
      value = null;
      failure = null;
      try {
        value = context != null ? function.apply(context) : callable.call();
      } catch (Throwable t) {
        failure = t;
      }
      RetryPlanner.Verdict verdict;
      try {
        verdict = x.planner.judge(value, failure); // the policy's own code: what it throws ends the call
      } catch (RuntimeException | Error e) {
        x.listeners.onOutcome(RetryOutcome.ERROR, attempt);
        throw e;
      }
      if (verdict == RetryPlanner.Verdict.ACCEPTED) {
        x.listeners.onOutcome(RetryOutcome.SUCCESS, attempt); // the common case: no clock, no random draw
        return value;
      }
      RetryPlanner.Plan plan = x.planner.next(verdict, attempt, previousDelay,
          timed ? x.nanoClock.getAsLong() - start : 0, context != null && context.hasIdempotencyKey(),
          verdict.retryable() ? x.random.getAsDouble() : 0);
      if (!plan.retry()) {
        return stop(x, plan.stop(), attempt, value, failure);
      }
      if (x.budget != null) {
        BudgetDecision decision;
        try {
          decision = x.budget.acquireBlocking();
        } catch (RuntimeException e) {
          decision = null; // no answer counts as a refusal, as on the asynchronous path
        }
        switch (x.planner.afterBudget(decision, timed ? x.nanoClock.getAsLong() - start : 0, plan.delayNanos())) {
          case DENIED: {
            BudgetDecision d = decision != null ? decision : BudgetDecision.DENIED_FALLBACK;
            x.listeners.onBudgetDenied(d);
            x.listeners.onOutcome(RetryOutcome.BUDGET_EXHAUSTED, attempt);
            throw new RetryBudgetExhaustedException(x.budget.name(), d, failure, value);
          }
          case DEADLINE:
            return stop(x, RetryOutcome.DEADLINE, attempt, value, failure); // the budget took the sleep's time
          default:
            break;
        }
      }
      x.listeners.onRetryScheduled(attempt + 1, plan.delayNanos(), failure);
      try {
        x.sleeper.sleepNanos(plan.delayNanos());
      } catch (InterruptedException e) {
        x.listeners.onOutcome(RetryOutcome.CANCELLED, attempt);
        throw e;
      }
      previousDelay = plan.delayNanos();
    }
  }

  private static <T> T stop(RetryExecutor x, RetryOutcome why, int attempts, T value, Throwable failure)
      throws Exception {
    x.listeners.onOutcome(why, attempts);
    if (failure == null) {
      return value;
    }
    if (failure instanceof Exception e) {
      throw e;
    }
    if (failure instanceof Error e) {
      throw e;
    }
    throw new RuntimeException(failure);
  }
}
