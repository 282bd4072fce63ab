package io.retrybudget.retry;

import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.retry.CallState.Action;
import io.retrybudget.retry.CallState.Attempt;
import io.retrybudget.retry.CallState.Event;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * Runs one asynchronous call: feeds events to its {@link CallState} under the state's monitor (one
 * lock per call) and performs the actions each transition returns outside it — sending attempts,
 * judging their answers (the policy's code), asking the budget, scheduling and cancelling timers,
 * telling listeners, completing the caller's future. An action that throws (a scheduler that
 * refuses a timer) ends the call with that failure instead of leaving it pending.
 */
final class AsyncCall<T> {
  /**
   * The context of every call whose attempts take none (a {@code Supplier}): the state machine asks
   * it only whether the call carries a key, and no attempt ever sees it, so none is made.
   */
  private static final AttemptContext NO_CONTEXT = new AttemptContext(null, () -> 0L);
  private final RetryExecutor x;
  private final Listeners listeners; // this call's: the executor's own unless one keeps state per call
  private final Supplier<? extends CompletionStage<T>> supplier; // the attempts, when they take no context
  private final Function<AttemptContext, ? extends CompletionStage<T>> function; // or when they do
  private final AttemptContext first;
  private final CallState<T> state;
  final CallFuture<T> result = new CallFuture<>(this);
  private List<Action> spareActions; // guarded by state's monitor: one action list reused while no transition holds it

  AsyncCall(RetryExecutor x, Listeners listeners, RetryPolicy policy, RetryPlanner planner,
      Supplier<? extends CompletionStage<T>> supplier, Function<AttemptContext, ? extends CompletionStage<T>> function,
      AttemptContext first, long start, CompletableFuture<T> firstFuture) {
    this.x = x;
    this.listeners = listeners;
    this.supplier = supplier;
    this.function = function;
    this.first = first != null ? first : NO_CONTEXT;
    this.state = new CallState<>(policy, planner, x.hedging, x.budget != null ? x.budget.name() : null,
        this.first, start, firstFuture, !listeners.isEmpty());
  }

  /** @param verdict non-null when the first attempt answered at once with a result the policy retries */
  void start(T value, RetryPlanner.Verdict verdict, double random) {
    fire(verdict == null ? CallState.Start.SENT : new CallState.Start(value, verdict, random));
  }

  void callerCompleted() {
    fire(new CallState.Stop(RetryOutcome.CANCELLED, null));
  }

  void close() {
    fire(new CallState.Stop(RetryOutcome.CLOSED, new IllegalStateException("RetryExecutor closed while the call ran")));
  }

  CallState.Snapshot snapshot() {
    synchronized (state) {
      return state.snapshot();
    }
  }

  /** One transition under the lock, then its actions outside it. */
  private void fire(Event event) {
    List<Action> actions;
    synchronized (state) {
      actions = borrowActions();
      state.transition(event, actions, x.nanoClock.getAsLong());
    }
    perform(actions);
  }

  /**
   * An empty action list: the call's spare one, unless a transition on another thread, or one
   * further up this thread's stack (an attempt answered at once), holds it. Called under the lock.
   */
  private List<Action> borrowActions() {
    List<Action> actions = spareActions;
    spareActions = null;
    return actions != null ? actions : new ArrayList<>(4);
  }

  /** Hands a list whose actions have all been taken back for the call's next transition. */
  private void returnActions(List<Action> actions) {
    actions.clear();
    synchronized (state) {
      spareActions = actions;
    }
  }

  /**
   * Runs the actions in order. The list goes back for reuse before the last one runs: that one
   * (sending an attempt, watching one that answered at once) often fires the next transition.
   */
  private void perform(List<Action> actions) {
    int last = actions.size() - 1;
    for (int i = 0; i < last; i++) {
      performIsolated(actions.get(i));
    }
    Action lastAction = last >= 0 ? actions.get(last) : null;
    returnActions(actions);
    if (lastAction != null) {
      performIsolated(lastAction);
    }
  }

  /** One action; one that throws ends the call with its failure instead of leaving it pending. */
  private void performIsolated(Action action) {
    try {
      perform(action);
    } catch (Throwable t) {
      fire(new CallState.Stop(RetryOutcome.ERROR, t));
    }
  }

  @SuppressWarnings("unchecked")
  private void perform(Action action) {
    if (action instanceof CallState.StartAttempt a) {
      send((Attempt<T>) a.attempt());
    } else if (action instanceof CallState.Watch w) {
      watch((Attempt<T>) w.attempt());
    } else if (action instanceof CallState.Complete c) {
      x.liveCalls.remove(this);
      boolean ours = result.finish((T) c.value(), c.failure());
      listeners.onOutcome(ours ? c.outcome() : RetryOutcome.CANCELLED, c.attempts());
    } else if (action instanceof CallState.CancelAttempt c) {
      c.future().cancel(true);
    } else if (action instanceof CallState.CancelTimer c) {
      c.handle().cancel();
    } else if (action instanceof CallState.Schedule s) {
      schedule(s);
    } else if (action instanceof CallState.AskBudget a) {
      askBudget(a.forHedge(), a.round());
    } else if (action instanceof CallState.Notify n) {
      switch (n.kind()) {
        case RETRY_SCHEDULED -> listeners.onRetryScheduled(n.number(), n.delayNanos(), (Throwable) n.detail());
        case BUDGET_DENIED -> listeners.onBudgetDenied((BudgetDecision) n.detail());
        case HEDGE_DENIED -> listeners.onHedgeDenied((BudgetDecision) n.detail());
        case HEDGE_WON -> listeners.onHedgeWon(n.number());
        case ATTEMPT_ENDED -> {
          CallState.AttemptDone d = (CallState.AttemptDone) n.detail();
          listeners.onAttemptEnded(n.number(), d.value(), d.failure());
        }
      }
    } else {
      throw new IllegalArgumentException("unknown action " + action);
    }
  }

  /** Schedules a timer; one a transition called off before or while it was scheduled is cancelled at once. */
  @SuppressWarnings("unchecked")
  private void schedule(CallState.Schedule s) {
    synchronized (state) {
      if (s.timer().cancelled) {
        return; // called off already (an attempt that answered at once)
      }
    }
    Runnable task = s.event() instanceof CallState.TimeoutDue t
        ? () -> timedOut((Attempt<T>) t.attempt())
        : () -> fire(s.event());
    RetryScheduler.Cancellable handle = x.scheduler.schedule(task, Math.max(0, s.dueNanos() - x.nanoClock.getAsLong()));
    boolean kept;
    synchronized (state) {
      kept = state.scheduled(s.timer(), handle);
    }
    if (!kept) {
      handle.cancel();
    }
  }

  /**
   * Sends a retry or hedge (the first attempt was sent by {@code RetryExecutor.callAsync}), unless
   * the call or its round ended since the transition that reserved it (the caller, a listener, an
   * earlier action of the same batch): looked at before the listeners are told and again right
   * before the attempt function runs. What ends the call after that is caught by {@code sent}.
   */
  private void send(Attempt<T> attempt) {
    if (!stillRunning(attempt)) {
      return;
    }
    if (attempt.hedge) {
      listeners.onHedge(attempt.number);
    } else {
      listeners.onAttempt(attempt.number);
    }
    if (!stillRunning(attempt)) {
      listeners.onAttemptSent(attempt.number);
      return; // a listener (a client-side limiter, say) or another thread ended the call: send nothing
    }
    CompletableFuture<T> future;
    try {
      CompletionStage<T> stage = function != null
          ? function.apply(first.next(attempt.number, attempt.hedge, attempt.number - 1,
              AttemptContext.answerBy(attempt.startedNanos, attempt.allowedNanos))) : supplier.get();
      future = stage.toCompletableFuture();
    } catch (Throwable t) {
      future = CompletableFuture.failedFuture(t);
    }
    listeners.onAttemptSent(attempt.number);
    List<Action> timeout;
    boolean kept;
    synchronized (state) {
      timeout = borrowActions();
      kept = state.sent(attempt, future, timeout);
    }
    if (!kept) {
      returnActions(timeout);
      future.cancel(true); // the call or round ended while this attempt was being sent
      return;
    }
    perform(timeout);
    watch(attempt);
  }

  private boolean stillRunning(Attempt<T> attempt) {
    synchronized (state) {
      return state.isRunning(attempt);
    }
  }

  /**
   * Judges the attempt's answer when it comes: at once if it came already. {@code handle}, not
   * {@code whenComplete}: the latter wraps a failure in a new {@link CompletionException} (a stack
   * trace and a message) for the dependent future nobody reads.
   */
  private void watch(Attempt<T> attempt) {
    CompletableFuture<T> future = attempt.future;
    if (future.isDone() && !future.isCompletedExceptionally()) {
      settled(attempt, future.join(), null, false); // no dependent future for an answer already there
      return;
    }
    future.handle((value, error) -> {
      settled(attempt, value, unwrap(error), false);
      return null;
    });
  }

  private void timedOut(Attempt<T> attempt) {
    settled(attempt, null, new AttemptTimeoutException(java.time.Duration.ofNanos(attempt.allowedNanos)), true);
  }

  /** An attempt's answer: judged outside the lock (the policy's code), then handed to the transition. */
  private void settled(Attempt<T> attempt, T value, Throwable failure, boolean timedOut) {
    synchronized (state) {
      if (!state.isRunning(attempt)) {
        return; // stale: do not run the policy's code for it
      }
    }
    RetryPlanner.Verdict verdict;
    double random;
    try {
      verdict = x.planner.judge(value, failure);
      random = verdict.retryable() ? x.random.getAsDouble() : 0;
    } catch (Throwable t) {
      fire(new CallState.Stop(RetryOutcome.ERROR, t));
      return;
    }
    fire(new CallState.AttemptDone(attempt, value, failure, verdict, random, timedOut));
  }

  /**
   * Asks the budget. The answer is acted on at once when it came on this thread (a local budget,
   * a cached refusal), else on the scheduler, so neither listeners, hedges nor the caller's
   * continuations run on Redis's I/O thread or a JDK timer thread. No answer counts as a refusal.
   */
  private void askBudget(boolean forHedge, int askedRound) {
    CompletionStage<BudgetDecision> answer;
    try {
      answer = x.budget.acquire();
    } catch (Throwable t) {
      answer = CompletableFuture.completedFuture(null);
    }
    Thread asking = Thread.currentThread();
    answer.whenComplete((decision, error) -> {
      Runnable deliver = () -> fire(new CallState.BudgetAnswered(forHedge, askedRound, error == null ? decision : null));
      if (Thread.currentThread() == asking) {
        deliver.run();
        return;
      }
      try {
        x.scheduler.schedule(deliver, 0);
      } catch (RuntimeException rejected) {
        deliver.run(); // the scheduler is shut down: finish here rather than never
      }
    });
  }

  private static Throwable unwrap(Throwable error) {
    while ((error instanceof CompletionException || error instanceof ExecutionException) && error.getCause() != null) {
      error = error.getCause();
    }
    return error;
  }
}
