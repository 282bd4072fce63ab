package io.retrybudget.observation;

import io.micrometer.observation.Observation;
import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.retry.RetryListener;
import io.retrybudget.retry.RetryOutcome;
import java.util.Arrays;

/**
 * The events of one call, made into its observation and one child per attempt. Made by
 * {@link ObservationRetryListener#onCallStart()} for that call alone. Thread-safe: the asynchronous
 * path tells events from several threads, hedges at once; what comes after {@link #onOutcome} starts
 * nothing, and only closes the scope an attempt opened on its own thread.
 */
final class CallObservation implements RetryListener {
  private static final Observation.Event SUPPRESSED = Observation.Event.of(ObservationRetryListener.SUPPRESSED_EVENT);
  private static final Observation.Event HEDGE_SUPPRESSED =
      Observation.Event.of(ObservationRetryListener.HEDGE_SUPPRESSED_EVENT);

  private final ObservationRetryListener owner;
  private final Observation call;
  // by attempt number - 1: the attempts running, and the scope each opened on the thread sending it
  private Observation[] running = new Observation[2];
  private Observation.Scope[] scopes = new Observation.Scope[2];
  private String nextReason; // what the answer of the last attempt that ended says: why the next one is sent
  private Throwable lastFailure;
  private boolean ended;

  CallObservation(ObservationRetryListener owner, Observation call) {
    this.owner = owner;
    this.call = call;
  }

  @Override
  public void onAttempt(int attempt) {
    start(attempt, false);
  }

  @Override
  public void onHedge(int attempt) {
    start(attempt, true);
  }

  private synchronized void start(int attempt, boolean hedge) {
    if (ended) {
      return;
    }
    Observation a = Observation.createNotStarted(ObservationRetryListener.ATTEMPT, owner.registry)
        .parentObservation(call)
        .lowCardinalityKeyValue(ObservationRetryListener.BUDGET, owner.name)
        .lowCardinalityKeyValue(ObservationRetryListener.KIND, attempt == 1 ? "first" : hedge ? "hedge" : "retry");
    if (attempt > 1) {
      // OpenTelemetry's HTTP conventions: the ordinal number of the resend, absent on the first send
      a.highCardinalityKeyValue(ObservationRetryListener.RESEND_COUNT, Integer.toString(attempt - 1));
      a.highCardinalityKeyValue(ObservationRetryListener.RETRY_REASON,
          hedge ? "hedge" : nextReason != null ? nextReason : "result");
    }
    a.start();
    grow(attempt);
    running[attempt - 1] = a;
    scopes[attempt - 1] = a.openScope();
  }

  private void grow(int attempt) {
    if (attempt > running.length) {
      int size = Math.max(attempt, running.length * 2);
      running = Arrays.copyOf(running, size);
      scopes = Arrays.copyOf(scopes, size);
    }
  }

  @Override
  public synchronized void onAttemptSent(int attempt) {
    if (attempt <= scopes.length && scopes[attempt - 1] != null) {
      scopes[attempt - 1].close(); // on the thread that opened it: the SPI tells both on one thread
      scopes[attempt - 1] = null;
    }
  }

  @Override
  public void onAttemptEnded(int attempt, Object result, Throwable failure) {
    String reason = owner.reasons.reason(result, failure); // user code: outside the lock
    synchronized (this) {
      nextReason = reason;
      lastFailure = failure;
      Observation a = attempt <= running.length ? running[attempt - 1] : null;
      if (a == null) {
        return;
      }
      running[attempt - 1] = null;
      if (failure != null) {
        a.error(failure);
      }
      a.stop();
    }
  }

  @Override
  public synchronized void onBudgetDenied(BudgetDecision decision) {
    if (!ended) {
      call.highCardinalityKeyValue(ObservationRetryListener.BUDGET_DECISION, decision.reason().tag());
    }
  }

  @Override
  public synchronized void onHedgeDenied(BudgetDecision decision) {
    if (!ended) {
      call.event(HEDGE_SUPPRESSED);
    }
  }

  @Override
  public synchronized void onOutcome(RetryOutcome outcome, int attempts) {
    if (ended) {
      return;
    }
    ended = true;
    SuppressedReason suppressed = attempts > 0 ? SuppressedReason.of(outcome) : null;
    call.lowCardinalityKeyValue(ObservationRetryListener.OUTCOME, ObservationRetryListener.outcomeTag(outcome, attempts))
        .lowCardinalityKeyValue(ObservationRetryListener.SUPPRESSED_REASON,
            suppressed != null ? suppressed.tag() : SuppressedReason.NONE)
        .highCardinalityKeyValue(ObservationRetryListener.ATTEMPTS, Integer.toString(attempts));
    if (suppressed != null) {
      call.event(SUPPRESSED);
    }
    for (int i = 0; i < running.length; i++) {
      if (running[i] != null) {
        running[i].highCardinalityKeyValue(ObservationRetryListener.ABANDONED, "true").stop();
        running[i] = null;
      }
    }
    if (outcome != RetryOutcome.SUCCESS && outcome != RetryOutcome.CANCELLED && lastFailure != null) {
      call.error(lastFailure);
    }
    call.stop();
  }
}
