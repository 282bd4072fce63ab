package io.retrybudget.server;

import java.net.http.HttpResponse;

/**
 * How a middle layer's downstream call ended ({@link MiddleLayer#send}): answered (a success or a
 * 4xx that is the request's own answer, to pass on), or a failure after which the layers above
 * must not retry ({@link #suppress()}), with the reason.
 */
public record Downstream<T>(HttpResponse<T> response, Throwable failure, Reason reason) {
  public enum Reason {
    /** The downstream answered with a success or a non-retryable status: pass it on. */
    ANSWERED,
    /** This layer's budget refused a retry. */
    BUDGET_EXHAUSTED,
    /** A retryable failure (5xx, 429, network, timeout) after the attempts this layer was allowed. */
    FAILED_AFTER_RETRIES,
    /** The downstream said do not retry ({@code X-Retry-Pushback-Ms} negative). */
    DOWNSTREAM_SAID_STOP,
    /**
     * The inbound request's deadline ({@code X-Request-Deadline-Ms}, less the layer's margin) was
     * spent before a downstream call could start: nothing was sent downstream.
     */
    DEADLINE_EXCEEDED
  }

  /** True when the answer upstream must say "do not retry". */
  public boolean suppress() {
    return reason != Reason.ANSWERED;
  }

  /**
   * The answer for the layer above when {@link #suppress()}: 503 (budget), 504 (deadline spent
   * before a call could start) or 502 problem+json with
   * {@code X-Retry-Pushback-Ms: -1}, so no layer above retries what this one has already retried.
   */
  public StoredResponse suppressedAnswer() {
    return switch (reason) {
      case BUDGET_EXHAUSTED -> Problems.withPushback(Problems.of(503, "downstream-budget-exhausted",
          "Downstream retry budget exhausted", "a dependency is failing and its retry budget is spent; do not retry"),
          java.time.Duration.ofMillis(-1));
      case DEADLINE_EXCEEDED -> Problems.withPushback(Problems.of(504, "deadline-exceeded",
          "Deadline exceeded", "the caller's deadline leaves no time for a downstream call; do not retry"),
          java.time.Duration.ofMillis(-1));
      case DOWNSTREAM_SAID_STOP -> Problems.withPushback(Problems.of(502, "downstream-do-not-retry",
          "Downstream said do not retry", "a dependency asked not to be retried"), java.time.Duration.ofMillis(-1));
      default -> Problems.withPushback(Problems.of(502, "downstream-failed",
          "Downstream failed after retries", "a dependency failed after this service's retries; do not retry"),
          java.time.Duration.ofMillis(-1));
    };
  }
}
