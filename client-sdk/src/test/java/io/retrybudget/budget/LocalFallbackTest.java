package io.retrybudget.budget;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The LOCAL fallback over one client's own first attempts, on a clock given as arguments. */
class LocalFallbackTest {
  // ratio 0.1, no floor, window 10 s; Redis counted 1 client
  private static final Learned CONFIG =
      new Learned(100_000, 10, 0, BudgetMode.ENFORCE, 1, 2_000, 2_000, 0);

  private static int grants(LocalFallback f, long from, int asks) {
    int granted = 0;
    for (int i = 0; i < asks; i++) {
      if (f.decide(from + i, FallbackPolicy.LOCAL, CONFIG) == BudgetDecision.GRANTED_FALLBACK) {
        granted++;
      }
    }
    return granted;
  }

  /** 10 first attempts at {@code at} (a permit's deposits at ratio 0.1), then 3 asks: the grants. */
  private static int second(PendingCounts pending, LocalFallback f, long at) {
    for (int i = 0; i < 10; i++) {
      pending.firstAttempt();
    }
    return grants(f, at, 3);
  }

  @Test
  void grantsTheRatioOfItsOwnFirstAttemptsAndReportsThem() {
    PendingCounts pending = new PendingCounts(10_000);
    LocalFallback f = new LocalFallback(pending, 10_000, () -> 1.0, true); // thresholds of a whole permit
    grants(f, 0, 1); // the episode starts from nothing
    int granted = 0;
    for (int s = 1; s <= 3; s++) {
      granted += second(pending, f, s * 1_000L);
    }
    assertEquals(3, granted, "30 first attempts at ratio 0.1");
    PendingCounts.Taken taken = f.take(4_000, CONFIG);
    assertEquals(3, taken.retries(), "its grants go to Redis with the next call");
    assertEquals(30, taken.requests());
  }

  @Test
  void aPermitRedisGrantedLateIsPaidFromTheShareNotAddedToIt() {
    PendingCounts pending = new PendingCounts(10_000);
    LocalFallback f = new LocalFallback(pending, 10_000, () -> 1.0, true);
    grants(f, 0, 1);
    for (int i = 0; i < 10; i++) {
      pending.firstAttempt();
    }
    f.charge(1_000, CONFIG); // a permit Redis granted late was used while the fallback decides
    assertEquals(0, grants(f, 1_001, 3), "the second's permit went to Redis's late grant");
    assertEquals(1, second(pending, f, 2_000));
    f.charge(2_500, CONFIG); // ahead of the deposits: owed
    assertEquals(0, second(pending, f, 3_000), "the next permit of deposits paid what was owed");
    assertEquals(1, second(pending, f, 4_000));
  }

  /**
   * A LOCAL refusal says when its balance, refilled at the ratio of this client's first-attempt rate
   * (no floor here), reaches the next threshold; DENY never grants, so it says nothing.
   */
  @Test
  void aLocalRefusalSaysWhenItsShareRefillsTheNextPermit() {
    PendingCounts pending = new PendingCounts(10_000);
    LocalFallback f = new LocalFallback(pending, 10_000, () -> 1.0, true); // thresholds of a whole permit
    grants(f, 0, 1); // the episode starts from nothing
    for (int i = 0; i < 10; i++) {
      pending.firstAttempt();
    }
    assertEquals(1, grants(f, 1_000, 1), "10 first attempts at ratio 0.1: one permit");
    BudgetDecision refused = f.decide(1_000, FallbackPolicy.LOCAL, CONFIG);
    assertEquals(BudgetDecision.Reason.DENIED_FALLBACK, refused.reason());
    // 10 first attempts in the window: a permit's deposits per window span (at most the 10 s window)
    long next = refused.nextPermitIn().orElseThrow().toMillis();
    assertTrue(next > 0 && next <= 10_000, "next permit in " + next + " ms");
    BudgetDecision later = f.decide(1_000 + next / 2, FallbackPolicy.LOCAL, CONFIG);
    assertEquals(BudgetDecision.Reason.DENIED_FALLBACK, later.reason(), "no traffic, no floor: nothing deposited since");
    assertTrue(later.nextPermitIn().isPresent());

    assertEquals(java.util.Optional.empty(), f.decide(2_000, FallbackPolicy.DENY, CONFIG).nextPermitIn());
  }
}
