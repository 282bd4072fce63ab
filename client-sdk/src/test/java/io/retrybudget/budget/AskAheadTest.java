package io.retrybudget.budget;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * {@link AskAhead} on fake time: a relay's client in a storm (asking again within 3 s, its relay holding
 * no permit) decides at once from what it holds, its grants no more than the relay handed out and its
 * refusals counted once; on a budget with permits to spare, a lone retry, a burst, and a client of Redis
 * directly, every ask is granted as before.
 */
class AskAheadTest {
  private static final long REPLY_MILLIS = 5;

  /** What one client's asks came to: decisions, those not answered when acquire returned, grants. */
  private static final class Asks {
    final List<BudgetDecision> decisions = new ArrayList<>();
    int waited;
    int granted;

    int refused() {
      return decisions.size() - granted;
    }
  }

  private static FakeEngine engine(boolean relay, long ratioPpm, int floor, FallbackPolicy policy) {
    FakeEngine e = new FakeEngine(20, policy, () -> 0.5);
    if (relay) {
      e.portInstead = new RelayLikePort(e.store);
    }
    e.store.configure(ratioPpm, 10, floor, BudgetConfig.DEFAULT_MAX_CALLS_PER_SECOND);
    e.store.replyAfter(REPLY_MILLIS);
    return e;
  }

  private static FakeEngine engine(boolean relay, long ratioPpm, int floor) {
    return engine(relay, ratioPpm, floor, FallbackPolicy.LOCAL);
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
  void aRelaysClientInAStormDecidesAtOnceUsesWhatTheRelayGaveAndCountsEachRefusalOnce() {
    FakeEngine e = engine(true, 100_000, 1);
    RedisRetryBudget b = budget(e);
    long deniedBefore = e.store.deniedCounted;
    Asks a = storm(e, b, 120, 250); // 4 asks a second for 30 s; the budget pays about 1.4 a second
    e.advanceMillis(2_000); // the last counts flushed
    assertTrue(b.viaRelay());
    assertTrue(a.waited <= 3, "the storm's first ask waits, and one whose relay said it held permits: "
        + a.waited + " of " + a.decisions.size());
    long handed = e.store.permitsGranted;
    assertTrue(a.granted <= handed, a.granted + " grants used of " + handed + " handed out");
    // every permit asked ahead is held for the next ask (250 ms later, held 3 s): none lost but at the end
    assertTrue(a.granted >= handed - 1, a.granted + " grants used of " + handed + " handed out");
    assertTrue(handed >= 30, "the paced share (0.1 of 120 first attempts and 1 a second): " + handed);
    // each refusal counted once: by the ask that stood for it, or as a denial (a refused ask ahead that
    // stood for none is counted by the relay and its reuse not again; one may be left unreused)
    long denied = e.store.deniedCounted - deniedBefore;
    assertTrue(denied >= a.refused() && denied <= a.refused() + 1, denied + " denials counted for "
        + a.refused() + " refusals");
  }

  @Test
  void aRelaysClientWhoseAsksAreSampledWaitsOnlyForItsFirstAskInAStorm() {
    // a relay of 5,000 clients taking 4,000 calls a second (so each ask goes with about 1 in 15 at 4
    // asks a second), its pool holding a few permits between draws (its replies say 3): the bench's
    // 20,000 clients through 4 relays. Before, a sampled-in ask of a client the relay had not refused
    // within 3 s waited a round trip (7.8 % of the storm's decisions there)
    java.util.SplittableRandom random = new java.util.SplittableRandom(3);
    FakeEngine e = new FakeEngine(20, FallbackPolicy.LOCAL, random::nextDouble);
    e.portInstead = new RelayLikePort(e.store, 5_000, 4_000, 3);
    e.store.configure(100_000, 10, 1, BudgetConfig.DEFAULT_MAX_CALLS_PER_SECOND);
    e.store.replyAfter(REPLY_MILLIS);
    RedisRetryBudget b = budget(e);
    long deniedBefore = e.store.deniedCounted;
    Asks a = storm(e, b, 480, 250); // 4 asks a second for 2 minutes
    e.advanceMillis(2_000);
    assertTrue(b.viaRelay());
    // the storm's first ask, and at most one sampled in before any was sampled out (28 before)
    assertTrue(a.waited <= 2, "only the storm's first asks wait: " + a.waited + " of " + a.decisions.size());
    long handed = e.store.permitsGranted;
    assertTrue(a.granted <= handed && a.granted >= handed - 1, a.granted + " grants used of " + handed);
    assertTrue(a.granted >= 10, "sampled asks still bring grants: " + a.granted);
    long denied = e.store.deniedCounted - deniedBefore;
    assertTrue(denied >= a.refused() && denied <= a.refused() + 1, denied + " denials counted for "
        + a.refused() + " refusals");
  }

  @Test
  void withPermitsToSpareEveryAskIsGrantedAndAfterTheSecondNoneWaits() {
    FakeEngine e = engine(true, 100_000, 100);
    RedisRetryBudget b = budget(e);
    Asks a = storm(e, b, 40, 300);
    assertEquals(40, a.granted, "" + a.decisions);
    assertEquals(2, a.waited, "the first ask, and the second (the relay held permits): then one is asked ahead");
  }

  @Test
  void aBurstOnABudgetWithPermitsToSpareIsGranted() {
    FakeEngine e = engine(true, 100_000, 100);
    RedisRetryBudget b = budget(e);
    storm(e, b, 3, 300); // asking ahead
    List<CompletableFuture<BudgetDecision>> burst = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      b.recordFirstAttempt();
      burst.add(b.acquire().toCompletableFuture());
    }
    e.advanceMillis(100);
    assertEquals(20, burst.stream().filter(d -> d.join().granted()).count());
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
    FakeEngine e = engine(false, 100_000, 1);
    RedisRetryBudget b = budget(e);
    Asks a = storm(e, b, 40, 300);
    assertFalse(b.viaRelay());
    assertEquals(a.decisions.size() - a.decisions.stream()
        .filter(d -> d.reason() == BudgetDecision.Reason.DENIED_EXHAUSTED_CACHED).count(), a.waited);
    assertEquals(0, b.decidedAhead());
  }

  @Test
  void oneAskAheadAtATimeAndTheRefusalsWithoutOneAreCounted() {
    FakeEngine e = engine(true, 100_000, 0);
    RedisRetryBudget b = budget(e);
    storm(e, b, 4, 250); // in a storm: the relay holds no permit
    e.store.replyAfter(15); // under the call timeout, longer than the asks' spacing
    e.advanceMillis(1_100); // the refusal reused expires (at most 1 s), refused within 3 s
    long calls = e.store.calls;
    long denied = e.store.deniedCounted;
    for (int i = 0; i < 10; i++) {
      b.recordFirstAttempt();
      assertTrue(b.acquire().toCompletableFuture().isDone());
      e.advanceMillis(1);
    }
    e.advanceMillis(3_000);
    assertEquals(1, e.store.calls - calls - flushes(e, calls), "one ask ahead for ten refusals at once");
    assertEquals(10, e.store.deniedCounted - denied, "nine counted as denials, one by the ask");
  }

  /** The calls since {@code from} that asked for nothing (flushes), as the store ran them. */
  private static long flushes(FakeEngine e, long from) {
    return e.store.calls - from - e.store.asksSince(from);
  }

  @Test
  void aPermitAskedAheadIsNotHeldBeyondTheWindow() {
    BudgetConfig oneSecond = BudgetConfig.builder("ahead").ratio(0.1).windowSeconds(1).build();
    Learned l = Learned.seed(oneSecond);
    assertEquals(1_000, AskAhead.lifeMillis(l));
    assertEquals(AskAhead.ACTIVE_MILLIS, AskAhead.lifeMillis(Learned.seed(
        BudgetConfig.builder("ahead").ratio(0.1).windowSeconds(10).build())));
    assertEquals(6_000, AskAhead.lifeMillis(Learned.seed(
        BudgetConfig.builder("ahead").ratio(0.1).windowSeconds(60).build())));
  }

  @Test
  void afterAFailedCallTheFallbackPolicyDecidesAsBefore() {
    FakeEngine e = engine(true, 100_000, 0, FallbackPolicy.ALLOW);
    RedisRetryBudget b = budget(e);
    storm(e, b, 4, 250); // asking ahead, the relay holding none
    e.store.replyAfter(100); // the relay stops answering in time
    e.advanceMillis(1_500);
    b.recordFirstAttempt();
    b.acquire(); // refused at once; its ask ahead times out: IN_DOUBT
    e.advanceMillis(50);
    assertEquals(RedisHealth.State.IN_DOUBT, b.health());
    b.recordFirstAttempt();
    CompletableFuture<BudgetDecision> d = b.acquire().toCompletableFuture();
    e.advanceMillis(50);
    assertEquals(BudgetDecision.Reason.GRANTED_FALLBACK, d.join().reason());
  }

  @Test
  void aClosedBudgetNeverGrantsAPermitAskedAhead() {
    FakeEngine e = engine(true, 100_000, 100);
    RedisRetryBudget b = budget(e);
    storm(e, b, 2, 300); // the second ask's grant asked one ahead
    b.recordFirstAttempt();
    assertEquals(BudgetDecision.Reason.GRANTED, b.acquire().toCompletableFuture().join().reason()); // taken: the next asked for
    e.advanceMillis(1);
    b.beginClose(); // with that ask on its way
    e.advanceMillis(100); // its grant arrives after the close
    b.finishClose();
    CompletableFuture<BudgetDecision> d = b.acquire().toCompletableFuture();
    e.advanceMillis(100);
    assertNotEquals(BudgetDecision.Reason.GRANTED, d.join().reason());
  }
}
