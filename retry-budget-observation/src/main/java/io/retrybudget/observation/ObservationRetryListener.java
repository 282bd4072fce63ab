package io.retrybudget.observation;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import io.retrybudget.retry.RetryListener;
import io.retrybudget.retry.RetryOutcome;
import java.util.Objects;

/**
 * A {@link RetryListener} that makes a Micrometer {@link Observation} of every call an executor runs
 * (and so of every call of the integrations built on one: {@code RetryingHttpClient}, OkHttp,
 * Vert.x, gRPC, Spring), with one child observation per attempt. Through a tracing bridge
 * (micrometer-tracing-bridge-otel, -brave) each becomes a span:
 *
 * <ul>
 *   <li>{@value #CALL} — the call, a child of the observation current on the caller's thread when
 *       the call starts. Low-cardinality keys: {@value #BUDGET} (the name given to the builder),
 *       {@value #OUTCOME} (the values of {@code retry.calls{outcome}}: {@code success},
 *       {@code success_with_retry}, {@code budget_exhausted}, {@code failed_deadline} ...) and
 *       {@value #SUPPRESSED_REASON} ({@link SuppressedReason}, {@code none} when no retry was
 *       suppressed); high: {@value #ATTEMPTS}, and {@value #BUDGET_DECISION} when the budget refused.
 *       Event {@value #SUPPRESSED_EVENT} when a failed attempt was not retried, at that moment, with
 *       the reason in {@value #SUPPRESSED_REASON}: budget, pushback (the server said not to retry,
 *       or asked for a wait beyond the cap or the deadline), deadline, attempts, not retryable, not
 *       idempotent. Event {@value #HEDGE_SUPPRESSED_EVENT} when the budget refused a hedge (the
 *       call goes on). Its error is the last attempt's failure when the call did not succeed.
 *   <li>{@value #ATTEMPT} — one per attempt, hedges included, a child of the call, current on the
 *       thread that runs the attempt function while it runs (so the HTTP client's own span nests in
 *       it and carries its trace on the wire). Low: {@value #BUDGET}, {@value #KIND}
 *       ({@code first}, {@code retry}, {@code hedge}); high, on every attempt but the first:
 *       {@value #RESEND_COUNT} (OpenTelemetry's stable HTTP attribute: the ordinal number of the
 *       resend, 1 for the first retry or hedge; absent on the first attempt) and
 *       {@value #RETRY_REASON} (why it was sent: {@code hedge}, or what {@link RetryReasons} names
 *       from the answer of the attempt before it: {@code timeout}, {@code 503},
 *       {@code java.net.ConnectException}). Its error is the attempt's failure. An attempt still
 *       running when the call ends (a hedge that lost) ends with it, marked {@value #ABANDONED}.
 * </ul>
 *
 * <p>Micrometer Tracing tags spans with strings: through its OpenTelemetry bridge
 * {@value #RESEND_COUNT} arrives as the string {@code "1"}, where the convention types it int.
 *
 * <p>With the no-op registry (or a call the registry's predicates decline) the listener keeps
 * nothing per call and the executor allocates nothing for it.
 */
public final class ObservationRetryListener implements RetryListener {
  /** The call's observation name. */
  public static final String CALL = "retry.call";
  /** Each attempt's observation name. */
  public static final String ATTEMPT = "retry.attempt";
  /** The budget's (or client's) name, as the {@code budget} tag of every metric of the project. */
  public static final String BUDGET = "budget";
  public static final String OUTCOME = "retry.outcome";
  public static final String ATTEMPTS = "retry.attempts";
  public static final String KIND = "retry.attempt.kind";
  /** OpenTelemetry's {@code http.request.resend_count}: absent on the first attempt, n on the n-th resend. */
  public static final String RESEND_COUNT = "http.request.resend_count";
  public static final String RETRY_REASON = "retry.reason";
  public static final String SUPPRESSED_EVENT = "retry.suppressed";
  public static final String SUPPRESSED_REASON = "retry.suppressed.reason";
  public static final String HEDGE_SUPPRESSED_EVENT = "retry.hedge.suppressed";
  /** The budget's refusal ({@code exhausted}, {@code exhausted_cached}, {@code fallback}, {@code throttled}). */
  public static final String BUDGET_DECISION = "retry.budget.decision";
  public static final String ABANDONED = "retry.attempt.abandoned";

  final ObservationRegistry registry;
  final String name;
  final RetryReasons reasons;

  private ObservationRetryListener(Builder b) {
    this.registry = b.registry;
    this.name = b.name;
    this.reasons = b.reasons;
  }

  /**
   * @param registry the application's observation registry
   * @param name the budget's (or client's) name, the {@value #BUDGET} key of every observation
   */
  public static Builder builder(ObservationRegistry registry, String name) {
    return new Builder(registry, name);
  }

  /** A new observation of the call starting now, or this listener itself (no state) when it is not observed. */
  @Override
  public RetryListener onCallStart() {
    if (registry.isNoop()) {
      return this;
    }
    Observation call = Observation.createNotStarted(CALL, registry).lowCardinalityKeyValue(BUDGET, name);
    if (call.isNoop()) {
      return this;
    }
    call.start();
    return new CallObservation(this, call);
  }

  /** The {@value #OUTCOME} value of a call that ended this way after {@code attempts} attempts. */
  public static String outcomeTag(RetryOutcome outcome, int attempts) {
    return switch (outcome) {
      case SUCCESS -> attempts > 1 ? "success_with_retry" : "success";
      case BUDGET_EXHAUSTED -> "budget_exhausted";
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

  @Override
  public String toString() {
    return "ObservationRetryListener{" + name + "}";
  }

  /** Validates every value as it is set. */
  public static final class Builder {
    private final ObservationRegistry registry;
    private final String name;
    private RetryReasons reasons = RetryReasons.DEFAULT;

    private Builder(ObservationRegistry registry, String name) {
      this.registry = Objects.requireNonNull(registry, "registry must not be null");
      this.name = Objects.requireNonNull(name, "name must not be null");
      if (name.isBlank()) {
        throw new IllegalArgumentException("name must not be blank, was '" + name + "'");
      }
    }

    /** How {@value #RETRY_REASON} names an answer; {@link RetryReasons#DEFAULT} by default. */
    public Builder reasons(RetryReasons reasons) {
      this.reasons = Objects.requireNonNull(reasons, "reasons must not be null");
      return this;
    }

    public ObservationRetryListener build() {
      return new ObservationRetryListener(this);
    }
  }
}
