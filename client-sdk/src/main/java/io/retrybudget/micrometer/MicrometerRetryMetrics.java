package io.retrybudget.micrometer;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.retry.RetryListener;
import io.retrybudget.retry.RetryOutcome;
import java.util.EnumMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * A {@link RetryListener} that records an executor's calls in Micrometer. Only this package needs
 * Micrometer; the core runs without it on the classpath. Meters (Prometheus names in brackets):
 *
 * <ul>
 *   <li>{@code retry.calls} {budget, outcome} [retry_calls_total]: one per call; {@code success_with_retry}
 *       when more than one attempt (retries or hedges) was started
 *   <li>{@code retry.attempts} {budget, kind=first|retry|hedge} [retry_attempts_total]
 *   <li>{@code retry.hedges} {budget, result=won|denied} [retry_hedges_total]: hedges whose answer
 *       won the call, and hedges the budget refused (hedges sent are {@code retry.attempts{kind=hedge}})
 *   <li>{@code retry.budget.denials} {budget, reason} [retry_budget_denials_total]
 *   <li>{@code retry.backoff} {budget} timer of planned delays [retry_backoff_seconds_*]
 * </ul>
 *
 * <p>The {@code budget} tag (the name given to the constructor: name it after the budget the
 * executor uses) is the tag every metric family of the project names the budget with, the
 * {@code retry.budget.degraded} gauge and the coordinator's gauges too.
 *
 * <p>Every counter is created up front, so a rate is defined from the first scrape on.
 */
public final class MicrometerRetryMetrics implements RetryListener {
  /** The tag that names the budget, on every meter (as on the degraded gauge and the coordinator's). */
  public static final String BUDGET_TAG = "budget";

  /** Values of the {@code outcome} tag. */
  public static final String SUCCESS = "success";
  public static final String SUCCESS_WITH_RETRY = "success_with_retry";
  public static final String BUDGET_EXHAUSTED = "budget_exhausted";

  private final Counter firstAttempts;
  private final Counter retries;
  private final Counter hedges;
  private final Counter hedgesWon;
  private final Counter hedgesDenied;
  private final Counter success;
  private final Counter successWithRetry;
  private final Map<RetryOutcome, Counter> failures = new EnumMap<>(RetryOutcome.class);
  private final Map<BudgetDecision.Reason, Counter> denials = new EnumMap<>(BudgetDecision.Reason.class);
  private final Timer backoff;

  /** @param name the executor's name, e.g. the dependency it calls (tag {@code name}) */
  public MicrometerRetryMetrics(MeterRegistry registry, String name) {
    Objects.requireNonNull(registry, "registry must not be null");
    Objects.requireNonNull(name, "name must not be null");
    firstAttempts = attempts(registry, name, "first");
    retries = attempts(registry, name, "retry");
    hedges = attempts(registry, name, "hedge");
    hedgesWon = hedgeCounter(registry, name, "won");
    hedgesDenied = hedgeCounter(registry, name, "denied");
    success = calls(registry, name, SUCCESS);
    successWithRetry = calls(registry, name, SUCCESS_WITH_RETRY);
    for (RetryOutcome outcome : RetryOutcome.values()) {
      if (outcome != RetryOutcome.SUCCESS) {
        failures.put(outcome, calls(registry, name, outcomeTag(outcome)));
      }
    }
    for (BudgetDecision.Reason reason : BudgetDecision.Reason.values()) {
      if (!reason.granted()) {
        denials.put(reason, Counter.builder("retry.budget.denials")
            .description("Retries refused by the retry budget, by reason")
            .tag(BUDGET_TAG, name).tag("reason", reason.tag()).register(registry));
      }
    }
    backoff = Timer.builder("retry.backoff").description("Delays planned before retries")
        .tag(BUDGET_TAG, name).register(registry);
  }

  /** The {@code outcome} tag of a call that ended this way (a success after one attempt: {@code success}). */
  public static String outcomeTag(RetryOutcome outcome) {
    return switch (outcome) {
      case SUCCESS -> SUCCESS;
      case BUDGET_EXHAUSTED -> BUDGET_EXHAUSTED;
      case CANCELLED -> "cancelled";
      case CLOSED -> "closed";
      case ERROR -> "failed_error";
      case NOT_RETRYABLE -> "failed_not_retryable";
      case NOT_IDEMPOTENT -> "failed_not_idempotent";
      case MAX_ATTEMPTS -> "failed_max_attempts";
      case DEADLINE -> "failed_deadline";
      case SERVER_DELAY_TOO_LONG -> "failed_server_delay";
      case SERVER_SAYS_NO -> "failed_server_pushback";
    };
  }

  private static Counter attempts(MeterRegistry registry, String name, String kind) {
    return Counter.builder("retry.attempts").description("Attempts sent, by kind")
        .tag(BUDGET_TAG, name).tag("kind", kind).register(registry);
  }

  private static Counter hedgeCounter(MeterRegistry registry, String name, String result) {
    return Counter.builder("retry.hedges").description("Hedged requests that won, or that the budget refused")
        .tag(BUDGET_TAG, name).tag("result", result).register(registry);
  }

  private static Counter calls(MeterRegistry registry, String name, String outcome) {
    return Counter.builder("retry.calls").description("Calls ended, by outcome")
        .tag(BUDGET_TAG, name).tag("outcome", outcome).register(registry);
  }

  @Override
  public void onAttempt(int attempt) {
    (attempt == 1 ? firstAttempts : retries).increment();
  }

  @Override
  public void onHedge(int attempt) {
    hedges.increment();
  }

  @Override
  public void onHedgeWon(int attempt) {
    hedgesWon.increment();
  }

  @Override
  public void onHedgeDenied(BudgetDecision decision) {
    hedgesDenied.increment();
  }

  @Override
  public void onRetryScheduled(int nextAttempt, long delayNanos, Throwable failure) {
    backoff.record(delayNanos, TimeUnit.NANOSECONDS);
  }

  @Override
  public void onBudgetDenied(BudgetDecision decision) {
    Counter c = denials.get(decision.reason());
    if (c != null) {
      c.increment();
    }
  }

  @Override
  public void onOutcome(RetryOutcome outcome, int attempts) {
    if (outcome == RetryOutcome.SUCCESS) {
      (attempts == 1 ? success : successWithRetry).increment();
    } else {
      failures.get(outcome).increment();
    }
  }
}
