package io.retrybudget.server;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The lifecycle of one claimed execution and its transition function: (state, event) → (new state,
 * actions). Nothing here talks to Redis, arms a timer or answers a client: that is what the
 * returned {@link Action}s say to do, and {@link ClaimRun} does it outside its lock. Not
 * thread-safe by itself: {@code ClaimRun} calls {@link #on} holding its monitor.
 *
 * <p><b>Phases</b>: RUNNING (the handler runs, its client waits), TIMED_OUT (the handler still
 * runs, its client was answered 503 at {@code handlerTimeout}), WRITING (the handler ended: its
 * answer is being stored or the claim released), ENDED. In RUNNING and TIMED_OUT alike the lease
 * is renewed every third of a lease, so a holder that still works keeps its claim and every
 * duplicate gets 409, for at most {@link IdempotencyConfig#maxHold()} from the claim; past that,
 * renewals stop and the claim lapses one lease after the last one (a precondition of the
 * exactly-once promise: handlers end within {@code maxHold}). A renewal Redis refuses or misses is
 * tried again at the next period; a fenced one (the record is gone or another holder's: Redis lost
 * it, or it lapsed while Redis was out of reach) marks the claim LOST and stops renewing.
 *
 * <p><b>Answers</b>: a handler's answer is stored when the {@link OutcomePolicy} stores its status
 * and the handler did not declare it {@linkplain IdempotencyContext#rejectedBeforeExecuting()
 * rejected before executing}; otherwise the claim is released. A handler that failed without an
 * answer (a failed future, an exception) is a 500: under a policy that stores 500 (STORE_ALL) a
 * {@code urn:retrybudget:problem:handler-failed} answer is stored and replayed, never re-run, since
 * the failure may have come after the side effect; under one that does not (STANDARD) the claim is
 * released and the next duplicate executes. The client still waiting gets its answer once the
 * write has ended, so a client that has its answer finds it stored when it retries.
 *
 * <p><b>Stale events do nothing</b>: an event for a phase it does not belong to (a timeout after the
 * answer, a renewal after the write, a second answer) changes nothing.
 *
 * <p><b>Liveness invariant</b>, checked after every transition ({@link #live()}; the first event
 * that broke it is kept in {@link #livenessBrokenBy()}, which the tests assert is never set): RUNNING or
 * TIMED_OUT with renewals not stopped has a renewal timer armed or a renewal in flight; WRITING has
 * a write in flight. So every claim either ends or lapses within one lease of its last renewal.
 */
final class ClaimLifecycle {
  enum Phase { RUNNING, TIMED_OUT, WRITING, ENDED }

  /** How an ended claim ended. */
  enum Ending { STORED, RELEASED, LOST, WRITE_FAILED }

  // ---- events ------------------------------------------------------------------------------
  interface Event {}

  /** The renewal timer fired at {@code nowNanos}. */
  record RenewDue(long nowNanos) implements Event {}

  record Renewed() implements Event {}

  /** A renewal failed: {@code fenced} when Redis answered that the claim is not this holder's. */
  record RenewFailed(boolean fenced) implements Event {}

  record HandlerTimedOut() implements Event {}

  /** The handler answered; {@code executed} false when it rejected the request before executing. */
  record HandlerAnswered(StoredResponse answer, boolean executed) implements Event {}

  /** The handler failed without an answer (a failed future, an exception). */
  record HandlerFailed(Throwable failure) implements Event {}

  /** The handler never ran (the request went away before it could): release. */
  record Abandoned() implements Event {}

  /** The store or release ended: {@code ok} (stored / released), else fenced; or {@code error}. */
  record WriteDone(boolean ok, Throwable error) implements Event {}

  /** The guard closes: no more renewals; the claim lapses with its lease unless written first. */
  record Closed() implements Event {}

  // ---- actions -----------------------------------------------------------------------------
  interface Action {}

  record ArmRenewal(long delayNanos) implements Action {}

  record CancelRenewal() implements Action {}

  record Renew() implements Action {}

  /** Store this answer (already cut to what is kept) under the claim, fenced. */
  record Store(StoredResponse answer) implements Action {}

  record Release() implements Action {}

  /** Answer the waiting client: a response, or the failure to report (exactly one is non-null). */
  record Reply(StoredResponse response, Throwable failure) implements Action {}

  /** The write ended: tell whoever waits for it (the servlet filter). */
  record Written() implements Action {}

  record Report(ServerKitListener.IdempotencyOutcome outcome) implements Action {}

  /** The answer given at {@code handlerTimeout}: true about what happens next. */
  static StoredResponse timeoutAnswer(Duration retryAfter) {
    return Problems.withPushback(Problems.of(503, "handler-timeout", "Handler timed out",
        "the request is still being processed and holds its key: a retry with the same key gets 409 while it runs, "
            + "then its stored answer (or, when its outcome is not stored, a new execution)"), retryAfter);
  }

  /** The answer stored for a handler that failed without one, when the policy stores 500. */
  static final StoredResponse HANDLER_FAILED = Problems.of(500, "handler-failed", "Handler failed",
      "the request failed while being processed; this answer is replayed for the same key, which is not executed again");

  // ---- state -------------------------------------------------------------------------------
  private final OutcomePolicy policy;
  private final long startNanos;
  private final long periodNanos;
  private final long maxHoldNanos;
  private final java.util.function.UnaryOperator<StoredResponse> storable;
  private final Duration timeoutRetryAfter;
  private Phase phase = Phase.RUNNING;
  private Ending ending;
  private boolean owesReply = true;
  private boolean renewalArmed;
  private boolean renewInFlight;
  private boolean renewalsStopped;
  private boolean writeInFlight;
  private boolean storing;
  private boolean lost;
  private Event livenessBrokenBy;
  private StoredResponse pendingResponse;
  private Throwable pendingFailure;

  ClaimLifecycle(OutcomePolicy policy, long startNanos, Duration lease, Duration maxHold,
      java.util.function.UnaryOperator<StoredResponse> storable, Duration timeoutRetryAfter) {
    this.policy = policy;
    this.startNanos = startNanos;
    this.periodNanos = Math.max(1_000_000L, lease.toNanos() / 3);
    this.maxHoldNanos = maxHold.toNanos();
    this.storable = storable;
    this.timeoutRetryAfter = timeoutRetryAfter;
  }

  /** The first actions, right after the claim was made. */
  List<Action> start() {
    renewalArmed = true;
    return List.of(new ArmRenewal(periodNanos));
  }

  Phase phase() {
    return phase;
  }

  /** How it ended; null before ENDED. */
  Ending ending() {
    return ending;
  }

  /** True once Redis said the claim is no longer this holder's (a renewal or the write was fenced). */
  boolean lost() {
    return lost;
  }

  /** True while the lease is being renewed. */
  boolean renewing() {
    return (phase == Phase.RUNNING || phase == Phase.TIMED_OUT) && !renewalsStopped;
  }

  /** The first event after which {@link #live()} did not hold; null while it always held. */
  Event livenessBrokenBy() {
    return livenessBrokenBy;
  }

  /** The liveness invariant (see the class comment). */
  boolean live() {
    return switch (phase) {
      case RUNNING, TIMED_OUT -> renewalsStopped || renewalArmed || renewInFlight;
      case WRITING -> writeInFlight;
      case ENDED -> !renewalArmed && !writeInFlight;
    };
  }

  List<Action> on(Event event) {
    List<Action> out = new ArrayList<>(3);
    boolean handlerRuns = phase == Phase.RUNNING || phase == Phase.TIMED_OUT;
    if (event instanceof RenewDue due) {
      renewalArmed = false;
      if (handlerRuns && !renewalsStopped) {
        if (due.nowNanos() - startNanos >= maxHoldNanos) {
          renewalsStopped = true; // held as long as allowed: lapses one lease after the last renewal
        } else {
          renewInFlight = true;
          out.add(new Renew());
        }
      }
    } else if (event instanceof Renewed) {
      renewInFlight = false;
      if (handlerRuns && !renewalsStopped && !renewalArmed) {
        renewalArmed = true;
        out.add(new ArmRenewal(periodNanos));
      }
    } else if (event instanceof RenewFailed f) {
      renewInFlight = false;
      if (handlerRuns && !renewalsStopped) {
        if (f.fenced()) {
          renewalsStopped = true;
          lost = true;
          out.add(new Report(ServerKitListener.IdempotencyOutcome.CLAIM_LOST));
        } else if (!renewalArmed) {
          renewalArmed = true; // Redis refused or was slow: try again at the next period
          out.add(new ArmRenewal(periodNanos));
        }
      }
    } else if (event instanceof HandlerTimedOut) {
      if (phase == Phase.RUNNING) {
        phase = Phase.TIMED_OUT; // the handler may still be working: keep renewing
        owesReply = false;
        out.add(new Reply(timeoutAnswer(timeoutRetryAfter), null));
      }
    } else if (event instanceof HandlerAnswered a) {
      if (handlerRuns) {
        startWrite(out);
        pendingResponse = a.answer();
        storing = a.executed() && policy.store(a.answer().status());
        out.add(storing ? new Store(storable.apply(a.answer())) : new Release());
      }
    } else if (event instanceof HandlerFailed f) {
      if (handlerRuns) {
        startWrite(out);
        storing = policy.store(HANDLER_FAILED.status());
        if (storing) {
          pendingResponse = HANDLER_FAILED; // it may have failed after its side effect: never re-run
          out.add(new Store(HANDLER_FAILED));
        } else {
          pendingFailure = f.failure();
          out.add(new Release());
        }
      }
    } else if (event instanceof Abandoned) {
      if (handlerRuns) {
        owesReply = false;
        startWrite(out);
        out.add(new Release());
      }
    } else if (event instanceof WriteDone w) {
      if (phase == Phase.WRITING) {
        ended(w, out);
      }
    } else if (event instanceof Closed) {
      renewalsStopped = true;
      if (renewalArmed) {
        renewalArmed = false;
        out.add(new CancelRenewal());
      }
    }
    if (!live() && livenessBrokenBy == null) {
      livenessBrokenBy = event; // the actions still run; tests and the checker fail on it
    }
    return out;
  }

  private void ended(WriteDone w, List<Action> out) {
    writeInFlight = false;
    phase = Phase.ENDED;
    if (w.error() != null) {
      ending = Ending.WRITE_FAILED;
      out.add(new Report(ServerKitListener.IdempotencyOutcome.STORE_ERROR_WRITE));
    } else if (!w.ok()) {
      ending = Ending.LOST;
      lost = true;
      out.add(new Report(ServerKitListener.IdempotencyOutcome.FENCED));
    } else {
      ending = storing ? Ending.STORED : Ending.RELEASED;
      out.add(new Report(storing ? ServerKitListener.IdempotencyOutcome.STORED : ServerKitListener.IdempotencyOutcome.RELEASED));
    }
    if (owesReply) {
      owesReply = false;
      out.add(new Reply(pendingFailure == null ? pendingResponse : null, pendingFailure));
    }
    out.add(new Written());
  }

  private void startWrite(List<Action> out) {
    phase = Phase.WRITING;
    writeInFlight = true;
    if (renewalArmed) {
      renewalArmed = false;
      out.add(new CancelRenewal());
    }
  }

  @Override
  public String toString() {
    return "ClaimLifecycle[" + phase + ", ending " + ending + ", renewal armed " + renewalArmed + ", renew in flight "
        + renewInFlight + ", renewals stopped " + renewalsStopped + ", write in flight " + writeInFlight + "]";
  }
}
