package io.retrybudget.relay;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.redis.protocol.BudgetCall;
import org.junit.jupiter.api.Test;

/**
 * Review: a relay's call of unknown fate is sent again as it was for up to a minute, whatever the
 * window. With the budget's 10 s window, a re-send that Redis applies 50 s later brings first attempts
 * 50 s old, which Redis puts in its current bucket (what PendingSums drops for calls taken fresh).
 */
class DoubtAgeReviewTest {
  private static final BudgetConfig SEED = BudgetConfig.builder("b").ratio(0.1).windowSeconds(10).build();

  @Test
  void aCallInDoubtIsNotSentAgainOnceItsFirstAttemptsAreAWindowOld() {
    BudgetRelay relay = new BudgetRelay("b", RelaySettings.defaults(), () -> 0.5);
    relay.client("c", 1, new BudgetCall("b", 500, 0, 0, 0, 0, SEED), 0); // 500 first attempts at t=0
    BudgetCall first = relay.upstreamCall(0);
    assertTrue(first != null && first.requests() == 500, "the hello carries them: " + first);
    relay.upstreamInDoubt(first, 0); // timed out
    long lastResend = 0;
    for (long now = 100; now < 59_000; now += 100) {
      BudgetCall up = relay.upstreamCall(now);
      if (up == null) {
        continue;
      }
      if (up == first) {
        lastResend = now;
      }
      relay.upstreamInDoubt(up, now); // each re-send times out too (Redis slow, or the link flapping)
    }
    assertTrue(lastResend <= 11_000, "a call in doubt with 500 first attempts of t=0 is still sent again at t="
        + lastResend + " ms (window 10 s): if that copy runs, Redis counts them in that second's bucket");
  }
}
