package io.retrybudget.budget;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Counts a client keeps through an outage (its calls refused while Redis is gone) reach Redis when it
 * is back, but only those of the last window: Redis puts what a call brings in the window's current
 * bucket, so a minute of first attempts sent at once would count as this second's and let the fleet
 * retry at several times the ratio for a window, right after an outage. On fake time, against the
 * Java model of budget.lua.
 */
class OutageBacklogTest {
  @Test
  void countsHeldThroughAnOutageLongerThanTheWindowAreNotSentAsThisSecondsWhenRedisIsBack() {
    SplittableRandom random = new SplittableRandom(7);
    FakeEngine engine = new FakeEngine(20, FallbackPolicy.LOCAL, random::nextDouble);
    RedisRetryBudget budget = engine.budget(BudgetConfig.builder("backlog").ratio(0.1).windowSeconds(10)
        .minRetriesPerSecond(0).build());
    for (int s = 0; s < 5; s++) {
      firstAttempts(budget, 100);
      engine.advanceMillis(1_000);
    }
    engine.advanceMillis(1_000);
    long before = engine.store.requestsCounted;
    assertEquals(500, before, "healthy: every first attempt counted");
    // Redis gone for a minute: every call refused unsent, 100 first attempts a second meanwhile
    engine.store.faults(() -> new long[] {ModelStore.Delivery.REFUSED.ordinal(), 0});
    for (int s = 0; s < 60; s++) {
      firstAttempts(budget, 100);
      engine.advanceMillis(1_000);
    }
    assertTrue(budget.isDegraded(), "the fallback decided meanwhile");
    engine.store.replyAfter(0);
    engine.advanceMillis(15_000); // back: the next calls carry what was kept
    long after = engine.store.requestsCounted - before;
    // at most the outage's last window (1,000) and a call's interval of the one before, not its 6,000
    assertTrue(after >= 900 && after <= 1_200, "first attempts of the outage sent when Redis was back: " + after);
    assertEquals(6_000, after + budget.staleRequests(), "the rest dropped, counted as stale: " + after);
  }

  @Test
  void aWindowShortenedWhileCountsAreKeptKeepsOnlyTheNewWindowsCounts() {
    SplittableRandom random = new SplittableRandom(11);
    FakeEngine engine = new FakeEngine(20, FallbackPolicy.LOCAL, random::nextDouble);
    RedisRetryBudget budget = engine.budget(BudgetConfig.builder("rewindow").ratio(0.1).windowSeconds(60)
        .minRetriesPerSecond(0).build());
    firstAttempts(budget, 100);
    engine.advanceMillis(2_000);
    // an operator shortens the window to 10 s; the client learns it with its next call
    engine.store.configure(100_000, 10, 0, 2_000);
    firstAttempts(budget, 100);
    engine.advanceMillis(2_000);
    assertEquals(10, budget.configInForce().orElseThrow().windowSeconds(), "the new window is in force");
    long before = engine.store.requestsCounted;
    assertEquals(200, before);
    // Redis gone for a minute: every call refused unsent, 100 first attempts a second meanwhile
    engine.store.faults(() -> new long[] {ModelStore.Delivery.REFUSED.ordinal(), 0});
    for (int s = 0; s < 60; s++) {
      firstAttempts(budget, 100);
      engine.advanceMillis(1_000);
    }
    engine.store.replyAfter(0);
    engine.advanceMillis(15_000);
    long after = engine.store.requestsCounted - before;
    // the window in force (10 s: about 1,000), not the one the budget was built with (a minute: 6,000)
    assertTrue(after >= 900 && after <= 1_200, "first attempts of the outage sent when Redis was back: " + after);
    assertEquals(6_000, after + budget.staleRequests(), "the rest dropped, counted as stale: " + after);
  }

  private static void firstAttempts(RedisRetryBudget budget, int n) {
    for (int i = 0; i < n; i++) {
      budget.recordFirstAttempt();
    }
  }
}
