package io.retrybudget.retry;

import io.retrybudget.budget.BudgetDecision;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The state of one asynchronous call and its transition function: (state, event) → (new state,
 * actions). Nothing here runs user code, asks the budget, schedules or completes anything: that is
 * what the returned {@link Action}s say to do, and {@link AsyncCall} does it outside the lock. Not
 * thread-safe by itself: every method is called with {@code AsyncCall} holding this object's monitor.
 *
 * <p><b>State</b>: a phase, the current round, the attempts of that round still running, the timers
 * armed (backoff, hedge, deadline, one timeout per attempt), the budget request waited for, the
 * last answer. A round runs one attempt and, with hedging, up to {@code maxHedges} more; when every
 * attempt of a round has failed retryably the planner decides, the budget is asked (ASKING), the
 * backoff timer runs (BACKING_OFF) and its firing starts the next round (RUNNING). The first
 * success, a fatal failure, a refusal, the deadline, the caller or {@code close()} end the call
 * (ENDED); nothing changes an ENDED call.
 *
 * <p><b>Stale events do nothing</b>: timers are recognised by identity (one called off, or replaced,
 * is not the state's any more), budget answers by phase and round, attempts by membership of the
 * running set. So a hedge grant that arrives after its round ended starts nothing, and there is
 * never more than one round at once.
 *
 * <p><b>Liveness invariant</b>, enforced after every transition by {@link #transition}: a call that
 * is not ENDED has something outstanding that will produce an event — RUNNING at least one attempt
 * running, ASKING one budget request, BACKING_OFF its backoff timer. A transition that would break
 * it ends the call instead (with {@link IllegalStateException}, outcome {@code ERROR}). With a
 * deadline, one call-level timer is armed from the start as a backstop: the call ends by its
 * deadline plus the scheduler's lateness, whatever else is late.
 */
final class CallState<T> {
  enum Phase { NEW, RUNNING, ASKING, BACKING_OFF, ENDED }

  /** A timer: armed in a transition, scheduled by an action, recognised by identity. */
  static final class Timer {
    RetryScheduler.Cancellable handle;
    boolean cancelled;
  }

  static final class Attempt<T> {
    final int number;
    final boolean hedge;
    final int round;
    final long startedNanos;
    final long allowedNanos; // the attempt timeout cut to the time the deadline leaves
    CompletableFuture<T> future; // set when sent
    Timer timeout;

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
  record Start(Object value, RetryPlanner.Verdict verdict, double random) implements Event {
    /** The start of every call whose first attempt had not answered yet; shared: read, never told apart. */
    static final Start SENT = new Start(null, null, 0);
  }

  /** An attempt answered, failed or timed out; its verdict was reached outside the lock. */
  record AttemptDone(Attempt<?> attempt, Object value, Throwable failure, RetryPlanner.Verdict verdict, double random,
      boolean timedOut) implements Event {}

  record HedgeDue(Timer timer) implements Event {}

  record BudgetAnswered(boolean forHedge, int round, BudgetDecision decision) implements Event {}

  record BackoffOver(Timer timer) implements Event {}

  record DeadlineReached(Timer timer) implements Event {}

  /** The caller, {@code close()} or a failing action ends the call. */
  record Stop(RetryOutcome why, Throwable failure) implements Event {}

  /**
   * What an attempt's timeout timer carries. Not a transition of its own: the runner judges the
   * timeout outside the lock (the policy's code) and fires {@link AttemptDone}.
   */
  record TimeoutDue(Attempt<?> attempt) implements Event {}

  // ---- actions -----------------------------------------------------------------------------
  interface Action {}

  /** Send a retry or hedge. */
  record StartAttempt(Attempt<?> attempt) implements Action {}

  /** Listen for the answer of an attempt already sent. */
  record Watch(Attempt<?> attempt) implements Action {}

  record AskBudget(boolean forHedge, int round) implements Action {}

  /** Arm {@code timer} to deliver {@code event} at {@code dueNanos} on the executor's clock. */
  record Schedule(Timer timer, long dueNanos, Event event) implements Action {}

  record CancelTimer(RetryScheduler.Cancellable handle) implements Action {}

  record CancelAttempt(CompletableFuture<?> future) implements Action {}

  /** Complete the caller's future and report the outcome (once per call). */
  record Complete(Object value, Throwable failure, RetryOutcome outcome, int attempts) implements Action {}

  /** Tell the listeners. */
  record Notify(Kind kind, int number, long delayNanos, Object detail) implements Action {
    enum Kind { RETRY_SCHEDULED, BUDGET_DENIED, HEDGE_DENIED, HEDGE_WON, ATTEMPT_ENDED }
  }

  /** What a test sees of the state. */
  record Snapshot(Phase phase, int round, int running, boolean runningAllInRound, int budgetWaits,
      boolean backoffArmed, boolean hedgeArmed, int attempts, int hedgesInRound) {}

  // ---- wiring (immutable) ------------------------------------------------------------------
  private final RetryPolicy policy;
  private final RetryPlanner planner;
  private final HedgePolicy hedging;
  private final String budgetName; // null without a budget
  private final AttemptContext first; // the call's key lives here
  private final long start;
  private final CompletableFuture<T> firstFuture;
  private final boolean tellListeners; // the call has listeners: without any, no Notify action is made

  // ---- state -------------------------------------------------------------------------------
  private Phase phase = Phase.NEW;
  private int round;
  private int attempts;
  private int hedgesInRound;
  private long previousDelay;
  private long plannedDelay;
  private final List<Attempt<T>> running = new ArrayList<>(2);
  private Timer backoff;
  private Timer hedgeTimer;
  private Timer deadline;
  private int hedgeAskRound; // the round whose hedge waits for the budget, 0 for none
  private Object lastValue;
  private Throwable lastFailure;

  CallState(RetryPolicy policy, RetryPlanner planner, HedgePolicy hedging, String budgetName, AttemptContext first,
      long start, CompletableFuture<T> firstFuture) {
    this(policy, planner, hedging, budgetName, first, start, firstFuture, false);
  }

  /** @param tellListeners whether the call has listeners: without any, no {@link Notify} action is made */
  CallState(RetryPolicy policy, RetryPlanner planner, HedgePolicy hedging, String budgetName, AttemptContext first,
      long start, CompletableFuture<T> firstFuture, boolean tellListeners) {
    this.tellListeners = tellListeners;
    this.policy = policy;
    this.planner = planner;
    this.hedging = hedging;
    this.budgetName = budgetName;
    this.first = first;
    this.start = start;
    this.firstFuture = firstFuture;
  }

  /** One transition; adds the actions it calls for to {@code out}. Enforces the liveness invariant. */
  void transition(Event event, List<Action> out, long now) {
    try {
      step(event, out, now);
    } catch (RuntimeException | Error bug) {
      if (phase != Phase.ENDED) {
        end(out, RetryOutcome.ERROR, null, bug);
      }
    }
    if (!live()) {
      end(out, RetryOutcome.ERROR, null,
          new IllegalStateException("retry executor: a call in phase " + phase + " with nothing outstanding", lastFailure));
    }
  }

  /** The liveness invariant (see the class comment). */
  boolean live() {
    switch (phase) {
      case RUNNING:
        return !running.isEmpty();
      case BACKING_OFF:
        return backoff != null;
      default:
        return true; // NEW: Start follows at once; ASKING: its request is out by construction; ENDED
    }
  }

  @SuppressWarnings("unchecked")
  private void step(Event event, List<Action> out, long now) {
    if (phase == Phase.ENDED) {
      return;
    }
    if (event instanceof Start e) {
      if (phase != Phase.NEW) {
        return;
      }
      phase = Phase.RUNNING;
      round = 1;
      attempts = 1;
      Attempt<T> firstAttempt = new Attempt<>(1, false, 1, start, planner.attemptBudgetNanos(0));
      firstAttempt.future = firstFuture;
      running.add(firstAttempt);
      if (policy.deadline() != null) {
        deadline = new Timer();
        out.add(new Schedule(deadline, start + policy.deadline().toNanos(), new DeadlineReached(deadline)));
      }
      if (e.verdict() != null) {
        // its end was told already, by the runner that judged it
        attemptDone(new AttemptDone(firstAttempt, e.value(), null, e.verdict(), e.random(), false), out, now, false);
        return;
      }
      armTimeout(out, firstAttempt);
      out.add(new Watch(firstAttempt));
      armHedge(out, now);
    } else if (event instanceof AttemptDone e) {
      attemptDone(e, out, now, tellListeners);
    } else if (event instanceof BudgetAnswered e) {
      if (e.forHedge()) {
        hedgeAnswered(e, out, now);
      } else {
        retryAnswered(e, out, now);
      }
    } else if (event instanceof BackoffOver e) {
      if (phase != Phase.BACKING_OFF || backoff != e.timer()) {
        return;
      }
      backoff = null;
      phase = Phase.RUNNING;
      round++;
      hedgesInRound = 0;
      if (!launch(out, false, now)) {
        endWithLast(out, RetryOutcome.DEADLINE); // the timer fired too late for another attempt: end now, not never
        return;
      }
      armHedge(out, now);
    } else if (event instanceof HedgeDue e) {
      if (phase != Phase.RUNNING || hedgeTimer != e.timer()) {
        return;
      }
      hedgeTimer = null;
      if (budgetName == null) {
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
      if (running.isEmpty()) {
        endWithLast(out, RetryOutcome.DEADLINE);
      } else {
        end(out, RetryOutcome.DEADLINE, null, new AttemptTimeoutException(policy.deadline()));
      }
    } else if (event instanceof Stop e) {
      end(out, e.why(), null, e.failure());
    } else {
      throw new IllegalArgumentException("not a transition: " + event);
    }
  }

  @SuppressWarnings("unchecked")
  private void attemptDone(AttemptDone e, List<Action> out, long now, boolean report) {
    Attempt<T> attempt = (Attempt<T>) e.attempt();
    if (phase != Phase.RUNNING || !running.remove(attempt)) {
      return; // cut by its timeout already, a loser cancelled, or of a round that has ended
    }
    if (report) {
      out.add(new Notify(Notify.Kind.ATTEMPT_ENDED, attempt.number, 0, e)); // before what the answer leads to
    }
    if (e.timedOut()) {
      out.add(new CancelAttempt(attempt.future));
    } else {
      cancel(out, attempt.timeout);
    }
    lastValue = e.value();
    lastFailure = e.failure();
    RetryPlanner.Plan plan = planner.next(e.verdict(), attempts, previousDelay, now - start, first.hasIdempotencyKey(),
        e.random());
    if (!plan.endsRound() && !running.isEmpty()) {
      return; // a non-fatal failure waits for the attempts still running
    }
    if (plan.stop() == RetryOutcome.SUCCESS && hedging != null) {
      hedging.recordLatency(now - attempt.startedNanos);
      // the attempts it beat took at least this long: without them the estimate forgets the slow
      // tail that hedging cuts off, and hedges ever earlier
      for (Attempt<T> loser : running) {
        hedging.recordLatency(now - loser.startedNanos);
      }
    }
    if (plan.stop() == RetryOutcome.SUCCESS && attempt.hedge) {
      tell(out, Notify.Kind.HEDGE_WON, attempt.number, 0, null);
    }
    if (!plan.retry()) {
      end(out, plan.stop(), e.value(), e.failure());
      return;
    }
    cancel(out, hedgeTimer);
    hedgeTimer = null;
    hedgeAskRound = 0;
    plannedDelay = plan.delayNanos();
    if (budgetName == null) {
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
    switch (planner.afterBudget(e.decision(), now - start, plannedDelay)) {
      case DENIED: {
        BudgetDecision d = e.decision() != null ? e.decision() : BudgetDecision.DENIED_FALLBACK;
        tell(out, Notify.Kind.BUDGET_DENIED, 0, 0, d);
        end(out, RetryOutcome.BUDGET_EXHAUSTED, null, new RetryBudgetExhaustedException(budgetName, d, lastFailure, lastValue));
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
      tell(out, Notify.Kind.HEDGE_DENIED, 0, 0, e.decision() != null ? e.decision() : BudgetDecision.DENIED_FALLBACK);
    } else if (launch(out, true, now)) {
      armHedge(out, now);
    }
  }

  private void backOff(List<Action> out, long now) {
    phase = Phase.BACKING_OFF;
    previousDelay = plannedDelay;
    backoff = new Timer();
    tell(out, Notify.Kind.RETRY_SCHEDULED, attempts + 1, plannedDelay, lastFailure);
    out.add(new Schedule(backoff, now + plannedDelay, new BackoffOver(backoff)));
  }

  /** Reserves one attempt of the current round; false when none may start (attempts or time used up). */
  private boolean launch(List<Action> out, boolean hedge, long now) {
    if (attempts >= policy.maxAttempts()) {
      return false;
    }
    long allowed = planner.attemptBudgetNanos(now - start);
    if (allowed <= 0) {
      return false;
    }
    Attempt<T> attempt = new Attempt<>(++attempts, hedge, round, now, allowed);
    running.add(attempt);
    if (hedge) {
      hedgesInRound++;
    }
    out.add(new StartAttempt(attempt));
    return true;
  }

  private void armHedge(List<Action> out, long now) {
    if (hedging == null || hedgeTimer != null || hedgeAskRound == round || hedgesInRound >= hedging.maxHedges()
        || attempts >= policy.maxAttempts() || (!policy.idempotent() && !first.hasIdempotencyKey())) {
      return;
    }
    hedgeTimer = new Timer();
    out.add(new Schedule(hedgeTimer, now + hedging.delayNanos(), new HedgeDue(hedgeTimer)));
  }

  /** The attempt's own timeout, unless the deadline binds first (then the backstop timer cuts it). */
  private void armTimeout(List<Action> out, Attempt<T> attempt) {
    boolean deadlineBinds = policy.deadline() != null
        && attempt.startedNanos + attempt.allowedNanos - (start + policy.deadline().toNanos()) >= 0;
    if (attempt.allowedNanos != Long.MAX_VALUE && !deadlineBinds && !attempt.future.isDone()) {
      attempt.timeout = new Timer();
      out.add(new Schedule(attempt.timeout, attempt.startedNanos + attempt.allowedNanos, new TimeoutDue(attempt)));
    }
  }

  private void endWithLast(List<Action> out, RetryOutcome why) {
    end(out, why, lastValue, lastFailure);
  }

  /** ENDED: the future completed, then every timer called off and every attempt cancelled. */
  private void end(List<Action> out, RetryOutcome why, Object value, Throwable failure) {
    if (phase == Phase.NEW) {
      // ended before Start (close() between registering the call and starting it): the first
      // attempt was sent already and is in no running set yet
      attempts = 1;
      out.add(new CancelAttempt(firstFuture));
    }
    phase = Phase.ENDED;
    out.add(new Complete(value, failure, why, attempts));
    cancel(out, backoff);
    cancel(out, hedgeTimer);
    cancel(out, deadline);
    backoff = hedgeTimer = deadline = null;
    hedgeAskRound = 0;
    for (Attempt<T> a : running) {
      cancel(out, a.timeout);
      if (a.future != null) {
        out.add(new CancelAttempt(a.future));
      }
    }
    running.clear();
  }

  /** Tells the listeners, when the call has any: without them, no action is made. */
  private void tell(List<Action> out, Notify.Kind kind, int number, long delayNanos, Object detail) {
    if (tellListeners) {
      out.add(new Notify(kind, number, delayNanos, detail));
    }
  }

  private static void cancel(List<Action> out, Timer timer) {
    if (timer != null && !timer.cancelled) {
      timer.cancelled = true;
      if (timer.handle != null) {
        out.add(new CancelTimer(timer.handle));
      }
    }
  }

  // ---- what the runner asks between transitions ---------------------------------------------

  /** Whether the attempt still runs in the current round (its answer would not be stale). */
  boolean isRunning(Attempt<?> attempt) {
    return phase == Phase.RUNNING && running.contains(attempt);
  }

  /**
   * Records a retry's or hedge's future once sent; false when its round ended meanwhile (the runner
   * then cancels it). Adds the timeout timer to arm, if the attempt has one, to {@code out}.
   */
  boolean sent(Attempt<T> attempt, CompletableFuture<T> future, List<Action> out) {
    if (!running.contains(attempt)) {
      return false;
    }
    attempt.future = future;
    armTimeout(out, attempt);
    return true;
  }

  /** Records a scheduled timer's handle; false when a transition called the timer off meanwhile. */
  boolean scheduled(Timer timer, RetryScheduler.Cancellable handle) {
    if (timer.cancelled) {
      return false;
    }
    timer.handle = handle;
    return true;
  }

  Snapshot snapshot() {
    boolean allInRound = true;
    for (Attempt<T> a : running) {
      allInRound &= a.round == round;
    }
    int waits = (phase == Phase.ASKING ? 1 : 0) + (phase == Phase.RUNNING && hedgeAskRound == round ? 1 : 0);
    return new Snapshot(phase, round, running.size(), allInRound, waits, backoff != null, hedgeTimer != null, attempts,
        hedgesInRound);
  }
}
