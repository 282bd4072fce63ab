package io.retrybudget.retry;

import io.retrybudget.budget.BudgetDecision;

/**
 * Hooks for metrics and logs; every method has a no-op default. Called on the executor's threads
 * (and the caller's, for a synchronous call). Attach several with repeated
 * {@link RetryExecutor.Builder#listener} calls: each is isolated, so what one throws is logged once
 * ({@link System.Logger}, logger {@code io.retrybudget.retry}) and never reaches the call or the others.
 *
 * <p><b>Events of one call.</b> A listener that keeps no state per call (a counter) receives every
 * call's events itself. One that does (a trace that parents attempt spans to a call span) returns a
 * listener of its own for each call from {@link #onCallStart()}: that call's events go to it, and
 * never to another call's. The order within a call: {@code onCallStart}; then per attempt
 * {@code onAttempt} (or {@code onHedge}), {@code onAttemptSent} and {@code onAttemptEnded}; between rounds
 * {@code onRetryScheduled} or {@code onBudgetDenied}; {@code onOutcome} last, once. On the asynchronous path
 * the events of one call come from several threads, and with hedging two of them may run at once
 * (a hedge sent while the first attempt's answer is told; a hedge sent as the call ends, told after
 * {@code onOutcome}): a listener made per call is thread-safe and ignores what follows
 * {@code onOutcome}.
 */
public interface RetryListener {
  RetryListener NONE = new RetryListener() {};

  /**
   * A call starts, before its first attempt (or ends at once, given no time: then {@link #onOutcome}
   * follows with 0 attempts). Returns the listener this call's events go to: {@code this} (the
   * default, for a listener with no state per call: nothing is allocated) or one made for this call
   * alone. {@code null} or {@link #NONE} leaves this call unobserved by this listener. Called on the
   * caller's thread, so a listener may read the caller's context here (a current span, say).
   */
  default RetryListener onCallStart() {
    return this;
  }

  /** An attempt starts; {@code attempt} is 1 for the first. */
  default void onAttempt(int attempt) {}

  /**
   * The attempt function of attempt {@code attempt} returned, on the thread that told
   * {@link #onAttempt} (or {@link #onHedge}) just before: for a synchronous call the attempt has
   * run, for an asynchronous one its stage is out. It follows every {@code onAttempt} and
   * {@code onHedge}, also when the attempt was not sent after all (the call ended meanwhile), so a
   * listener may make something current on the thread in {@code onAttempt} (a span, for the client
   * library's own instrumentation to nest in) and undo it here.
   */
  default void onAttemptSent(int attempt) {}

  /**
   * Attempt {@code attempt} (a retry or hedge included) answered, failed or timed out, and its
   * answer is the one the executor judges: {@code result} is what it returned (null when it
   * failed), {@code failure} what it failed with (an {@link AttemptTimeoutException} when its
   * timeout cut it). Called before the retry, the outcome or anything else that answer leads to. An
   * attempt still running when the call ends (a hedge that lost, one cut by the deadline, the caller
   * or {@code close()}) is not reported here: {@link #onOutcome} is the last event of its call.
   */
  default void onAttemptEnded(int attempt, Object result, Throwable failure) {}

  /** A retry will run after {@code delayNanos}, because of {@code failure} (or a retryable result). */
  default void onRetryScheduled(int nextAttempt, long delayNanos, Throwable failure) {}

  /** The budget refused a retry (the call then ends with {@link RetryOutcome#BUDGET_EXHAUSTED}). */
  default void onBudgetDenied(BudgetDecision decision) {}

  /** A hedge is sent: attempt {@code attempt} runs beside earlier ones of the same call. */
  default void onHedge(int attempt) {}

  /** A hedge's answer won the call. */
  default void onHedgeWon(int attempt) {}

  /** The budget refused a hedge; the attempts already running go on. */
  default void onHedgeDenied(BudgetDecision decision) {}

  /**
   * The call ended, once per call.
   *
   * @param attempts the attempts the call started, first, retries and hedges included (the same
   *     meaning for {@code call} and {@code callAsync})
   */
  default void onOutcome(RetryOutcome outcome, int attempts) {}
}
