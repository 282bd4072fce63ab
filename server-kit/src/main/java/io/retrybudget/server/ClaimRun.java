package io.retrybudget.server;

import io.retrybudget.retry.RetryScheduler;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

/**
 * Runs one claimed execution's {@link ClaimLifecycle}: every event goes through {@link #fire},
 * which takes the transition under this object's monitor and then does its actions (Redis calls,
 * timers, the client's answer, reports) outside it.
 */
final class ClaimRun {
  private final ClaimLifecycle state;
  private final Claim.Claimed claim;
  private final ClaimBackend store;
  private final Duration lease;
  private final Duration resultTtl;
  private final RetryScheduler scheduler;
  private final LongSupplier nanoClock;
  private final Consumer<ServerKitListener.IdempotencyOutcome> report;
  private final Consumer<ClaimRun> ended;
  private RetryScheduler.Cancellable renewal;
  private RetryScheduler.Cancellable deadline;
  private volatile boolean rejectedBeforeExecuting;
  /** The answer for the client that waits: completed once, by the handler's end or its timeout. */
  final CompletableFuture<IdempotencyGuard.Reply> reply = new CompletableFuture<>();
  /** Completed when the answer's store or the claim's release has ended (however it ended). */
  final CompletableFuture<Void> written = new CompletableFuture<>();

  ClaimRun(Claim.Claimed claim, ClaimBackend store, IdempotencyConfig config, RetryScheduler scheduler,
      LongSupplier nanoClock, java.util.function.UnaryOperator<StoredResponse> storable,
      Consumer<ServerKitListener.IdempotencyOutcome> report, Consumer<ClaimRun> ended) {
    this.claim = claim;
    this.store = store;
    this.lease = config.lease();
    this.resultTtl = config.resultTtl();
    this.scheduler = scheduler;
    this.nanoClock = nanoClock;
    this.report = report;
    this.ended = ended;
    this.state = new ClaimLifecycle(config.outcomes(), nanoClock.getAsLong(), lease, config.maxHold(), storable,
        config.inProgressRetryAfter());
  }

  Claim.Claimed claim() {
    return claim;
  }

  void start() {
    List<ClaimLifecycle.Action> actions;
    synchronized (this) {
      actions = state.start();
    }
    actions.forEach(this::run);
  }

  /** Answers the client 503 at {@code timeout} unless the handler answered first. */
  void armDeadline(Duration timeout) {
    RetryScheduler.Cancellable t;
    try {
      t = scheduler.schedule(() -> fire(new ClaimLifecycle.HandlerTimedOut()), Math.max(1, timeout.toNanos()));
    } catch (RuntimeException closed) {
      return; // the guard is closed: the handler's own end answers the client
    }
    boolean keep;
    synchronized (this) {
      keep = state.phase() == ClaimLifecycle.Phase.RUNNING;
      deadline = keep ? t : null;
    }
    if (!keep) {
      t.cancel();
    }
  }

  void rejectBeforeExecuting() {
    rejectedBeforeExecuting = true;
  }

  boolean rejectedBeforeExecuting() {
    return rejectedBeforeExecuting;
  }

  synchronized boolean renewing() {
    return state.renewing();
  }

  synchronized ClaimLifecycle.Phase phase() {
    return state.phase();
  }

  /** The first event after which the lifecycle's liveness invariant did not hold (null: it always held). */
  synchronized ClaimLifecycle.Event livenessBrokenBy() {
    return state.livenessBrokenBy();
  }

  synchronized boolean lost() {
    return state.lost();
  }

  synchronized ClaimLifecycle.Ending ending() {
    return state.ending();
  }

  void answered(StoredResponse answer) {
    fire(new ClaimLifecycle.HandlerAnswered(answer, !rejectedBeforeExecuting));
  }

  void fire(ClaimLifecycle.Event event) {
    List<ClaimLifecycle.Action> actions;
    synchronized (this) {
      actions = state.on(event);
    }
    actions.forEach(this::run);
  }

  private void run(ClaimLifecycle.Action action) {
    if (action instanceof ClaimLifecycle.ArmRenewal a) {
      armRenewal(a.delayNanos());
    } else if (action instanceof ClaimLifecycle.CancelRenewal) {
      RetryScheduler.Cancellable t;
      synchronized (this) {
        t = renewal;
        renewal = null;
      }
      if (t != null) {
        t.cancel();
      }
    } else if (action instanceof ClaimLifecycle.Renew) {
      store.renew(claim, lease).whenComplete((ok, error) -> fire(error != null ? new ClaimLifecycle.RenewFailed(false)
          : Boolean.TRUE.equals(ok) ? new ClaimLifecycle.Renewed() : new ClaimLifecycle.RenewFailed(true)));
    } else if (action instanceof ClaimLifecycle.Store s) {
      store.complete(claim, s.answer(), resultTtl)
          .whenComplete((ok, error) -> fire(new ClaimLifecycle.WriteDone(Boolean.TRUE.equals(ok), error)));
    } else if (action instanceof ClaimLifecycle.Release) {
      store.release(claim).whenComplete((ok, error) -> fire(new ClaimLifecycle.WriteDone(Boolean.TRUE.equals(ok), error)));
    } else if (action instanceof ClaimLifecycle.Reply r) {
      cancelDeadline();
      reply.complete(new IdempotencyGuard.Reply(r.response(), r.failure()));
    } else if (action instanceof ClaimLifecycle.Written) {
      cancelDeadline();
      ended.accept(this);
      written.complete(null);
    } else if (action instanceof ClaimLifecycle.Report r) {
      report.accept(r.outcome());
    }
  }

  private void armRenewal(long delayNanos) {
    RetryScheduler.Cancellable t;
    try {
      t = scheduler.schedule(() -> fire(new ClaimLifecycle.RenewDue(nanoClock.getAsLong())), delayNanos);
    } catch (RuntimeException closed) {
      fire(new ClaimLifecycle.Closed()); // the guard's timer is shut: the claim lapses with its lease
      return;
    }
    boolean keep;
    synchronized (this) {
      keep = state.renewing();
      renewal = keep ? t : null;
    }
    if (!keep) {
      t.cancel();
    }
  }

  private void cancelDeadline() {
    RetryScheduler.Cancellable t;
    synchronized (this) {
      t = deadline;
      deadline = null;
    }
    if (t != null) {
      t.cancel();
    }
  }

  @Override
  public synchronized String toString() {
    return "ClaimRun[" + claim + ", " + state + "]";
  }
}
