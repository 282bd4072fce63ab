package io.retrybudget.budget;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.redis.protocol.BudgetReply;
import org.junit.jupiter.api.Test;

/** The permits a budget keeps of Redis's answers, on a clock given as arguments. */
class PermitCacheTest {
  // a fleet of 10 clients, window 10 s (buckets of 1 s), ceiling 2,000 calls a second
  private static final Learned FLEET =
      new Learned(100_000, 10, 10, BudgetMode.ENFORCE, 10, 2_000, 2_000, 5_000_000);

  private static BudgetReply reply(String status, long granted, long nextGrantMillis) {
    return new BudgetReply(status, granted, 0, 0, 0, 0, 10, 100_000, 10, 10, "enforce", 0, nextGrantMillis, 5_000_000,
        2_000);
  }

  @Test
  void aLateGrantIsKeptForTheWindowItWasCountedIn() {
    PermitCache cache = new PermitCache(100, () -> 0.5);
    cache.keepLate(reply(BudgetReply.GRANTED, 1, 0), 0, FLEET);
    // a budget whose Redis is slow asks every 2 s: a permit kept for one bucket (1 s) was dropped unused
    assertTrue(cache.take(2_000), "a late grant 2 s old, in a 10 s window");
    assertEquals(0, cache.unused());
    cache.keepLate(reply(BudgetReply.GRANTED, 1, 0), 3_000, FLEET);
    assertFalse(cache.take(13_001), "past the window: the allowance it came from has moved on");
    assertEquals(1, cache.unused(), "dropped, and counted as unused");
  }

  @Test
  void theRestOfALeaseIsKeptForOneBucketAtMost() {
    PermitCache cache = new PermitCache(100, () -> 0.5);
    cache.lease(reply(BudgetReply.GRANTED, 4, 0), 0, FLEET);
    assertTrue(cache.take(50));
    assertTrue(cache.take(60));
    assertTrue(cache.take(70));
    assertFalse(cache.take(80), "three beyond the one used");
    cache.lease(reply(BudgetReply.GRANTED, 3, 0), 1_000, FLEET);
    // spacing 3 N / C = 15 ms, at least 100 ms: leases live 100 ms here
    assertFalse(cache.take(1_101));
    assertEquals(2, cache.unused());
  }

  @Test
  void aRefusalIsReusedUntilTheBudgetCanGrantWithinItsBounds() {
    PermitCache cache = new PermitCache(100, () -> 0.5);
    cache.exhausted(0, reply(BudgetReply.DENIED, 0, 400), FLEET);
    assertTrue(cache.refusing(399));
    assertFalse(cache.refusing(400));
    cache.exhausted(1_000, reply(BudgetReply.DENIED, 0, -1), FLEET); // never refills by itself: 1 s at most
    assertTrue(cache.refusing(1_999));
    assertFalse(cache.refusing(2_000));
    cache.exhausted(3_000, reply(BudgetReply.DENIED, 0, 1), FLEET); // at least this client's spacing (15 ms)
    assertTrue(cache.refusing(3_014));
    assertFalse(cache.refusing(3_015));
  }

  @Test
  void asksAreSampledOnlyWhereTheFleetWouldExceedAThirdOfItsCeiling() {
    PermitCache always = new PermitCache(100, () -> 0.99);
    // 10 clients x 60 asks a second = 600 < 2,000 / 3: every ask goes, for one permit
    assertEquals(1, always.permitsToAsk(FLEET, 60));
    // 10 x 100 = 1,000 > 666: an ask goes with probability 666 / 1,000, for a lease of ceil(3 G / C) = 1
    assertEquals(0, always.permitsToAsk(FLEET, 100), "a draw of 0.99 is not this client's turn");
    PermitCache lucky = new PermitCache(100, () -> 0.1);
    assertEquals(1, lucky.permitsToAsk(FLEET, 100));
    Learned rich = new Learned(100_000, 10, 10, BudgetMode.ENFORCE, 10, 10, 10, 50_000_000);
    assertEquals(15, PermitCache.leaseSize(rich), "3 x 50 permits a second over a ceiling of 10 calls");
    assertEquals(1, new PermitCache(100, () -> 0.99).permitsToAsk(
        new Learned(100_000, 10, 10, BudgetMode.ENFORCE, 1, 10, 10, 50_000_000), 1_000), "a lone client always asks");
  }
}
