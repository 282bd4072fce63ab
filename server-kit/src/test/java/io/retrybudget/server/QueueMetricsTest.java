package io.retrybudget.server;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.retrybudget.server.micrometer.MicrometerServerKitMetrics;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The admission queue's meters: started and drops by reason, sojourn, length, running and LIFO gauges. */
class QueueMetricsTest {
  private static final AdmissionQueue.Waiter IGNORE = new AdmissionQueue.Waiter() {
    @Override
    public void start(AdmissionQueue.Permit permit) {}

    @Override
    public void reject(AdmissionQueue.Rejection rejection) {}
  };

  @Test
  void everyOutcomeIsCountedByReasonAndTheGaugesFollowTheQueue() {
    FakeClock clock = new FakeClock();
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    MicrometerServerKitMetrics metrics = new MicrometerServerKitMetrics(registry);
    AdmissionQueue q = AdmissionQueue.builder(QueueConfig.builder(1).name("api").maxQueue(2)
        .shortTimeout(Duration.ofMillis(5)).longTimeout(Duration.ofMillis(100)).interval(Duration.ofMillis(20)).build())
        .nanoClock(clock::nanos).scheduler(clock).listener(metrics).build();
    metrics.monitor(q);
    q.submit(1, -1, clock.nanos(), IGNORE);                       // runs, holds the worker
    q.submit(1, 10, clock.nanos(), IGNORE);                       // its deadline passes in 10 ms
    AdmissionQueue.Ticket cancelled = q.submit(2, -1, clock.nanos(), IGNORE);
    q.submit(2, -1, clock.nanos(), IGNORE);                       // full: shed
    assertEquals(2.0, registry.get("retry.server.queue.length").tag("queue", "api").gauge().value());
    assertEquals(1.0, registry.get("retry.server.queue.running").tag("queue", "api").gauge().value());
    cancelled.cancel();
    clock.runUntil(clock.nanos() + TimeUnit.MILLISECONDS.toNanos(10));
    q.submit(1, -1, clock.nanos(), IGNORE);                       // waits into a standing queue
    clock.runUntil(clock.nanos() + TimeUnit.MILLISECONDS.toNanos(9));
    assertEquals(0.0, registry.get("retry.server.queue.lifo").tag("queue", "api").gauge().value());
    clock.runUntil(clock.nanos() + TimeUnit.MILLISECONDS.toNanos(11));
    // non-empty since 10 ms, standing at 30 ms: the one waiting since 10 ms (> 5 ms) is dropped then
    assertEquals(0.0, registry.get("retry.server.queue.length").tag("queue", "api").gauge().value());
    q.replayAdmitted();
    for (String[] reasonCount : new String[][] {{"deadline", "1"}, {"codel", "1"}, {"full", "1"}, {"cancelled", "1"}}) {
      assertEquals(Double.parseDouble(reasonCount[1]), registry.get("retry.server.queue.drops").tag("queue", "api")
          .tag("reason", reasonCount[0]).counter().count(), reasonCount[0]);
    }
    assertEquals(1.0, registry.get("retry.server.queue.started").tag("queue", "api").tag("partition", "first").counter()
        .count());
    assertEquals(1, registry.get("retry.server.queue.sojourn").tag("queue", "api").tag("result", "started").timer().count());
    assertEquals(4, registry.get("retry.server.queue.sojourn").tag("queue", "api").tag("result", "dropped").timer().count());
    assertEquals(20.0, registry.get("retry.server.queue.sojourn").tag("queue", "api").tag("result", "dropped").timer()
        .max(TimeUnit.MILLISECONDS), "the longest wait: the one dropped when the queue stood");
    assertEquals(1.0, registry.get("retry.server.admission").tag("limiter", "api").tag("partition", "replay").counter()
        .count());
    assertEquals(2.0, registry.get("retry.server.admission.shed.answers").tag("limiter", "api").tag("pushback", "wait")
        .counter().count(), "the codel and full sheds");
  }
}
