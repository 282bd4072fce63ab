package io.retrybudget.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The admission queue's rules, one at a time, on fake time (milliseconds written as {@code ms(n)}). */
class QueuePolicyTest {
  private static long ms(double n) {
    return (long) (n * 1_000_000L);
  }

  /** K workers; short 5 ms, long 50 ms, interval 100 ms (long < interval, so the two bounds can be told apart). */
  private static QueuePolicy<String> policy(int workers, int maxQueue, boolean lifo) {
    return new QueuePolicy<>(QueueConfig.builder(workers).maxQueue(maxQueue).shortTimeout(Duration.ofMillis(5))
        .longTimeout(Duration.ofMillis(50)).interval(Duration.ofMillis(100)).adaptiveLifo(lifo).build(), 0);
  }

  private static QueuePolicy.Start<String> start(String item, boolean retry, long waited) {
    return new QueuePolicy.Start<>(item, retry, waited);
  }

  private static QueuePolicy.Drop<String> drop(String item, boolean retry, QueueDrop why, long waited) {
    return new QueuePolicy.Drop<>(item, retry, why, waited);
  }

  @Test
  void aFreeWorkerStartsAtOnceABusyOneQueuesAndAReleaseStartsTheNext() {
    QueuePolicy<String> p = policy(1, 10, true);
    assertEquals(List.of(start("a", false, 0)), p.offer("a", false, QueuePolicy.NO_DEADLINE, ms(0)));
    assertTrue(p.saturated());
    assertEquals(List.of(), p.offer("b", false, QueuePolicy.NO_DEADLINE, ms(1)));
    assertEquals(1, p.size());
    assertEquals(List.of(start("b", false, ms(2))), p.release(ms(3)));
    assertEquals(0, p.size());
    assertEquals(List.of(), p.release(ms(4)));
    assertFalse(p.saturated());
    assertThrows(IllegalStateException.class, () -> p.release(ms(5)), "nothing runs");
  }

  @Test
  void aRequestPastItsDeadlineOnArrivalIsNeverStartedEvenWithAWorkerFree() {
    QueuePolicy<String> p = policy(1, 10, true);
    assertEquals(List.of(drop("late", false, QueueDrop.DEADLINE, 0)), p.offer("late", false, ms(10), ms(10)));
    assertEquals(0, p.running());
  }

  @Test
  void aDeadlineThatPassesWhileWaitingDropsTheRequestThenAndItNeverStarts() {
    QueuePolicy<String> p = policy(1, 10, true);
    p.offer("a", false, QueuePolicy.NO_DEADLINE, ms(0));
    p.offer("b", false, ms(3), ms(1));
    assertEquals(ms(3), p.expiresAt("b"));
    assertEquals(ms(3), p.nextExpiryNanos(), "the timer is due at the deadline");
    assertEquals(List.of(), p.expire(ms(2.9)));
    assertEquals(List.of(drop("b", false, QueueDrop.DEADLINE, ms(2))), p.expire(ms(3)));
    assertEquals(List.of(), p.release(ms(4)), "b never runs");
  }

  @Test
  void aLateEventStillDropsTheExpiredBeforeStartingAnything() {
    QueuePolicy<String> p = policy(1, 10, true);
    p.offer("a", false, QueuePolicy.NO_DEADLINE, ms(0));
    p.offer("b", false, ms(3), ms(1));
    p.offer("c", false, QueuePolicy.NO_DEADLINE, ms(2));
    assertEquals(List.of(drop("b", false, QueueDrop.DEADLINE, ms(3)), start("c", false, ms(2))), p.release(ms(4)));
  }

  @Test
  void outsideAStandingQueueARequestWaitsTheLongTimeout() {
    QueuePolicy<String> p = policy(1, 10, true);
    p.offer("a", false, QueuePolicy.NO_DEADLINE, ms(0));
    p.offer("b", false, QueuePolicy.NO_DEADLINE, ms(10));
    assertEquals(ms(60), p.expiresAt("b"), "not standing before 110 ms: the long timeout (50 ms) ends it first");
    assertFalse(p.standing(ms(59)));
    assertEquals(List.of(drop("b", false, QueueDrop.CODEL, ms(50))), p.expire(ms(60)));
    assertFalse(p.standing(ms(60)));
  }

  @Test
  void aQueueNonEmptyForTheIntervalIsStandingAndThenRequestsWaitTheShortTimeout() {
    QueuePolicy<String> p = policy(1, 10, true);
    p.offer("a", false, QueuePolicy.NO_DEADLINE, ms(0));
    // keep the queue non-empty from 10 ms on: each arrival before the previous one expires
    p.offer("q1", false, QueuePolicy.NO_DEADLINE, ms(10));
    p.offer("q2", false, QueuePolicy.NO_DEADLINE, ms(50));
    assertEquals(List.of(drop("q1", false, QueueDrop.CODEL, ms(50))), p.expire(ms(60)));
    p.offer("q3", false, QueuePolicy.NO_DEADLINE, ms(90));
    assertEquals(List.of(drop("q2", false, QueueDrop.CODEL, ms(50))), p.expire(ms(100)));
    assertFalse(p.standing(ms(109)));
    assertEquals(ms(110), p.expiresAt("q3"), "q3 has waited 20 ms (> 5) when the queue turns standing at 110: dropped then");
    p.offer("q4", false, QueuePolicy.NO_DEADLINE, ms(108));
    assertEquals(ms(113), p.expiresAt("q4"), "q4 waits 5 ms once the queue is standing");
    assertEquals(List.of(drop("q3", false, QueueDrop.CODEL, ms(20))), p.expire(ms(110)));
    assertTrue(p.standing(ms(110)));
    assertTrue(p.lifo(ms(110)));
    assertEquals(List.of(drop("q4", false, QueueDrop.CODEL, ms(5))), p.expire(ms(113)));
    assertFalse(p.standing(ms(113)), "empty again: no longer standing");
    p.offer("q5", false, QueuePolicy.NO_DEADLINE, ms(114));
    assertFalse(p.standing(ms(114)));
    assertEquals(ms(164), p.expiresAt("q5"), "a new queue waits the long timeout again");
  }

  @Test
  void whileStandingTheNewestIsServedFirstOtherwiseTheOldest() {
    for (boolean adaptive : new boolean[] {true, false}) {
      QueuePolicy<String> p = policy(1, 10, adaptive);
      p.offer("a", false, QueuePolicy.NO_DEADLINE, ms(0));
      p.offer("old", false, QueuePolicy.NO_DEADLINE, ms(1));
      p.offer("mid", false, QueuePolicy.NO_DEADLINE, ms(2));
      p.offer("new", false, QueuePolicy.NO_DEADLINE, ms(3));
      // not standing yet (non-empty since 1 ms): first in, first out
      assertEquals(List.of(start("old", false, ms(9))), p.release(ms(10)));
      // keep it non-empty until it stands at 101 ms, with arrivals that are still within 5 ms
      p.offer("b", false, QueuePolicy.NO_DEADLINE, ms(40));
      p.offer("c", false, QueuePolicy.NO_DEADLINE, ms(80));
      p.offer("x", false, QueuePolicy.NO_DEADLINE, ms(99));
      p.offer("y", false, QueuePolicy.NO_DEADLINE, ms(100));
      List<QueuePolicy.Action<String>> at = p.release(ms(102));
      assertEquals(QueueDrop.CODEL, ((QueuePolicy.Drop<String>) at.get(0)).reason());
      QueuePolicy.Action<String> started = at.get(at.size() - 1);
      assertEquals(adaptive ? start("y", false, ms(2)) : start("x", false, ms(3)), started,
          "standing: " + (adaptive ? "newest first" : "LIFO off, oldest first"));
    }
  }

  @Test
  void firstAttemptsAreServedBeforeRetries() {
    QueuePolicy<String> p = policy(1, 10, true);
    p.offer("a", false, QueuePolicy.NO_DEADLINE, ms(0));
    p.offer("r1", true, QueuePolicy.NO_DEADLINE, ms(1));
    p.offer("f1", false, QueuePolicy.NO_DEADLINE, ms(2));
    p.offer("r2", true, QueuePolicy.NO_DEADLINE, ms(3));
    assertEquals(List.of(start("f1", false, ms(2))), p.release(ms(4)));
    assertEquals(List.of(start("r1", true, ms(4))), p.release(ms(5)));
    assertEquals(List.of(start("r2", true, ms(3))), p.release(ms(6)));
  }

  @Test
  void aFullQueueShedsAWaitingRetryForAFirstAttemptAndOtherwiseTheArrival() {
    QueuePolicy<String> p = policy(1, 2, true);
    p.offer("a", false, QueuePolicy.NO_DEADLINE, ms(0));
    p.offer("r1", true, QueuePolicy.NO_DEADLINE, ms(1));
    p.offer("r2", true, QueuePolicy.NO_DEADLINE, ms(2));
    assertEquals(List.of(drop("r3", true, QueueDrop.FULL, 0)), p.offer("r3", true, QueuePolicy.NO_DEADLINE, ms(3)),
        "a retry finding the queue full is shed");
    assertEquals(List.of(drop("r1", true, QueueDrop.FULL, ms(3))), p.offer("f1", false, QueuePolicy.NO_DEADLINE, ms(4)),
        "a first attempt takes the oldest retry's place");
    assertEquals(List.of(drop("r2", true, QueueDrop.FULL, ms(3))), p.offer("f2", false, QueuePolicy.NO_DEADLINE, ms(5)));
    assertEquals(List.of(drop("f3", false, QueueDrop.FULL, 0)), p.offer("f3", false, QueuePolicy.NO_DEADLINE, ms(6)),
        "no retry left to shed: the arrival is");
    assertEquals(2, p.size());
  }

  @Test
  void noQueueMeansKWorkersAndNothingWaits() {
    QueuePolicy<String> p = policy(2, 0, true);
    p.offer("a", false, QueuePolicy.NO_DEADLINE, ms(0));
    p.offer("b", true, QueuePolicy.NO_DEADLINE, ms(0));
    assertEquals(List.of(drop("c", false, QueueDrop.FULL, 0)), p.offer("c", false, QueuePolicy.NO_DEADLINE, ms(0)));
  }

  @Test
  void aCancelledRequestLeavesTheQueueAndAnUnknownOneChangesNothing() {
    QueuePolicy<String> p = policy(1, 10, true);
    p.offer("a", false, QueuePolicy.NO_DEADLINE, ms(0));
    p.offer("b", true, QueuePolicy.NO_DEADLINE, ms(1));
    assertEquals(List.of(drop("b", true, QueueDrop.CANCELLED, ms(1))), p.cancel("b", ms(2)));
    assertEquals(List.of(), p.cancel("b", ms(3)));
    assertEquals(List.of(), p.cancel("a", ms(3)), "a runs: cancelling is not releasing");
    assertEquals(Long.MAX_VALUE, p.nextExpiryNanos());
    assertEquals(1, p.running());
  }

  @Test
  void timeNeverGoesBack() {
    QueuePolicy<String> p = policy(1, 10, true);
    p.expire(ms(5));
    assertThrows(IllegalArgumentException.class, () -> p.expire(ms(4)));
  }

  @Test
  void theConfigurationNamesAWrongValue() {
    assertMessage("workers must be in [1, 100000], was 0", () -> QueueConfig.builder(0));
    assertMessage("maxQueue must be in [0, 1000000], was -1", () -> QueueConfig.builder(1).maxQueue(-1));
    assertMessage("shortTimeout must be positive and at most 1 h, was PT0S",
        () -> QueueConfig.builder(1).shortTimeout(Duration.ZERO));
    assertMessage("longTimeout must be at least shortTimeout (PT0.2S), was PT0.1S",
        () -> QueueConfig.builder(1).shortTimeout(Duration.ofMillis(200)).build());
    assertMessage("interval must be positive and at most 1 h, was null", () -> QueueConfig.builder(1).interval(null));
    assertMessage("maxDeadline must be in [1 ms, 1 h], was PT0.0005S",
        () -> QueueConfig.builder(1).maxDeadline(Duration.ofNanos(500_000)));
    assertMessage("pushback spread must be in [0, 10], was NaN",
        () -> ShedPushback.of(Duration.ofMillis(1), Duration.ofMillis(2), Double.NaN));
    assertMessage("pushback max must be in [min, 1 h] (min PT0.01S), was PT0.005S",
        () -> ShedPushback.of(Duration.ofMillis(10), Duration.ofMillis(5), 1));
    assertMessage("pushback min must be positive, was PT0S", () -> ShedPushback.of(Duration.ZERO, Duration.ofMillis(5), 1));
  }

  private static void assertMessage(String message, org.junit.jupiter.api.function.Executable e) {
    assertEquals(message, assertThrows(IllegalArgumentException.class, e).getMessage());
  }
}
