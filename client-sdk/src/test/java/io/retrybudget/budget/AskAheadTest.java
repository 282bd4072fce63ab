package io.retrybudget.budget;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * {@link AskAhead} on fake time: a relay's client that asks again within 3 s decides at once
 * from what it holds, its grants no more than the relay handed out; a lone retry, and a client of Redis
 * directly, wait for their answer as before.
 */
class AskAheadTest {
  private static final long REPLY_MILLIS = 5;

  /** What one client's asks came to: decisions, those answered at once, grants. */
  private static final class Asks {
    final List<BudgetDecision> decisions = new ArrayList<>();
    int waited; // decisions not answered when acquire returned
    int granted;
  }

  private static FakeEngine engine(boolean relay, long ratioPpm, int floor) {
    FakeEngine e = new FakeEngine(20, FallbackPolicy.LOCAL, () -> 0.5);
    if (relay) {
      e.portInstead = new RelayLikePort(e.store);
    }
    e.store.configure(ratioPpm, 10, floor, BudgetConfig.DEFAULT_MAX_CALLS_PER_SECOND);
    e.store.replyAfter(REPLY_MILLIS);
    return e;
  }

  private static RedisRetryBudget budget(FakeEngine e) {
    RedisRetryBudget b = e.budget(BudgetConfig.builder("ahead").ratio(0.1).windowSeconds(10).build());
    e.advanceMillis(1_000); // its hello is answered
    return b;
  }

  /** {@code count} first attempts {@code everyMillis} apart, each failing and asking for a retry. */
  private static Asks storm(FakeEngine e, RedisRetryBudget b, int count, long everyMillis) {
    Asks a = new Asks();
    for (int i = 0; i < count; i++) {
      b.recordFirstAttempt();
      CompletableFuture<BudgetDecision> d = b.acquire().toCompletableFuture();
      if (!d.isDone()) {
        a.waited++;
      }
      e.advanceMillis(everyMillis);
      assertTrue(d.isDone(), "an acquire still open " + everyMillis + " ms later");
      BudgetDecision decision = d.join();
      a.decisions.add(decision);
      if (decision.granted()) {
        a.granted++;
      }
    }
    return a;
  }

  @Test
  void aRelaysClientInAStormDecidesEveryAskAtOnceAndUsesWhatTheRelayGave() {
    FakeEngine e = engine(true, 100_000, 1);
    RedisRetryBudget b = budget(e);
    Asks a = storm(e, b, 120, 250); // 4 asks a second for 30 s; the budget pays about 1.4 a second
    e.advanceMillis(2_000);
    assertTrue(b.viaRelay());
    assertEquals(1, a.waited, "only the storm's first ask waits for its answer: " + a.decisions);
    long handed = e.store.permitsGranted;
    assertTrue(a.granted <= handed, a.granted + " grants used of " + handed + " handed out");
    // every permit asked ahead is held for the next ask (250 ms later, held 1 s): none lost but at the end
    assertTrue(a.granted >= handed - 1, a.granted + " grants used of " + handed + " handed out");
    assertTrue(handed >= 30, "the paced share (0.1 of 120 first attempts and 1 a second): " + handed);
    assertTrue(a.granted < a.decisions.size() / 2, "an exhausted budget refuses most: " + a.granted);
  }

  @Test
  void withPermitsToSpareOnlyTheAskThatBeginsDecidingAheadIsRefused() {
    FakeEngine e = engine(true, 100_000, 100);
    RedisRetryBudget b = budget(e);
    Asks a = storm(e, b, 40, 300);
    assertEquals(1, a.waited);
    assertEquals(39, a.granted, "the second ask is refused at once while its permit is asked ahead: " + a.decisions);
    assertEquals(BudgetDecision.Reason.DENIED_EXHAUSTED_CACHED, a.decisions.get(1).reason());
  }

  @Test
  void aLoneRetryWaitsForItsAnswerAndIsGranted() {
    FakeEngine e = engine(true, 100_000, 100);
    RedisRetryBudget b = budget(e);
    Asks a = storm(e, b, 5, AskAhead.ACTIVE_MILLIS + 500);
    assertEquals(5, a.waited);
    assertEquals(5, a.granted);
  }

  @Test
  void aClientOfRedisDirectlyWaitsForEveryAnswer() {
    FakeEngine e = engine(false, 100_000, 100);
    RedisRetryBudget b = budget(e);
    Asks a = storm(e, b, 40, 300);
    assertFalse(b.viaRelay());
    assertEquals(40, a.waited);
    assertEquals(40, a.granted);
  }

  @Test
  void oneAskAheadAtATime() {
    FakeEngine e = engine(true, 100_000, 0);
    e.store.replyAfter(15); // under the call timeout, longer than the asks' spacing
    RedisRetryBudget b = budget(e);
    long before = e.store.calls;
    for (int i = 0; i < 10; i++) {
      b.recordFirstAttempt();
      b.acquire();
      e.advanceMillis(1);
    }
    // the first ask waits (a call); the next nine are refused at once and one ask goes ahead
    assertEquals(2, e.store.calls - before);
  }
}
