package io.retrybudget.bench.metastable;

import io.retrybudget.retry.RetryScheduler;
import io.retrybudget.server.AdmissionQueue;
import io.retrybudget.server.QueueConfig;
import io.retrybudget.server.StoredResponse;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.DoubleSupplier;
import java.util.function.LongSupplier;

/**
 * The server half of the fifth arm: server-kit's {@link AdmissionQueue} in front of the K workers.
 * The queue owns the workers (its permits): a request starts when the queue says so and frees its
 * worker when the core has answered it. A request whose {@code X-Request-Deadline-Ms} passes while
 * it waits (or that could not finish in time: the margin is the service time S) is answered 504
 * with do-not-retry pushback and never served; one that waits past the CoDel-style bound or finds
 * the queue full is answered 503 with a spread {@code X-Retry-Pushback-Ms}; retries wait behind
 * first attempts; while the queue is standing the newest request is served first.
 *
 * <p>Every decision runs on the backend's thread: requests arrive there, workers are released
 * there, and the queue's expiry timer is the {@code scheduler} given, which the backend runs on the
 * same thread (its Vert.x context; fake time in the model).
 */
final class ServerKitAdmission implements Admission {
  private final AdmissionQueue queue;

  ServerKitAdmission(AdmissionQueue queue) {
    this.queue = queue;
  }

  /**
   * The queue this experiment runs: K workers, the same queue bound as the FIFO arms, a wait
   * bounded by {@code S / 5} once the queue has stood for {@code T / 2}, and by {@code T / 2}
   * otherwise (a burst of several K requests is absorbed, and a request that waited its longest
   * still has half its deadline when it starts), adaptive LIFO, a deadline margin of {@code S} (a
   * request that cannot be served before its caller gives up is not started), server-kit's default
   * pushback.
   */
  static QueueConfig config(Params p) {
    Duration s = Duration.ofMillis(p.serviceMillis());
    Duration half = Duration.ofMillis(Math.max(1, p.attemptTimeoutMillis() / 2));
    Duration shortest = s.dividedBy(5).isZero() ? Duration.ofMillis(1) : s.dividedBy(5);
    Duration longest = half.compareTo(shortest) < 0 ? shortest : half;
    return QueueConfig.builder(p.workers()).name("metastable").maxQueue(p.queueLimit())
        .shortTimeout(shortest).longTimeout(longest).interval(longest).adaptiveLifo(true).deadlineMargin(s).build();
  }

  /** The queue for {@code p} on the given clock, timer and pushback random source. */
  static ServerKitAdmission of(Params p, LongSupplier nanoClock, RetryScheduler scheduler, DoubleSupplier random) {
    return new ServerKitAdmission(AdmissionQueue.builder(config(p)).nanoClock(nanoClock).scheduler(scheduler)
        .random(random).build());
  }

  @Override
  public void arrive(Job job, long nowMillis, Decisions decisions) {
    long left = job.deadlineMillis == Long.MAX_VALUE ? -1 : Math.max(0, job.deadlineMillis - job.arrivalMillis);
    queue.submit(job.attempt, left, queue.nanoTime(), new AdmissionQueue.Waiter() {
      @Override
      public void start(AdmissionQueue.Permit permit) {
        decisions.start(job, permit::release);
      }

      @Override
      public void reject(AdmissionQueue.Rejection rejection) {
        StoredResponse answer = rejection.answer();
        Map<String, String> headers = new LinkedHashMap<>();
        for (StoredResponse.Header h : answer.headers()) {
          headers.put(h.name(), h.value());
        }
        decisions.refuse(job, answer.status(), headers);
      }
    });
  }

  @Override
  public int waiting() {
    return queue.queueLength();
  }

  /** What the queue decided so far (starts, drops by reason). */
  AdmissionQueue.Stats stats() {
    return queue.stats();
  }
}
