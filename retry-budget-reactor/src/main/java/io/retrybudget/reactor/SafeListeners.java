package io.retrybudget.reactor;

import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.retry.RetryListener;
import io.retrybudget.retry.RetryOutcome;
import java.lang.System.Logger.Level;
import java.util.List;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.function.Consumer;

/**
 * The listeners of one {@link BudgetRetry}, each isolated as the SDK executor isolates its own:
 * what one throws is logged once for that listener and changes nothing else.
 */
final class SafeListeners {
  private static final System.Logger LOG = System.getLogger("io.retrybudget.reactor");
  private final RetryListener[] all;
  private final AtomicIntegerArray logged;

  SafeListeners(List<RetryListener> listeners) {
    this.all = listeners.toArray(new RetryListener[0]);
    this.logged = new AtomicIntegerArray(all.length);
  }

  private void each(Consumer<RetryListener> event) {
    for (int i = 0; i < all.length; i++) {
      try {
        event.accept(all[i]);
      } catch (Throwable t) {
        if (t instanceof VirtualMachineError e) {
          throw e;
        }
        if (logged.compareAndSet(i, 0, 1)) {
          String listener = all[i].getClass().getName();
          LOG.log(Level.WARNING, () -> "retry listener " + listener
              + " threw (ignored; further failures of this listener are not logged)", t);
        }
      }
    }
  }

  void onAttempt(int attempt) {
    if (all.length > 0) {
      each(l -> l.onAttempt(attempt));
    }
  }

  void onRetryScheduled(int nextAttempt, long delayNanos, Throwable failure) {
    each(l -> l.onRetryScheduled(nextAttempt, delayNanos, failure));
  }

  void onBudgetDenied(BudgetDecision decision) {
    each(l -> l.onBudgetDenied(decision));
  }

  void onOutcome(RetryOutcome outcome, int attempts) {
    if (all.length > 0) {
      each(l -> l.onOutcome(outcome, attempts));
    }
  }
}
