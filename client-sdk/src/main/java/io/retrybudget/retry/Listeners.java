package io.retrybudget.retry;

import io.retrybudget.budget.BudgetDecision;
import java.lang.System.Logger.Level;
import java.util.List;
import java.util.concurrent.atomic.AtomicIntegerArray;

/**
 * The listeners of one executor, each isolated: what one throws is caught, logged once for that
 * listener, and changes nothing else (as Failsafe's {@code EventListener.acceptUnchecked}). A loop
 * over an array: nothing is allocated per event. {@link #forCall()} gives the listeners of one call:
 * this object itself unless a listener keeps state per call ({@link RetryListener#onCallStart()}).
 */
final class Listeners {
  private static final System.Logger LOG = System.getLogger("io.retrybudget.retry");
  private final RetryListener[] all;
  private final AtomicIntegerArray logged;

  Listeners(List<RetryListener> listeners) {
    this(listeners.toArray(new RetryListener[0]), null);
  }

  /** One call's listeners; failures are logged once per executor's listener, as by the executor's own. */
  private Listeners(RetryListener[] all, AtomicIntegerArray logged) {
    this.all = all;
    this.logged = logged != null ? logged : new AtomicIntegerArray(all.length);
  }

  /** Whether no listener is attached (then a call need not prepare what only listeners read). */
  boolean isEmpty() {
    return all.length == 0;
  }

  /**
   * The listeners of a call that starts now: this object when every listener answers
   * {@link RetryListener#onCallStart()} with itself (nothing allocated), else a copy holding the
   * ones made for this call. A listener whose {@code onCallStart} throws observes the call as itself.
   */
  Listeners forCall() {
    RetryListener[] scoped = null;
    for (int i = 0; i < all.length; i++) {
      RetryListener own;
      try {
        own = all[i].onCallStart();
      } catch (Throwable t) {
        failed(i, t);
        own = all[i];
      }
      if (own != all[i]) {
        if (scoped == null) {
          scoped = all.clone();
        }
        scoped[i] = own != null ? own : RetryListener.NONE;
      }
    }
    return scoped == null ? this : new Listeners(scoped, logged);
  }

  private void failed(int i, Throwable t) {
    if (t instanceof VirtualMachineError e) {
      throw e;
    }
    if (logged.compareAndSet(i, 0, 1)) {
      String listener = all[i].getClass().getName();
      LOG.log(Level.WARNING,
          () -> "retry listener " + listener + " threw (ignored; further failures of this listener are not logged)", t);
    }
  }

  void onAttempt(int attempt) {
    for (int i = 0; i < all.length; i++) {
      try {
        all[i].onAttempt(attempt);
      } catch (Throwable t) {
        failed(i, t);
      }
    }
  }

  void onAttemptSent(int attempt) {
    for (int i = 0; i < all.length; i++) {
      try {
        all[i].onAttemptSent(attempt);
      } catch (Throwable t) {
        failed(i, t);
      }
    }
  }

  void onAttemptEnded(int attempt, Object result, Throwable failure) {
    for (int i = 0; i < all.length; i++) {
      try {
        all[i].onAttemptEnded(attempt, result, failure);
      } catch (Throwable t) {
        failed(i, t);
      }
    }
  }

  void onHedge(int attempt) {
    for (int i = 0; i < all.length; i++) {
      try {
        all[i].onHedge(attempt);
      } catch (Throwable t) {
        failed(i, t);
      }
    }
  }

  void onHedgeWon(int attempt) {
    for (int i = 0; i < all.length; i++) {
      try {
        all[i].onHedgeWon(attempt);
      } catch (Throwable t) {
        failed(i, t);
      }
    }
  }

  void onHedgeDenied(BudgetDecision decision) {
    for (int i = 0; i < all.length; i++) {
      try {
        all[i].onHedgeDenied(decision);
      } catch (Throwable t) {
        failed(i, t);
      }
    }
  }

  void onRetryScheduled(int nextAttempt, long delayNanos, Throwable failure) {
    for (int i = 0; i < all.length; i++) {
      try {
        all[i].onRetryScheduled(nextAttempt, delayNanos, failure);
      } catch (Throwable t) {
        failed(i, t);
      }
    }
  }

  void onBudgetDenied(BudgetDecision decision) {
    for (int i = 0; i < all.length; i++) {
      try {
        all[i].onBudgetDenied(decision);
      } catch (Throwable t) {
        failed(i, t);
      }
    }
  }

  void onOutcome(RetryOutcome outcome, int attempts) {
    for (int i = 0; i < all.length; i++) {
      try {
        all[i].onOutcome(outcome, attempts);
      } catch (Throwable t) {
        failed(i, t);
      }
    }
  }
}
