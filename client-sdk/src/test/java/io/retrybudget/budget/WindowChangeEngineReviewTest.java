package io.retrybudget.budget;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayDeque;
import java.util.Deque;
import org.junit.jupiter.api.Test;

/**
 * Review: a window changed while a call is on its way, on the engine's own call path ({@link BudgetLink}):
 * the call refused before it ran gives its counts back after a later call took with the new window.
 */
class WindowChangeEngineReviewTest {

  @Test
  void firstAttemptsOfACallRefusedAfterTheWindowShortenedAreSentNotDropped() {
    FakeEngine e = new FakeEngine(20, FallbackPolicy.LOCAL, () -> 0.5);
    e.store.configure(100_000, 60, 1, BudgetConfig.DEFAULT_MAX_CALLS_PER_SECOND);
    RedisRetryBudget b = e.budget(BudgetConfig.builder("w").ratio(0.1).windowSeconds(60).build());
    e.advanceMillis(600_000); // ten minutes of a 60 s window
    assertEquals(60, b.learned().windowSeconds());
    Deque<long[]> deliveries = new ArrayDeque<>();
    e.store.faults(() -> deliveries.isEmpty() ? new long[] {ModelStore.Delivery.FAST.ordinal(), 0} : deliveries.poll());
    for (int i = 0; i < 100; i++) {
      b.recordFirstAttempt();
    }
    long counted = e.store.requestsCounted;
    deliveries.add(new long[] {ModelStore.Delivery.REFUSED.ordinal(), 50}); // A: refused 50 ms later, never run
    b.flush(true); // A takes the 100 first attempts (buckets of 6 s)
    e.store.configure(100_000, 10, 1, BudgetConfig.DEFAULT_MAX_CALLS_PER_SECOND); // the operator: 10 s
    e.advanceMillis(5);
    b.acquire(); // B: answered at once, tells 10 s
    e.advanceMillis(5);
    assertEquals(10, b.learned().windowSeconds());
    b.recordFirstAttempt();
    b.acquire(); // C: takes with the 10 s window (buckets of 1 s)
    e.advanceMillis(100); // A refused: its 100 first attempts go with the next call
    e.advanceMillis(3_000); // the timer's flushes
    assertEquals(0, b.staleRequests(), "first attempts made " + "100 ms before dropped as older than 10 s");
    assertEquals(101, e.store.requestsCounted - counted);
  }
}
