package io.retrybudget.retry;

import io.retrybudget.budget.BudgetDecision;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * One asynchronous call as an explicit state machine.
 *
 * <p><b>State</b> (all fields under {@code this}): a phase, the current round, the attempts of that
 * round still running, the timers armed (backoff, hedge, deadline, one timeout per attempt), the
 * budget request waited for, the last answer. A round starts one attempt and, with hedging, up to
 * {@code maxHedges} more while it runs; when every attempt of a round has failed retryably the
 * planner decides, the budget is asked (ASKING), the backoff timer runs (BACKING_OFF) and its firing
 * starts the next round. The first success, a fatal failure, a refusal, the deadline, the caller or
 * {@code close()} end the call (ENDED).
 *
 * <p><b>Transitions</b>: {@link #step} maps (state, event) to the new state and a list of
 * {@link Action}s, under the lock; {@link #fire} then performs the actions outside it — user code
 * (attempts, listeners), budget calls, scheduling, completing the future. An event of a round that
 * has ended (a late budget answer, a timer called off too late, an attempt already cut) does nothing:
 * timers are recognised by identity, budget answers by phase and round, attempts by membership of
 * the running set.
 *
 * <p><b>Liveness invariant</b>, checked after every transition ({@link #live}): a call that is not
 * ENDED has something outstanding that will produce an event — RUNNING has at least one attempt
 * running, ASKING one budget request, BACKING_OFF its backoff timer. A transition that would break
 * it ends the call instead (with {@link IllegalStateException}). With a deadline, one call-level
 * timer is armed from the start as a backstop: the call ends by its deadline plus the scheduler's
 * lateness, whatever else is late.
 */
final class AsyncCall<T> {
  enum Phase { NEW, RUNNING, ASKING, BACKING_OFF, ENDED }

  /** A timer of the call: armed in a transition, scheduled by an action, recognised by identity. */
  static final class Timer {
    RetryScheduler.Cancellable handle; // guarded by the call
    boolean cancelled; // guarded by the call
  }

  final class Attempt {
    final int number;
    final boolean hedge;
    final int round;
    final long startedNanos;
    final long allowedNanos;
    CompletableFuture<T> future; // guarded by the call
    Timer timeout; // guarded by the call

    Attempt(int number, boolean hedge, int round, long startedNanos, long allowedNanos) {
      this.number = number;
      this.hedge = hedge;
      this.round = round;
      this.startedNanos = startedNanos;
      this.allowedNanos = allowedNanos;
    }
  }

  // ---- events ------------------------------------------------------------------------------
  interface Event {}

  /**
   * The call starts with its first attempt already sent (by {@code RetryExecutor.callAsync}, on the
   * caller's thread); {@code verdict} is non-null when that attempt had already answered with a
   * result the policy retries (judged there once, never twice).
   */
  record Start(Object value, RetryPlanner.Verdict verdict, double random) implements Event {}

  /** An attempt answered, failed or timed out; the verdict was reached outside the lock. */
  record AttemptDone(AsyncCall<?>.Attempt attempt, Object value, Throwable failure, RetryPlanner.Verdict verdict,
      double random, boolean timedOut) implements Event {}

  record HedgeDue(Timer timer) implements Event {}

  record BudgetAnswered(boolean forHedge, int round, BudgetDecision decision) implements Event {}

  record BackoffOver(Timer timer) implements Event {}

  record DeadlineReached(Timer timer) implements Event {}

  /** The caller, {@code close()} or a failing step ends the call. */
  record Stop(RetryOutcome why, Throwable failure) implements Event {}

  // ---- actions -----------------------------------------------------------------------------
  interface Action {}

  record StartAttempt(AsyncCall<?>.Attempt attempt) implements Action {}

  record AskBudget(boolean forHedge, int round) implements Action {}

  /** Arms {@code timer} to fire {@code event} at {@code dueNanos} on the executor's clock. */
  record Schedule(Timer timer, long dueNanos, Runnable task) implements Action {}

  /** Listens for the answer of an attempt whose future is set. */
  record Watch(AsyncCall<?>.Attempt attempt) implements Action {}

  record CancelTimer(RetryScheduler.Cancellable handle) implements Action {}

  record CancelAttempt(CompletableFuture<?> future) implements Action {}

  record Complete(Object value, Throwable failure, RetryOutcome outcome, int attempts) implements Action {}

  record Notify(int kind, int number, long delayNanos, Object detail) implements Action {
    static final int RETRY_SCHEDULED = 0;
    static final int BUDGET_DENIED = 1;
    static final int HEDGE_DENIED = 2;
    static final int HEDGE_WON = 3;
  }

  /** What a test sees of the state, read under the lock. */
  record Snapshot(Phase phase, int round, int running, boolean runningAllInRound, int budgetWaits,
      boolean backoffArmed, boolean hedgeArmed, int attemptTimersArmed, int attempts) {}

  // ---- wiring (immutable) ------------------------------------------------------------------
  private final RetryExecutor x;
  private final Supplier<? extends CompletionStage<T>> supplier; // the attempts, when they take no context
  private final Function<AttemptContext, ? extends CompletionStage<T>> function; // or when they do
  private final AttemptContext first;
  private final long start;
  private final CompletableFuture<T> firstFuture;
  final CallFuture<T> result = new CallFuture<>(this);

  // ---- state (guarded by this) -------------------------------------------------------------
  private Phase phase = Phase.NEW;
  private int round;
  private int attempts;
  private int hedgesInRound;
  private long previousDelay;
  private long plannedDelay;
  private final List<Attempt> running = new ArrayList<>(2);
  private Timer backoff;
  private Timer hedgeTimer;
  private Timer deadline;
  private int hedgeAskRound; // the round whose hedge waits for the budget, 0 for none
  private Object lastValue;
  private Throwable lastFailure;

  AsyncCall(RetryExecutor x, Supplier<? extends CompletionStage<T>> supplier,
      Function<AttemptContext, ? extends CompletionStage<T>> function, AttemptContext first, long start,
      CompletableFuture<T> firstFuture) {
    this.x = x;
    this.supplier = supplier;
    this.function = function;
    this.first = first != null ? first : new AttemptContext(null);
    this.start = start;
    this.firstFuture = firstFuture;
  }

  /** @param verdict non-null when the first attempt answered at once with a retryable result */
  void start(T value, RetryPlanner.Verdict verdict, double random) {
    fire(new Start(value, verdict, random));
  }

  void callerCompleted() {
    fire(new Stop(RetryOutcome.CANCELLED, null));
  }

  void close() {
    fire(new Stop(RetryOutcome.CLOSED, new IllegalStateException("RetryExecutor closed while the call ran")));
  }

  /** Runs one transition under the lock, then its actions outside it. */
  void fire(Event event) {
    List<Action> actions;
    synchronized (this) {
      actions = new ArrayList<>(4);
      try {
        step(event, actions);
      } catch (RuntimeException | Error bug) {
        if (phase != Phase.ENDED) {
          end(actions, RetryOutcome.ERROR, null, bug);
        }
      }
      if (!live()) {
        end(actions, RetryOutcome.ERROR, null, new IllegalStateException(
            "retry executor: a call in phase " + phase + " with nothing outstanding", lastFailure));
      }
    }
    for (int i = 0; i < actions.size(); i++) {
      try {
        perform(actions.get(i));
      } catch (Throwable t) {
        // a refused timer (scheduler shut down) or a bug: end the call rather than leave it pending
        fire(new Stop(RetryOutcome.ERROR, t));
      }
    }
  }

  /** The liveness invariant (see the class comment). */
  private boolean live() {
    switch (phase) {
      case RUNNING:
        return !running.isEmpty();
      case BACKING_OFF:
        return backoff != null;
      default:
        return true; // NEW: Start follows at once; ASKING: its request is out by construction; ENDED
    }
  }

  // ---- the transition function -------------------------------------------------------------
  private void step(Event event, List<Action> out) {
    if (phase == Phase.ENDED) {
      return; // nothing changes an ended call
    }
    long now = x.nanoClock.getAsLong();
    if (event instanceof Start e) {
      if (phase != Phase.NEW) {
        return;
      }
      phase = Phase.RUNNING;
      round = 1;
      attempts = 1;
      Attempt firstAttempt = new Attempt(1, false, 1, start, x.planner.attemptBudgetNanos(0));
      firstAttempt.future = firstFuture;
      running.add(firstAttempt);
      if (x.policy.deadline() != null) {
        deadline = new Timer();
        DeadlineReached reached = new DeadlineReached(deadline);
        out.add(new Schedule(deadline, start + x.policy.deadline().toNanos(), () -> fire(reached)));
      }
      if (e.verdict() != null) {
        attemptDone(new AttemptDone(firstAttempt, e.value(), null, e.verdict(), e.random(), false), out, now);
        return;
      }
      armAttemptTimeout(out, firstAttempt);
      out.add(new Watch(firstAttempt));
      armHedge(out, now);
    } else if (event instanceof AttemptDone e) {
      attemptDone(e, out, now);
    } else if (event instanceof BudgetAnswered e) {
      if (e.forHedge()) {
        hedgeAnswered(e, out, now);
      } else {
        retryAnswered(e, out, now);
      }
    } else if (event instanceof BackoffOver e) {
      if (phase != Phase.BACKING_OFF || backoff != e.timer()) {
        return; // called off, or a stale timer
      }
      backoff = null;
      phase = Phase.RUNNING;
      round++;
      hedgesInRound = 0;
      if (!launch(out, false, now)) {
        // the timer fired late, past the time an attempt needs: end now, not never
        endWithLast(out, RetryOutcome.DEADLINE);
        return;
      }
      armHedge(out, now);
    } else if (event instanceof HedgeDue e) {
      if (phase != Phase.RUNNING || hedgeTimer != e.timer()) {
        return;
      }
      hedgeTimer = null;
      if (x.budget == null) {
        if (launch(out, true, now)) {
          armHedge(out, now);
        }
      } else {
        hedgeAskRound = round;
        out.add(new AskBudget(true, round));
      }
    } else if (event instanceof DeadlineReached e) {
      if (deadline != e.timer()) {
        return;
      }
      deadline = null;
      if (!running.isEmpty()) {
        end(out, RetryOutcome.DEADLINE, null, new AttemptTimeoutException(x.policy.deadline()));
      } else {
        endWithLast(out, RetryOutcome.DEADLINE);
      }
    } else if (event instanceof Stop e) {
      end(out, e.why(), null, e.failure());
    } else {
      throw new IllegalArgumentException("unknown event " + event);
    }
  }

  @SuppressWarnings("unchecked")
  private void attemptDone(AttemptDone e, List<Action> out, long now) {
    Attempt attempt = (Attempt) e.attempt();
    if (phase != Phase.RUNNING || !running.remove(attempt)) {
      return; // cut by its timeout already, a loser cancelled, or of a round that has ended
    }
    if (e.timedOut()) {
      out.add(new CancelAttempt(attempt.future));
    } else {
      cancel(out, attempt.timeout);
    }
    lastValue = e.value();
    lastFailure = e.failure();
    RetryPlanner.Plan plan = x.planner.next(e.verdict(), attempts, previousDelay, now - start,
        first.hasIdempotencyKey(), e.random());
    if (!plan.endsRound() && !running.isEmpty()) {
      return; // a non-fatal failure waits for the attempts still running
    }
    if (plan.stop() == RetryOutcome.SUCCESS && x.hedging != null) {
      x.hedging.recordLatency(now - attempt.startedNanos);
      // the attempts it beat took at least this long: without them the estimate forgets the slow
      // tail that hedging cuts off, and hedges ever earlier
      for (Attempt loser : running) {
        x.hedging.recordLatency(now - loser.startedNanos);
      }
    }
    if (plan.stop() == RetryOutcome.SUCCESS && attempt.hedge) {
      out.add(new Notify(Notify.HEDGE_WON, attempt.number, 0, null));
    }
    if (!plan.retry()) {
      end(out, plan.stop(), e.value(), e.failure());
      return;
    }
    cancel(out, hedgeTimer);
    hedgeTimer = null;
    hedgeAskRound = 0;
    plannedDelay = plan.delayNanos();
    if (x.budget == null) {
      backOff(out, now);
    } else {
      phase = Phase.ASKING;
      out.add(new AskBudget(false, round));
    }
  }

  private void retryAnswered(BudgetAnswered e, List<Action> out, long now) {
    if (phase != Phase.ASKING || round != e.round()) {
      return;
    }
    switch (x.planner.afterBudget(e.decision(), now - start, plannedDelay)) {
      case DENIED: {
        BudgetDecision d = e.decision() != null ? e.decision() : BudgetDecision.DENIED_FALLBACK;
        out.add(new Notify(Notify.BUDGET_DENIED, 0, 0, d));
        end(out, RetryOutcome.BUDGET_EXHAUSTED, null,
            new RetryBudgetExhaustedException(x.budget.name(), d, lastFailure, lastValue));
        return;
      }
      case DEADLINE:
        endWithLast(out, RetryOutcome.DEADLINE); // the budget call took the time the sleep needed
        return;
      default:
        backOff(out, now);
    }
  }

  private void hedgeAnswered(BudgetAnswered e, List<Action> out, long now) {
    if (phase != Phase.RUNNING || round != e.round() || hedgeAskRound != e.round()) {
      return; // the hedge's round ended while the budget thought: never a second round at once
    }
    hedgeAskRound = 0;
    if (e.decision() == null || !e.decision().granted()) {
      // no hedge: the attempts already running keep going
      out.add(new Notify(Notify.HEDGE_DENIED, 0, 0, e.decision() != null ? e.decision() : BudgetDecision.DENIED_FALLBACK));
    } else if (launch(out, true, now)) {
      armHedge(out, now);
    }
  }

  private void backOff(List<Action> out, long now) {
    phase = Phase.BACKING_OFF;
    previousDelay = plannedDelay;
    backoff = new Timer();
    out.add(new Notify(Notify.RETRY_SCHEDULED, attempts + 1, plannedDelay, lastFailure));
    BackoffOver over = new BackoffOver(backoff);
    out.add(new Schedule(backoff, now + plannedDelay, () -> fire(over)));
  }

  /** Starts one attempt of the current round; false when none may start (attempts or time used up). */
  private boolean launch(List<Action> out, boolean hedge, long now) {
    if (attempts >= x.policy.maxAttempts()) {
      return false;
    }
    long allowed = x.planner.attemptBudgetNanos(now - start);
    if (allowed <= 0) {
      return false;
    }
    Attempt attempt = new Attempt(++attempts, hedge, round, now, allowed);
    running.add(attempt);
    if (hedge) {
      hedgesInRound++;
    }
    out.add(new StartAttempt(attempt));
    return true;
  }

  private void armHedge(List<Action> out, long now) {
    if (x.hedging == null || hedgeTimer != null || hedgeAskRound == round || hedgesInRound >= x.hedging.maxHedges()
        || attempts >= x.policy.maxAttempts() || (!x.policy.idempotent() && !first.hasIdempotencyKey())) {
      return;
    }
    hedgeTimer = new Timer();
    HedgeDue due = new HedgeDue(hedgeTimer);
    out.add(new Schedule(hedgeTimer, now + x.hedging.delayNanos(), () -> fire(due)));
  }

  private void endWithLast(List<Action> out, RetryOutcome why) {
    if (attempts == 0) {
      end(out, why, null, new AttemptTimeoutException(
          x.policy.deadline() != null ? x.policy.deadline() : java.time.Duration.ZERO));
    } else {
      end(out, why, lastValue, lastFailure);
    }
  }

  /** ENDED: every timer called off, every attempt cancelled, the future completed (first). */
  private void end(List<Action> out, RetryOutcome why, Object value, Throwable failure) {
    phase = Phase.ENDED;
    out.add(new Complete(value, failure, why, attempts));
    cancel(out, backoff);
    cancel(out, hedgeTimer);
    cancel(out, deadline);
    backoff = hedgeTimer = deadline = null;
    hedgeAskRound = 0;
    for (Attempt a : running) {
      cancel(out, a.timeout);
      if (a.future != null) {
        out.add(new CancelAttempt(a.future));
      }
    }
    running.clear();
  }

  private static void cancel(List<Action> out, Timer timer) {
    if (timer != null && !timer.cancelled) {
      timer.cancelled = true;
      if (timer.handle != null) {
        out.add(new CancelTimer(timer.handle));
      }
    }
  }

  // ---- actions, outside the lock -----------------------------------------------------------
  @SuppressWarnings("unchecked")
  private void perform(Action action) {
    if (action instanceof StartAttempt a) {
      startAttempt((Attempt) a.attempt());
    } else if (action instanceof Complete c) {
      x.liveCalls.remove(this);
      boolean ours = result.finish((T) c.value(), c.failure());
      x.listeners.onOutcome(ours ? c.outcome() : RetryOutcome.CANCELLED, c.attempts());
    } else if (action instanceof CancelAttempt c) {
      c.future().cancel(true);
    } else if (action instanceof CancelTimer c) {
      c.handle().cancel();
    } else if (action instanceof Schedule s) {
      arm(s.timer(), s.dueNanos() - x.nanoClock.getAsLong(), s.task());
    } else if (action instanceof Watch w) {
      watch((Attempt) w.attempt());
    } else if (action instanceof AskBudget a) {
      askBudget(a.forHedge(), a.round());
    } else if (action instanceof Notify n) {
      switch (n.kind()) {
        case Notify.RETRY_SCHEDULED -> x.listeners.onRetryScheduled(n.number(), n.delayNanos(), (Throwable) n.detail());
        case Notify.BUDGET_DENIED -> x.listeners.onBudgetDenied((BudgetDecision) n.detail());
        case Notify.HEDGE_DENIED -> x.listeners.onHedgeDenied((BudgetDecision) n.detail());
        default -> x.listeners.onHedgeWon(n.number());
      }
    } else {
      throw new IllegalArgumentException("unknown action " + action);
    }
  }

  /** Schedules a timer armed by a transition; if a later transition called it off meanwhile, cancels it at once. */
  private void arm(Timer timer, long delayNanos, Runnable task) {
    synchronized (this) {
      if (timer.cancelled) {
        return; // called off before it was scheduled (an attempt that answered at once)
      }
    }
    RetryScheduler.Cancellable handle = x.scheduler.schedule(task, Math.max(0, delayNanos));
    boolean calledOff;
    synchronized (this) {
      calledOff = timer.cancelled;
      if (!calledOff) {
        timer.handle = handle;
      }
    }
    if (calledOff) {
      handle.cancel();
    }
  }

  /** Arms the timeout of an attempt whose future is set and still open (under the lock). */
  private void armAttemptTimeout(List<Action> out, Attempt attempt) {
    if (attempt.allowedNanos != Long.MAX_VALUE && !attempt.future.isDone()) {
      attempt.timeout = new Timer();
      out.add(new Schedule(attempt.timeout, attempt.startedNanos + attempt.allowedNanos, () -> settled(attempt, null,
          new AttemptTimeoutException(java.time.Duration.ofNanos(attempt.allowedNanos)), true)));
    }
  }

  private void watch(Attempt attempt) {
    attempt.future.whenComplete((value, error) -> settled(attempt, value, unwrap(error), false));
  }

  /** A retry or hedge (the first attempt is sent by {@code RetryExecutor.callAsync}). */
  private void startAttempt(Attempt attempt) {
    if (attempt.hedge) {
      x.listeners.onHedge(attempt.number);
    } else {
      x.listeners.onAttempt(attempt.number);
    }
    CompletableFuture<T> future;
    try {
      CompletionStage<T> stage = function != null
          ? function.apply(first.next(attempt.number, attempt.hedge, attempt.number - 1)) : supplier.get();
      future = stage.toCompletableFuture();
    } catch (Throwable t) {
      future = CompletableFuture.failedFuture(t);
    }
    Timer timeout = null;
    boolean stillRunning;
    synchronized (this) {
      stillRunning = running.contains(attempt);
      if (stillRunning) {
        attempt.future = future;
        if (attempt.allowedNanos != Long.MAX_VALUE && !future.isDone()) {
          timeout = attempt.timeout = new Timer();
        }
      }
    }
    if (!stillRunning) {
      future.cancel(true); // the call ended while this attempt was being started
      return;
    }
    if (timeout != null) {
      arm(timeout, attempt.startedNanos + attempt.allowedNanos - x.nanoClock.getAsLong(), () -> settled(attempt, null,
          new AttemptTimeoutException(java.time.Duration.ofNanos(attempt.allowedNanos)), true));
    }
    future.whenComplete((value, error) -> settled(attempt, value, unwrap(error), false));
  }

  /** An attempt's answer: judged outside the lock (user code), then handed to the transition. */
  private void settled(Attempt attempt, T value, Throwable failure, boolean timedOut) {
    synchronized (this) {
      if (phase != Phase.RUNNING || !running.contains(attempt)) {
        return; // stale: do not run the policy's code for it
      }
    }
    RetryPlanner.Verdict verdict;
    double random;
    try {
      verdict = x.planner.judge(value, failure);
      random = verdict.retryable() ? x.random.getAsDouble() : 0;
    } catch (Throwable t) {
      fire(new Stop(RetryOutcome.ERROR, t));
      return;
    }
    fire(new AttemptDone(attempt, value, failure, verdict, random, timedOut));
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
      Runnable deliver = () -> fire(new BudgetAnswered(forHedge, askedRound, error == null ? decision : null));
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

  /** The state as a test sees it. */
  synchronized Snapshot snapshot() {
    boolean allInRound = true;
    int timers = 0;
    for (Attempt a : running) {
      allInRound &= a.round == round;
      if (a.timeout != null && !a.timeout.cancelled) {
        timers++;
      }
    }
    int waits = (phase == Phase.ASKING ? 1 : 0) + (phase == Phase.RUNNING && hedgeAskRound == round ? 1 : 0);
    return new Snapshot(phase, round, running.size(), allInRound, waits, backoff != null, hedgeTimer != null, timers,
        attempts);
  }

  private static Throwable unwrap(Throwable error) {
    while ((error instanceof CompletionException || error instanceof ExecutionException) && error.getCause() != null) {
      error = error.getCause();
    }
    return error;
  }
}
