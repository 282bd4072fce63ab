package io.retrybudget.budget;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class LocalRetryBudgetTest {
  private final AtomicLong now = new AtomicLong(1_000_000);

  @Test
  void aBurstGetsHalfASecondOfTheRateNotTheWindowsAllowance() {
    LocalRetryBudget b = new LocalRetryBudget(
        BudgetConfig.builder("l").ratio(0.2).minRetriesPerSecond(1).windowSeconds(10).build(), now::get);
    for (int i = 0; i < 1_000; i++) {
      b.recordFirstAttempt();
    }
    // 1,000 first attempts in the budget's first second: 1,000 a second, refilling 0.2 * 1,000 + 1 =
    // 201 permits a second; the balance holds half a second of that (100.5), not the window's 210
    int granted = 0;
    for (int i = 0; i < 150; i++) {
      if (b.acquireBlocking().granted()) {
        granted++;
      }
    }
    assertEquals(100, granted);
    assertEquals(BudgetDecision.Reason.DENIED_EXHAUSTED, b.acquireBlocking().reason());
    long[] counts = b.windowCounts();
    assertEquals(1_000, counts[0]);
    assertEquals(100, counts[1]);
    assertEquals(51, counts[2]);
  }

  @Test
  void aSteadyRateGetsTheRatioEverySecond() {
    LocalRetryBudget b = new LocalRetryBudget(
        BudgetConfig.builder("l").ratio(0.2).minRetriesPerSecond(1).windowSeconds(10).build(), now::get);
    int[] perSecond = new int[20];
    for (int ms = 0; ms < 20_000; ms += 10) {
      now.addAndGet(10);
      b.recordFirstAttempt(); // 100 a second, each of them failing and asking for a retry
      if (b.acquireBlocking().granted()) {
        perSecond[ms / 1000]++;
      }
    }
    for (int s = 10; s < 20; s++) {
      // a full window: 20 of 100 first attempts, plus the floor's 1
      assertTrue(perSecond[s] >= 20 && perSecond[s] <= 22, "second " + s + ": " + perSecond[s]);
    }
  }

  @Test
  void theFloorRefillsAtItsRate() {
    LocalRetryBudget b = new LocalRetryBudget(
        BudgetConfig.builder("l").minRetriesPerSecond(2).windowSeconds(10).build(), now::get);
    assertTrue(b.acquireBlocking().granted(), "half a second of the floor saved up: one permit");
    assertEquals(BudgetDecision.Reason.DENIED_EXHAUSTED, b.acquireBlocking().reason());
    now.addAndGet(499);
    assertEquals(BudgetDecision.Reason.DENIED_EXHAUSTED, b.acquireBlocking().reason(), "2 a second: the next after 500 ms");
    now.addAndGet(1);
    assertTrue(b.acquireBlocking().granted());
    assertEquals(0, b.available());
  }

  @Test
  void aRefusalSaysWhenTheBalanceHoldsAPermitAgain() {
    LocalRetryBudget b = new LocalRetryBudget(
        BudgetConfig.builder("l").minRetriesPerSecond(4).windowSeconds(10).build(), now::get);
    assertTrue(b.acquireBlocking().granted());
    assertTrue(b.acquireBlocking().granted(), "half a second of 4 a second: two permits");
    BudgetDecision refused = b.acquireBlocking();
    assertEquals(BudgetDecision.Reason.DENIED_EXHAUSTED, refused.reason());
    assertEquals(java.util.Optional.of(java.time.Duration.ofMillis(250)), refused.nextPermitIn(), "4 a second, from empty");
    now.addAndGet(100);
    assertEquals(java.util.Optional.of(java.time.Duration.ofMillis(150)), b.acquireBlocking().nextPermitIn());
    now.addAndGet(150);
    assertTrue(b.acquireBlocking().granted(), "when it said");

    LocalRetryBudget noFloor = new LocalRetryBudget(
        BudgetConfig.builder("n").minRetriesPerSecond(0).windowSeconds(10).build(), now::get);
    BudgetDecision never = noFloor.acquireBlocking();
    assertEquals(BudgetDecision.Reason.DENIED_EXHAUSTED, never.reason());
    assertEquals(java.util.Optional.empty(), never.nextPermitIn(), "no traffic, no floor: it does not refill by itself");
  }

  @Test
  void shadowModeNeverDenies() {
    LocalRetryBudget b = new LocalRetryBudget(
        BudgetConfig.builder("l").minRetriesPerSecond(0).mode(BudgetMode.SHADOW).build(), now::get);
    assertEquals(BudgetDecision.GRANTED_SHADOW, b.acquireBlocking());
    assertEquals(1, b.windowCounts()[2]);
  }
}
