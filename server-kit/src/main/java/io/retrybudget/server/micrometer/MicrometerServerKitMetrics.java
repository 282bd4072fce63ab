package io.retrybudget.server.micrometer;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.retrybudget.server.AdmissionQueue;
import io.retrybudget.server.ClaimStore;
import io.retrybudget.server.Downstream;
import io.retrybudget.server.IdempotencyGuard;
import io.retrybudget.server.QueueDrop;
import io.retrybudget.server.RetryAwareAdmission;
import io.retrybudget.server.ServerKitListener;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The server kit's decisions as Micrometer meters (Micrometer is an optional dependency of
 * server-kit: add {@code micrometer-core} to use this). Pass one instance as the
 * {@link ServerKitListener} of the guards, the admission and the middle layers, and
 * {@code monitor(...)} the objects whose state is a gauge. Names (Prometheus form in brackets):
 *
 * <ul>
 *   <li>{@code retry.server.idempotency} {route, outcome} [retry_server_idempotency_total]
 *   <li>{@code retry.server.ties} {route, outcome = won|lost|unasked} [retry_server_ties_total]
 *   <li>{@code retry.server.admission} {limiter, partition = first|retry, result = admitted|shed}
 *   <li>{@code retry.server.admission.shed.answers} {limiter, pushback = wait|do_not_retry}
 *   <li>{@code retry.server.suppressions} {reason = budget_exhausted|failed_after_retries|downstream_said_stop}
 *   <li>{@code retry.server.queue.started} {queue, partition = first|retry} [retry_server_queue_started_total]
 *   <li>{@code retry.server.queue.drops} {queue, reason = deadline|codel|full|cancelled}
 *       [retry_server_queue_drops_total]
 *   <li>timer {@code retry.server.queue.sojourn} {queue, result = started|dropped}: time spent waiting
 *       [retry_server_queue_sojourn_seconds_count/_sum/_max]
 *   <li>gauges {@code retry.server.queue.length}, {@code retry.server.queue.running},
 *       {@code retry.server.queue.lifo} (1 while the queue serves newest first) {queue}
 *   <li>gauges {@code retry.server.admission.limit} and {@code retry.server.admission.inflight}
 *       {limiter}; {@code retry.server.idempotency.renewing} (leases being renewed);
 *       counters {@code retry.server.claims.unanswered} {result = sent|abandoned}
 * </ul>
 *
 * <p>Bounded tags: {@code route} is the framework's route template, never the concrete path, and
 * at most {@code maxRoutes} (default 100) distinct ones are kept; later ones are counted as
 * {@code other}, a request that matched no route as {@code unmatched}.
 */
public final class MicrometerServerKitMetrics implements ServerKitListener {
  public static final String OTHER_ROUTE = "other";
  public static final String UNMATCHED_ROUTE = "unmatched";

  private final MeterRegistry registry;
  private final int maxRoutes;
  private final java.util.Set<String> routes = ConcurrentHashMap.newKeySet();
  private final ConcurrentHashMap<String, Counter> counters = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<String, Timer> timers = new ConcurrentHashMap<>();

  public MicrometerServerKitMetrics(MeterRegistry registry) {
    this(registry, 100);
  }

  public MicrometerServerKitMetrics(MeterRegistry registry, int maxRoutes) {
    this.registry = Objects.requireNonNull(registry, "registry must not be null");
    if (maxRoutes < 1 || maxRoutes > 10_000) {
      throw new IllegalArgumentException("maxRoutes must be in [1, 10000], was " + maxRoutes);
    }
    this.maxRoutes = maxRoutes;
  }

  /** The tag value for a route template: itself while fewer than maxRoutes are known, else "other". */
  String route(String template) {
    if (template == null || template.isEmpty()) {
      return UNMATCHED_ROUTE;
    }
    if (routes.contains(template)) {
      return template;
    }
    synchronized (routes) {
      if (routes.size() < maxRoutes) {
        routes.add(template);
        return template;
      }
    }
    return OTHER_ROUTE;
  }

  private Counter counter(String name, String description, String... tags) {
    String id = name + '\u0000' + String.join("\u0000", tags);
    Counter c = counters.get(id);
    if (c == null) {
      c = counters.computeIfAbsent(id, k -> Counter.builder(name).description(description).tags(tags).register(registry));
    }
    return c;
  }

  @Override
  public void onIdempotency(String route, IdempotencyOutcome outcome) {
    counter("retry.server.idempotency", "Requests and executions by how the idempotency guard handled them",
        "route", route(route), "outcome", outcome.tag()).increment();
  }

  @Override
  public void onTie(String route, TieOutcome outcome) {
    counter("retry.server.ties", "Tied copies by how their tie claim went", "route", route(route),
        "outcome", outcome.tag()).increment();
  }

  @Override
  public void onAdmission(String limiter, boolean retry, boolean admitted) {
    counter("retry.server.admission", "Requests admitted or shed, by partition", "limiter", limiter,
        "partition", retry ? "retry" : "first", "result", admitted ? "admitted" : "shed").increment();
  }

  @Override
  public void onReplayAdmitted(String limiter) {
    counter("retry.server.admission", "Requests admitted or shed, by partition", "limiter", limiter,
        "partition", "replay", "result", "admitted").increment();
  }

  @Override
  public void onShedAnswer(String limiter, boolean doNotRetry) {
    counter("retry.server.admission.shed.answers", "Shed answers by the pushback they carried", "limiter", limiter,
        "pushback", doNotRetry ? "do_not_retry" : "wait").increment();
  }

  @Override
  public void onSuppression(Downstream.Reason reason) {
    counter("retry.server.suppressions", "Middle-layer answers that told the layer above not to retry",
        "reason", reason.name().toLowerCase(Locale.ROOT)).increment();
  }

  @Override
  public void onQueueStart(String queue, boolean retry, long waitedNanos) {
    counter("retry.server.queue.started", "Requests the admission queue gave a worker, by partition", "queue", queue,
        "partition", retry ? "retry" : "first").increment();
    sojourn(queue, "started").record(waitedNanos, TimeUnit.NANOSECONDS);
  }

  @Override
  public void onQueueDrop(String queue, boolean retry, QueueDrop reason, long waitedNanos) {
    counter("retry.server.queue.drops", "Requests that left the admission queue without running, by reason", "queue",
        queue, "reason", reason.tag()).increment();
    sojourn(queue, "dropped").record(waitedNanos, TimeUnit.NANOSECONDS);
  }

  private Timer sojourn(String queue, String result) {
    String id = queue + '\u0000' + result;
    Timer t = timers.get(id);
    if (t == null) {
      t = timers.computeIfAbsent(id, k -> Timer.builder("retry.server.queue.sojourn")
          .description("Time requests waited in the admission queue").tags("queue", queue, "result", result)
          .register(registry));
    }
    return t;
  }

  /** Gauges of an admission queue: requests waiting, running, and whether it serves newest first. */
  public MicrometerServerKitMetrics monitor(AdmissionQueue queue) {
    Gauge.builder("retry.server.queue.length", queue, AdmissionQueue::queueLength)
        .description("Requests waiting for a worker").tag("queue", queue.name()).strongReference(false)
        .register(registry);
    Gauge.builder("retry.server.queue.running", queue, AdmissionQueue::running)
        .description("Requests holding a worker").tag("queue", queue.name()).strongReference(false).register(registry);
    Gauge.builder("retry.server.queue.lifo", queue, q -> q.lifo() ? 1 : 0)
        .description("1 while the queue is standing and serves newest first").tag("queue", queue.name())
        .strongReference(false).register(registry);
    return this;
  }

  /** Gauges of a limiter's current limit and requests in flight. */
  public MicrometerServerKitMetrics monitor(RetryAwareAdmission admission) {
    Gauge.builder("retry.server.admission.limit", admission, RetryAwareAdmission::limit)
        .description("The concurrency limit now").tag("limiter", admission.name()).strongReference(false)
        .register(registry);
    Gauge.builder("retry.server.admission.inflight", admission, RetryAwareAdmission::inflight)
        .description("Admitted requests in flight").tag("limiter", admission.name()).strongReference(false)
        .register(registry);
    return this;
  }

  /** Gauge of the leases a guard is renewing (handlers running under a claim). */
  public MicrometerServerKitMetrics monitor(IdempotencyGuard guard) {
    Gauge.builder("retry.server.idempotency.renewing", guard, IdempotencyGuard::renewing)
        .description("Claims whose handler runs and whose lease is renewed").strongReference(false).register(registry);
    return this;
  }

  /** Counters of claims whose reply was lost: undo sent, and undone in Redis. */
  public MicrometerServerKitMetrics monitor(ClaimStore store) {
    FunctionCounter.builder("retry.server.claims.unanswered", store, ClaimStore::unansweredClaims)
        .description("Claims that failed on this side (timeout, lost connection): an undo was sent")
        .tag("result", "sent").register(registry);
    FunctionCounter.builder("retry.server.claims.unanswered", store, ClaimStore::unansweredClaimsAbandoned)
        .description("Claims that failed on this side (timeout, lost connection): an undo was sent")
        .tag("result", "abandoned").register(registry);
    return this;
  }
}
