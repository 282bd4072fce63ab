package io.retrybudget.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.DoubleSupplier;
import org.junit.jupiter.api.Test;

/** The queue as adapters use it, on fake time: the timer's answers, the pushback's spread, metrics. */
class AdmissionQueueTest {
  private final FakeClock clock = new FakeClock();

  /** What a waiter was told. */
  private static final class Told implements AdmissionQueue.Waiter {
    AdmissionQueue.Permit permit;
    AdmissionQueue.Rejection rejection;
    int calls;

    @Override
    public void start(AdmissionQueue.Permit p) {
      permit = p;
      calls++;
    }

    @Override
    public void reject(AdmissionQueue.Rejection r) {
      rejection = r;
      calls++;
    }
  }

  private final List<String> events = new CopyOnWriteArrayList<>();
  private final ServerKitListener recording = new ServerKitListener() {
    @Override
    public void onQueueStart(String queue, boolean retry, long waitedNanos) {
      events.add("start " + queue + " " + (retry ? "retry" : "first") + " " + waitedNanos / 1_000_000 + "ms");
    }

    @Override
    public void onQueueDrop(String queue, boolean retry, QueueDrop reason, long waitedNanos) {
      events.add("drop " + queue + " " + reason.tag() + " " + waitedNanos / 1_000_000 + "ms");
    }

    @Override
    public void onReplayAdmitted(String queue) {
      events.add("replay " + queue);
    }
  };

  private AdmissionQueue queue(QueueConfig.Builder config, DoubleSupplier random) {
    return AdmissionQueue.builder(config.name("q").build()).nanoClock(clock::nanos).scheduler(clock).random(random)
        .listener(recording).build();
  }

  private Told submit(AdmissionQueue q, int attempt, long deadlineMs) {
    Told t = new Told();
    q.submit(attempt, deadlineMs, clock.nanos(), t);
    return t;
  }

  private long at(long ms) {
    return 1_000_000_000L + ms * 1_000_000L;
  }

  @Test
  void aDeadlineThatPassesWhileWaitingIsAnswered504DoNotRetryByTheTimerAndNeverStarts() {
    AdmissionQueue q = queue(QueueConfig.builder(1).longTimeout(Duration.ofSeconds(1)).interval(Duration.ofSeconds(1)),
        () -> 0.5);
    Told a = submit(q, 1, -1);
    Told b = submit(q, 1, 30);
    assertTrue(a.permit != null && b.calls == 0);
    clock.runUntil(at(29));
    assertEquals(0, b.calls, "still waiting");
    clock.runUntil(at(30));
    assertEquals(1, b.calls, "answered when its deadline passed, by the timer");
    assertNull(b.permit);
    assertEquals(QueueDrop.DEADLINE, b.rejection.reason());
    StoredResponse r = b.rejection.answer();
    assertEquals(504, r.status());
    assertEquals("-1", r.header("X-Retry-Pushback-Ms"));
    assertNull(r.header("Retry-After"));
    assertTrue(new String(r.body()).contains("urn:retrybudget:problem:deadline-exceeded"));
    a.permit.release();
    assertEquals(1, b.calls, "b never starts");
    assertEquals(0, q.running());
    assertEquals(List.of("start q first 0ms", "drop q deadline 30ms"), events);
    assertEquals(0, clock.pending(), "no timer left armed");
  }

  @Test
  void aRequestWhoseCallerHasGivenUpIsNeverStarted() {
    AdmissionQueue q = queue(QueueConfig.builder(4), () -> 0.5);
    Told t = submit(q, 1, 0);
    assertEquals(504, t.rejection.answer().status());
    assertEquals(0, q.stats().startedFirst());
    assertEquals(1, q.stats().droppedDeadline());
  }

  @Test
  void aHugeDeadlineIsCappedAndNoneIsNoDeadline() {
    AdmissionQueue q = queue(QueueConfig.builder(1).maxDeadline(Duration.ofMillis(20)).longTimeout(Duration.ofSeconds(1))
        .interval(Duration.ofSeconds(1)), () -> 0.5);
    submit(q, 1, -1);
    Told capped = submit(q, 1, Long.MAX_VALUE / 2);
    clock.runUntil(at(20));
    assertEquals(QueueDrop.DEADLINE, capped.rejection.reason(), "believed for 20 ms only");
    Told none = submit(q, 1, -1);
    clock.runUntil(at(1019));
    assertEquals(0, none.calls);
    clock.runUntil(at(1020));
    assertEquals(QueueDrop.CODEL, none.rejection.reason(), "no deadline: the long timeout ends its wait");
  }

  @Test
  void shedAnswersSpreadTheirPushbackOverTheDrainTime() {
    // 2 workers whose requests took 100 ms each; then 2 run and 4 wait: drain = 6 / 2 * 100 ms = 300 ms
    double[] u = {0.0};
    AdmissionQueue q = queue(QueueConfig.builder(2).maxQueue(4).longTimeout(Duration.ofSeconds(10))
        .interval(Duration.ofSeconds(10)).pushback(ShedPushback.of(Duration.ofMillis(50), Duration.ofSeconds(5), 1.0)),
        () -> u[0]);
    List<Told> first = List.of(submit(q, 1, -1), submit(q, 1, -1));
    clock.runUntil(at(100));
    first.forEach(t -> t.permit.release());
    List<Told> running = List.of(submit(q, 1, -1), submit(q, 1, -1));
    for (int i = 0; i < 4; i++) {
      submit(q, 1, -1);
    }
    assertEquals(2, q.running());
    assertEquals(4, q.queueLength());
    TreeSet<Long> seen = new TreeSet<>();
    for (double v : new double[] {0.0, 0.25, 0.5, 0.999999}) {
      u[0] = v;
      AdmissionQueue.Rejection r = submit(q, 1, -1).rejection;
      assertEquals(QueueDrop.FULL, r.reason());
      assertEquals(503, r.answer().status());
      assertTrue(new String(r.answer().body()).contains("urn:retrybudget:problem:queue-full"));
      long ms = Long.parseLong(r.answer().header("X-Retry-Pushback-Ms"));
      assertEquals(Long.toString((ms + 999) / 1000), r.answer().header("Retry-After"));
      seen.add(ms);
    }
    assertEquals(new TreeSet<>(List.of(300L, 375L, 450L, 600L)), seen, "uniform over [drain, 2 x drain]");
    running.forEach(t -> t.permit.release());
  }

  @Test
  void theSpreadRuleClampsItsBaseAndTakesTheRandomAsGiven() {
    ShedPushback p = ShedPushback.of(Duration.ofMillis(100), Duration.ofSeconds(2), 0.5);
    assertEquals(100, p.millis(0, 0.0), "no estimate yet: the least base");
    assertEquals(150, p.millis(0, 0.999999), "... spread by half of it");
    assertEquals(1001, p.millis(1_000_000_001L, 0.0), "a drain time rounds up to whole ms");
    assertEquals(2000, p.millis(Long.MAX_VALUE, 0.0), "the largest base");
    assertEquals(3000, p.millis(Long.MAX_VALUE, 0.999999));
    assertEquals(100, ShedPushback.of(Duration.ofMillis(100), Duration.ofSeconds(2), 0).millis(0, 0.9), "no spread");
    assertThrows(IllegalArgumentException.class, () -> p.millis(0, 1.0));
    // every whole ms of [base, base + width] is reachable, and nothing else
    TreeSet<Long> all = new TreeSet<>();
    for (int i = 0; i < 10_000; i++) {
      all.add(p.millis(0, i / 10_000.0));
    }
    assertEquals(51, all.size());
    assertEquals(100, all.first());
    assertEquals(150, all.last());
  }

  @Test
  void whileTheWholeServiceIsOverloadedAShedAnswerSaysDoNotRetry() {
    AdmissionQueue q = AdmissionQueue.builder(QueueConfig.builder(1).maxQueue(0).build()).nanoClock(clock::nanos)
        .scheduler(clock).serviceOverload(() -> true).build();
    submit(q, 1, -1);
    StoredResponse r = submit(q, 1, -1).rejection.answer();
    assertEquals(503, r.status());
    assertEquals("-1", r.header("X-Retry-Pushback-Ms"));
    assertEquals("30", r.header("Retry-After"));
  }

  @Test
  void aCancelledRequestIsNeverToldAndItsTimerIsCalledOff() {
    AdmissionQueue q = queue(QueueConfig.builder(1), () -> 0.5);
    Told a = submit(q, 1, -1);
    Told b = new Told();
    AdmissionQueue.Ticket t = q.submit(1, 50, clock.nanos(), b);
    assertEquals(at(50), t.expiresAtNanos());
    assertTrue(t.cancel());
    assertFalse(t.cancel(), "once");
    assertEquals(0, clock.pending());
    clock.runUntil(at(200));
    a.permit.release();
    assertEquals(0, b.calls);
    assertEquals(1, q.stats().cancelled());
  }

  @Test
  void aWaiterThatThrowsGivesItsWorkerBack() {
    AdmissionQueue q = queue(QueueConfig.builder(1), () -> 0.5);
    q.submit(1, -1, clock.nanos(), new AdmissionQueue.Waiter() {
      @Override
      public void start(AdmissionQueue.Permit permit) {
        throw new IllegalStateException("the waiter's bug");
      }

      @Override
      public void reject(AdmissionQueue.Rejection rejection) {}
    });
    assertEquals(0, q.running());
    Told next = submit(q, 1, -1);
    assertTrue(next.permit != null, "the worker is free again");
  }

  @Test
  void aPermitReleasedTwiceFreesOneWorker() {
    AdmissionQueue q = queue(QueueConfig.builder(2), () -> 0.5);
    Told a = submit(q, 1, -1);
    submit(q, 2, -1);
    a.permit.release();
    a.permit.release();
    assertEquals(1, q.running());
    assertEquals(new AdmissionQueue.Stats(1, 1, 0, 0, 0, 0, 0), q.stats());
  }

  @Test
  void replaysAreCountedOutsideTheQueueAndStandingShowsAsLifo() {
    AdmissionQueue q = queue(QueueConfig.builder(1).shortTimeout(Duration.ofMillis(5)).longTimeout(Duration.ofMillis(100))
        .interval(Duration.ofMillis(10)), () -> 0.5);
    q.replayAdmitted();
    assertEquals(1, q.stats().replays());
    Told a = submit(q, 1, -1);
    List<Told> waiting = new ArrayList<>();
    waiting.add(submit(q, 1, -1));
    assertFalse(q.lifo());
    clock.runUntil(at(9));
    waiting.add(submit(q, 2, -1));
    clock.runUntil(at(10));
    assertTrue(q.lifo(), "non-empty for the interval: standing, newest first");
    assertEquals(QueueDrop.CODEL, waiting.get(0).rejection.reason(), "waited 10 ms > 5 ms once standing");
    assertTrue(new String(waiting.get(0).rejection.answer().body()).contains("queue-timeout"));
    a.permit.release();
    assertTrue(waiting.get(1).permit != null);
    assertFalse(q.lifo());
    assertEquals(List.of("replay q", "start q first 0ms", "drop q codel 10ms", "start q retry 1ms"), events);
  }

  @Test
  void aCancelThatFindsTheRequestExpiredLetsItBeAnsweredAndSaysItWasNotWaiting() {
    long[] now = {0};
    AdmissionQueue q = AdmissionQueue.builder(QueueConfig.builder(1).build()).nanoClock(() -> now[0])
        .scheduler((task, delay) -> () -> {}).build(); // a timer that has not fired yet
    submit(q, 1, -1);
    Told b = new Told();
    AdmissionQueue.Ticket t = q.submit(1, 10, 0, b);
    now[0] = 10_000_000L;
    assertFalse(t.cancel(), "it had expired: not cancelled");
    assertEquals(QueueDrop.DEADLINE, b.rejection.reason(), "answered by the event that found it expired");
    assertEquals(0, q.stats().cancelled());
  }

  @Test
  void withADeadlineMarginARequestThatCannotFinishInTimeIsNotStarted() {
    AdmissionQueue q = queue(QueueConfig.builder(1).deadlineMargin(Duration.ofMillis(20))
        .longTimeout(Duration.ofSeconds(1)).interval(Duration.ofSeconds(1)), () -> 0.5);
    Told tooShort = submit(q, 1, 15);
    assertEquals(QueueDrop.DEADLINE, tooShort.rejection.reason(), "15 ms left, 20 needed: not started, worker free");
    Told a = submit(q, 1, 21);
    assertTrue(a.permit != null, "21 ms left: started");
    Told b = submit(q, 1, 30);
    clock.runUntil(at(9));
    assertEquals(0, b.calls);
    clock.runUntil(at(10));
    assertEquals(QueueDrop.DEADLINE, b.rejection.reason(), "dropped when 20 ms were left");
    assertEquals(504, b.rejection.answer().status());
    assertEquals("deadlineMargin must be in [0, 1 h], was PT-0.001S",
        assertThrows(IllegalArgumentException.class, () -> QueueConfig.builder(1).deadlineMargin(Duration.ofMillis(-1)))
            .getMessage());
  }
}
