package io.retrybudget.server;

import java.time.Duration;
import java.util.function.DoubleSupplier;

/**
 * What an {@link AdmissionQueue} answers a request it drops: 504 do-not-retry for a passed
 * deadline; 503 with a spread pushback ({@link ShedPushback}) for one shed (waited too long, queue
 * full), or do-not-retry only when the {@link ServiceOverloadSignal} says the whole service is
 * overloaded.
 */
final class QueueAnswers {
  private final QueueConfig config;
  private final ServiceOverloadSignal signal;
  private final DoubleSupplier random;
  private final ServerKitListener listener;

  QueueAnswers(QueueConfig config, ServiceOverloadSignal signal, DoubleSupplier random, ServerKitListener listener) {
    this.config = config;
    this.signal = signal;
    this.random = random;
    this.listener = listener;
  }

  static StoredResponse deadline() {
    return Problems.withPushback(Problems.of(504, "deadline-exceeded", "Deadline exceeded",
        "the request's deadline (X-Request-Deadline-Ms) passed before a worker was free: it was not processed; "
            + "do not retry"), Duration.ofMillis(-1));
  }

  /** The answer to a request shed for {@code reason} (CODEL or FULL) while the queue's work drains in {@code drainNanos}. */
  StoredResponse shed(QueueDrop reason, long drainNanos) {
    ServerKitListener.safely(signal::onShed);
    boolean doNotRetry = signal.wholeServiceOverloaded();
    ServerKitListener.safely(() -> listener.onShedAnswer(config.name(), doNotRetry));
    if (doNotRetry) {
      long s = Math.max(1, (config.overloadRetryAfter().toMillis() + 999) / 1000);
      return Problems.withPushback(Problems.of(503, "service-overloaded", "Service overloaded",
          "the whole service is overloaded: do not retry this request"), Duration.ofMillis(-1))
          .withHeader("Retry-After", Long.toString(s));
    }
    long ms = config.pushback().millis(drainNanos, random.getAsDouble());
    StoredResponse r = reason == QueueDrop.FULL
        ? Problems.of(503, "queue-full", "Queue full", "every worker is busy and the queue is full; retry after the pushback")
        : Problems.of(503, "queue-timeout", "Queue timeout",
            "the request waited its longest for a worker and was not processed; retry after the pushback");
    return Problems.withPushback(r, Duration.ofMillis(ms));
  }
}
