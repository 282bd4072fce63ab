package io.retrybudget.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.server.ClaimLifecycle.Action;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The claim's transition function, event by event: no Redis, no timers, no threads. */
class ClaimLifecycleTest {
  private static final long MS = 1_000_000L;
  private static final StoredResponse CHARGED = new StoredResponse(201, List.of(), "ok".getBytes(StandardCharsets.UTF_8));

  private static ClaimLifecycle lifecycle(OutcomePolicy policy) {
    // lease 300 ms (renewal every 100 ms), kept at most 1 s
    ClaimLifecycle c = new ClaimLifecycle(policy, 0, Duration.ofMillis(300), Duration.ofSeconds(1), r -> r, Duration.ofSeconds(1));
    made.add(c);
    return c;
  }

  @org.junit.jupiter.api.AfterEach
  void noTransitionBrokeLiveness() {
    List<ClaimLifecycle> these = List.copyOf(made);
    made.clear();
    for (ClaimLifecycle c : these) {
      assertNull(c.livenessBrokenBy(), c.toString());
    }
  }

  private static final List<ClaimLifecycle> made = new java.util.ArrayList<>();

  private static <T extends Action> T only(Class<T> type, List<Action> actions) {
    List<Action> of = actions.stream().filter(type::isInstance).toList();
    assertEquals(1, of.size(), type.getSimpleName() + " in " + actions);
    return type.cast(of.get(0));
  }

  @Test
  void aHandlerPastItsDeadlineIsAnswered503AndKeepsRenewingUntilItsLateAnswerIsStored() {
    ClaimLifecycle c = lifecycle(OutcomePolicy.STANDARD);
    assertEquals(100 * MS, only(ClaimLifecycle.ArmRenewal.class, c.start()).delayNanos());
    ClaimLifecycle.Reply timeout = only(ClaimLifecycle.Reply.class, c.on(new ClaimLifecycle.HandlerTimedOut()));
    assertEquals(503, timeout.response().status());
    assertTrue(new String(timeout.response().body(), StandardCharsets.UTF_8).contains("still being processed"));
    assertEquals(ClaimLifecycle.Phase.TIMED_OUT, c.phase());
    assertTrue(c.renewing(), "the claim is kept while the handler runs");
    only(ClaimLifecycle.Renew.class, c.on(new ClaimLifecycle.RenewDue(100 * MS)));
    only(ClaimLifecycle.ArmRenewal.class, c.on(new ClaimLifecycle.Renewed()));
    List<Action> late = c.on(new ClaimLifecycle.HandlerAnswered(CHARGED, true));
    assertSame(CHARGED, only(ClaimLifecycle.Store.class, late).answer());
    only(ClaimLifecycle.CancelRenewal.class, late);
    List<Action> done = c.on(new ClaimLifecycle.WriteDone(true, null));
    assertTrue(done.stream().noneMatch(a -> a instanceof ClaimLifecycle.Reply), "its client was answered already");
    assertEquals(ClaimLifecycle.Ending.STORED, c.ending());
  }

  @Test
  void theAnswerGoesToTheClientOnlyOnceItsWriteEnded() {
    ClaimLifecycle c = lifecycle(OutcomePolicy.STANDARD);
    c.start();
    assertTrue(c.on(new ClaimLifecycle.HandlerAnswered(CHARGED, true)).stream().noneMatch(a -> a instanceof ClaimLifecycle.Reply));
    assertSame(CHARGED, only(ClaimLifecycle.Reply.class, c.on(new ClaimLifecycle.WriteDone(true, null))).response());
    assertEquals(List.of(), c.on(new ClaimLifecycle.HandlerTimedOut()), "a deadline after the answer does nothing");
    assertEquals(List.of(), c.on(new ClaimLifecycle.HandlerAnswered(CHARGED, true)), "nor a second answer");
    assertEquals(List.of(), c.on(new ClaimLifecycle.RenewDue(200 * MS)), "nor a renewal timer that fired late");
  }

  @Test
  void aFencedRenewalMarksTheClaimLostAndStopsRenewing() {
    ClaimLifecycle c = lifecycle(OutcomePolicy.STANDARD);
    c.start();
    c.on(new ClaimLifecycle.RenewDue(100 * MS));
    List<Action> fenced = c.on(new ClaimLifecycle.RenewFailed(true));
    assertEquals(ServerKitListener.IdempotencyOutcome.CLAIM_LOST, only(ClaimLifecycle.Report.class, fenced).outcome());
    assertTrue(c.lost());
    assertFalse(c.renewing());
    assertTrue(c.live(), "a claim that stopped renewing is live: it lapses by itself");
  }

  @Test
  void aRenewalRedisMissedIsTriedAgainAndRenewalsStopAtMaxHold() {
    ClaimLifecycle c = lifecycle(OutcomePolicy.STANDARD);
    c.start();
    c.on(new ClaimLifecycle.RenewDue(100 * MS));
    only(ClaimLifecycle.ArmRenewal.class, c.on(new ClaimLifecycle.RenewFailed(false)));
    assertFalse(c.lost());
    assertEquals(List.of(), c.on(new ClaimLifecycle.RenewDue(1_000 * MS)), "held for maxHold: no renewal");
    assertFalse(c.renewing());
    assertTrue(c.live());
  }

  @Test
  void aFailureIsStoredAsA500UnderStoreAllAndReleasedUnderStandard() {
    ClaimLifecycle all = lifecycle(OutcomePolicy.STORE_ALL);
    all.start();
    assertEquals(500, only(ClaimLifecycle.Store.class, all.on(new ClaimLifecycle.HandlerFailed(new IllegalStateException()))).answer().status());
    assertEquals(500, only(ClaimLifecycle.Reply.class, all.on(new ClaimLifecycle.WriteDone(true, null))).response().status());

    ClaimLifecycle standard = lifecycle(OutcomePolicy.STANDARD);
    standard.start();
    IllegalStateException boom = new IllegalStateException("boom");
    only(ClaimLifecycle.Release.class, standard.on(new ClaimLifecycle.HandlerFailed(boom)));
    ClaimLifecycle.Reply r = only(ClaimLifecycle.Reply.class, standard.on(new ClaimLifecycle.WriteDone(true, null)));
    assertNull(r.response());
    assertSame(boom, r.failure());
    assertEquals(ClaimLifecycle.Ending.RELEASED, standard.ending());
  }

  @Test
  void anAnswerRejectedBeforeExecutingIsReleasedWhateverThePolicy() {
    ClaimLifecycle c = lifecycle(OutcomePolicy.STORE_ALL);
    c.start();
    only(ClaimLifecycle.Release.class, c.on(new ClaimLifecycle.HandlerAnswered(Problems.of(400, "x", "x", "x"), false)));
  }

  @Test
  void aWriteThatFailedOrWasFencedEndsTheClaimAndStillAnswersTheClient() {
    ClaimLifecycle failed = lifecycle(OutcomePolicy.STANDARD);
    failed.start();
    failed.on(new ClaimLifecycle.HandlerAnswered(CHARGED, true));
    assertSame(CHARGED, only(ClaimLifecycle.Reply.class, failed.on(new ClaimLifecycle.WriteDone(false, new RuntimeException()))).response());
    assertEquals(ClaimLifecycle.Ending.WRITE_FAILED, failed.ending());
    ClaimLifecycle fenced = lifecycle(OutcomePolicy.STANDARD);
    fenced.start();
    fenced.on(new ClaimLifecycle.HandlerAnswered(CHARGED, true));
    assertEquals(ServerKitListener.IdempotencyOutcome.FENCED,
        only(ClaimLifecycle.Report.class, fenced.on(new ClaimLifecycle.WriteDone(false, null))).outcome());
    assertEquals(ClaimLifecycle.Ending.LOST, fenced.ending());
  }

  @Test
  void closingCancelsTheRenewalButTheAnswerIsStillWritten() {
    ClaimLifecycle c = lifecycle(OutcomePolicy.STANDARD);
    c.start();
    only(ClaimLifecycle.CancelRenewal.class, c.on(new ClaimLifecycle.Closed()));
    assertFalse(c.renewing());
    assertInstanceOf(ClaimLifecycle.Store.class, c.on(new ClaimLifecycle.HandlerAnswered(CHARGED, true)).get(0));
  }
}
