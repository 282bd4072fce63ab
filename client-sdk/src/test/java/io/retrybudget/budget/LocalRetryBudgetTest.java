package io.retrybudget.budget;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class LocalRetryBudgetTest {
  private final AtomicLong now = new AtomicLong(1_000_000);

  @Test
  void grantsRatioOfOwnRequestsPlusFloor() {
    LocalRetryBudget b = new LocalRetryBudget(
        BudgetConfig.builder("l").ratio(0.2).minRetriesPerSecond(1).windowSeconds(10).build(), now::get);
    for (int i = 0; i < 100; i++) {
      b.recordFirstAttempt();
    }
    int granted = 0;
    for (int i = 0; i < 100; i++) {
      if (b.acquireBlocking().granted()) {
        granted++;
      }
    }
    assertEquals(20 + 10, granted);
    assertEquals(BudgetDecision.DENIED_EXHAUSTED, b.acquireBlocking());
    long[] counts = b.windowCounts();
    assertEquals(100, counts[0]);
    assertEquals(30, counts[1]);
    assertEquals(71, counts[2]);
  }

  @Test
  void allowanceComesBackAsTheWindowSlides() {
    LocalRetryBudget b = new LocalRetryBudget(
        BudgetConfig.builder("l").minRetriesPerSecond(1).windowSeconds(10).build(), now::get);
    for (int i = 0; i < 10; i++) {
      assertTrue(b.acquireBlocking().granted());
    }
    assertEquals(BudgetDecision.DENIED_EXHAUSTED, b.acquireBlocking());
    now.addAndGet(9_999);
    assertEquals(BudgetDecision.DENIED_EXHAUSTED, b.acquireBlocking(), "the grants are not yet a window old");
    now.addAndGet(1);
    assertTrue(b.acquireBlocking().granted());
  }

  @Test
  void shadowModeNeverDenies() {
    LocalRetryBudget b = new LocalRetryBudget(
        BudgetConfig.builder("l").minRetriesPerSecond(0).mode(BudgetMode.SHADOW).build(), now::get);
    assertEquals(BudgetDecision.GRANTED_SHADOW, b.acquireBlocking());
    assertEquals(1, b.windowCounts()[2]);
  }
}
