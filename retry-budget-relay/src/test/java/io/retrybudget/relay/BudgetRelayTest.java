package io.retrybudget.relay;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.BudgetMode;
import io.retrybudget.budget.redis.protocol.BudgetCall;
import io.retrybudget.budget.redis.protocol.BudgetReply;
import io.retrybudget.budget.redis.protocol.CountsInDoubt;
import java.util.List;
import org.junit.jupiter.api.Test;

class BudgetRelayTest {
  private static final BudgetConfig SEED = BudgetConfig.builder("payments").ratio(0.1).minRetriesPerSecond(10).build();
  private final BudgetRelay relay = new BudgetRelay("payments", RelaySettings.defaults(), () -> 0.5);

  private static BudgetCall count(long requests) {
    return new BudgetCall("payments", requests, 0, 0, 0, 0, SEED);
  }

  private static BudgetCall ask(long want) {
    return new BudgetCall("payments", 0, 0, 0, 1, want, SEED);
  }

  /** budget.lua's reply: {@code status} with {@code granted}, a window of {@code requests}, {@code callers} callers. */
  private static BudgetReply redis(String status, long granted, long requests, long callers, String mode) {
    return new BudgetReply(status, granted, requests, 0, 0, requests / 10 + 100, callers, 100_000, 10, 10, mode, 0, 0,
        20_000_000, 2_000);
  }

  private static BudgetReply redis(String status, long granted, long requests, long callers) {
    return redis(status, granted, requests, callers, "enforce");
  }

  /** As {@link #redis(String, long, long, long)}, the paced balance holding {@code available} whole permits. */
  private static BudgetReply rich(String status, long granted, long callers, long available) {
    return new BudgetReply(status, granted, 1_000, 0, 0, 200, callers, 100_000, 10, 10, "enforce", available, 0,
        20_000_000, 2_000);
  }

  @Test
  void aLoneRetryAtAnIdleRelayIsGrantedFromItsPartOfTheBalanceAndPaidWithTheNextCall() {
    relay.client("a", 1, count(10), 0);
    // Redis holds 20 whole permits, shared by 4 callers (this relay and three others): 5 are this relay's
    relay.upstreamReplied(relay.upstreamCall(0), rich(BudgetReply.COUNTED, 0, 4, 20), 1);
    BudgetReply lone = relay.client("a", 2, ask(1), 2);
    assertEquals(BudgetReply.GRANTED, lone.status(), "nothing drawn, and yet the budget has permits to spare");
    assertEquals(1, lone.granted());
    assertEquals(4, lone.available(), "what it may still grant: its part less what it lent");
    assertEquals(0, lone.nextGrantMillis());
    BudgetReply lease = relay.client("b", 1, ask(10), 3);
    assertEquals(4, lease.granted(), "a lease of what is left of its part");
    BudgetReply refused = relay.client("c", 1, ask(1), 4);
    assertEquals(BudgetReply.DENIED, refused.status(), "its part is lent: the others' parts are not its to grant");
    assertEquals(0, refused.available());
    // the next call pays for the 5 lent: budget.lua takes them from the balance before it grants a draw
    BudgetCall next = relay.upstreamCall(relay.nextUpstreamAt());
    assertEquals(5, next.retries(), "the grants lent, reported as retries granted here");
    assertEquals(1, next.denied());
    // a grant lent after the call took the counts is not in the balance its reply reports
    assertEquals(0, relay.client("d", 1, ask(1), 5).granted(), "nothing lendable until that reply");
    relay.upstreamReplied(next, rich(BudgetReply.GRANTED, 0, 4, 12), 6);
    assertEquals(3, relay.client("d", 2, ask(10), 7).granted(), "a part of 12 / 4 = 3, renewed by the reply");
    assertEquals(0, relay.client("e", 1, ask(1), 8).granted());
    assertEquals(3, relay.upstreamCall(relay.nextUpstreamAt()).retries());
  }

  @Test
  void lendingCountsGrantsMadeWhileTheCallThatPaysForThemIsInFlight() {
    relay.client("a", 1, count(10), 0);
    relay.upstreamReplied(relay.upstreamCall(0), rich(BudgetReply.COUNTED, 0, 1, 6), 1);
    assertEquals(2, relay.client("a", 2, ask(2), 2).granted());
    BudgetCall carrying = relay.upstreamCall(relay.nextUpstreamAt()); // takes the 2 lent
    assertEquals(2, carrying.retries());
    assertEquals(3, relay.client("b", 1, ask(3), 250).granted(), "a lease of 3 of the 4 left (6 less the 2 lent)");
    // the reply to the call that carried 2 says 5 are left: the 3 lent since are not paid in it, so 2
    // more may be lent, not 5
    relay.upstreamReplied(carrying, rich(BudgetReply.COUNTED, 0, 1, 5), 251);
    assertEquals(2, relay.client("c", 1, ask(10), 252).granted());
    assertEquals(0, relay.client("c", 2, ask(1), 253).granted());
  }

  @Test
  void grantsLentWhoseCallCameToNothingAreNotTakenForPaidByAReplyToAnotherCall() {
    relay.client("a", 1, count(10), 0);
    relay.upstreamReplied(relay.upstreamCall(0), rich(BudgetReply.COUNTED, 0, 1, 6), 1);
    assertEquals(2, relay.client("a", 2, ask(2), 2).granted());
    long t = relay.nextUpstreamAt();
    BudgetCall carrying = relay.upstreamCall(t);
    assertEquals(2, carrying.retries());
    relay.upstreamFailed(carrying, t); // lost (a host that cannot send it again): the 2 lent go again
    relay.client("a", 3, count(1), t);
    t = relay.nextUpstreamAt();
    relay.upstreamFailed(relay.upstreamCall(t), t);
    assertTrue(relay.cutOff());
    t = relay.nextUpstreamAt();
    BudgetCall probe = relay.upstreamCall(t);
    assertEquals(0, probe.retries(), "a probe carries nothing");
    // Redis answers the probe: 6 left, which the 2 lent never reached; 4 are this relay's to lend
    relay.upstreamReplied(probe, rich(BudgetReply.COUNTED, 0, 1, 6), t);
    assertFalse(relay.cutOff());
    assertEquals(4, relay.client("b", 1, ask(10), t + 1).granted());
  }

  @Test
  void aRelayLendsNothingBeforeRedisAnsweredNorFromAnEmptyBalanceNorWhileCutOff() {
    relay.client("a", 1, count(10), 0);
    assertEquals(BudgetReply.DENIED, relay.client("a", 2, ask(1), 0).status(), "no balance known yet");
    relay.upstreamReplied(relay.upstreamCall(0), rich(BudgetReply.COUNTED, 0, 3, 1), 1);
    assertEquals(BudgetReply.DENIED, relay.client("a", 3, ask(1), 2).status(),
        "1 permit for 3 callers: a third of one is its own, and its chance (0.5) says no");
    long seq = 3;
    BudgetCall up = relay.upstreamCall(relay.nextUpstreamAt());
    relay.upstreamReplied(up, rich(BudgetReply.COUNTED, 0, 1, 50), relay.nextUpstreamAt());
    for (int i = 0; i < 2; i++) {
      relay.client("a", ++seq, count(1), relay.nextUpstreamAt());
      BudgetCall c = relay.upstreamCall(relay.nextUpstreamAt());
      assertNotNull(c);
      relay.upstreamFailed(c, relay.nextUpstreamAt());
    }
    assertTrue(relay.cutOff());
    BudgetReply alone = relay.client("a", ++seq, ask(1), relay.nextUpstreamAt());
    assertEquals(BudgetReply.DENIED, alone.status(), "cut off: its own paced share decides (from nothing), no lending");
    assertEquals(0, alone.available());
  }

  @Test
  void countsOfManyClientsGoToRedisAsOneCall() {
    assertNull(relay.upstreamCall(0), "no client yet: nothing to send");
    for (int i = 0; i < 100; i++) {
      BudgetReply r = relay.client("c" + i, 1, count(3), 0);
      assertEquals(BudgetReply.COUNTED, r.status());
    }
    BudgetCall up = relay.upstreamCall(0);
    assertNotNull(up, "the first client's call is a hello: due at once");
    assertEquals(300, up.requests());
    assertEquals(0, up.need());
    assertEquals(SEED, up.seed(), "a client's seed seeds Redis");
    assertNull(relay.upstreamCall(1), "one call in flight at a time");
    relay.upstreamReplied(up, redis(BudgetReply.COUNTED, 0, 300, 1), 5);
    assertEquals(0, relay.pendingRequests());
    assertTrue(relay.nextUpstreamAt() >= 5 + 75 && relay.nextUpstreamAt() <= 5 + 125, "0.75 to 1.25 of 100 ms");
  }

  @Test
  void countsInDoubtAreAddedOnlyWhenTheirCallNeverReachedThisRelay() {
    relay.client("a", 1, count(1), List.of(), ReportLedger.Arrival.on(1), 0); // on connection 1
    // report 2 never arrived (its connection reset on the way); report 3 carries its counts
    assertEquals(BudgetReply.COUNTED, relay.client("a", 3, count(2), List.of(new CountsInDoubt(2, 5, 1, 0)),
        ReportLedger.Arrival.on(1), 1).status());
    assertEquals(8, relay.pendingRequests(), "1 + 2 + the 5 carried");
    assertEquals(BudgetReply.STALE, relay.client("a", 2, count(5), 2).status(), "report 2 arriving late is stale");
    relay.client("a", 4, count(0), List.of(new CountsInDoubt(2, 5, 1, 0)), ReportLedger.Arrival.on(1), 3);
    assertEquals(8, relay.pendingRequests(), "carried again: added once");
    // report 5 arrived (its reply was lost): carried by 6, it is not added again
    relay.client("a", 5, count(4), List.of(), ReportLedger.Arrival.on(1), 4);
    relay.client("a", 6, count(0), List.of(new CountsInDoubt(5, 4, 0, 0)), ReportLedger.Arrival.on(1), 5);
    assertEquals(12, relay.pendingRequests());
    // a client this relay holds no entry for (new to it, evicted, or the relay restarted): dropped
    relay.client("b", 9, count(1), List.of(new CountsInDoubt(8, 7, 0, 0)), ReportLedger.Arrival.on(1), 6);
    assertEquals(13, relay.pendingRequests(), "without an entry nobody knows whether report 8 ran here");
    // a reconnect: report 10 may have gone to another relay process behind the same address
    relay.client("a", 11, count(1), List.of(new CountsInDoubt(10, 7, 0, 0)), ReportLedger.Arrival.on(2), 7);
    assertEquals(14, relay.pendingRequests(), "carried on another connection than the client's last report: dropped");
  }

  @Test
  void aReportIsAppliedOnce() {
    relay.client("a", 1, count(5), 0);
    BudgetReply again = relay.client("a", 1, count(5), 1);
    assertEquals(BudgetReply.STALE, again.status());
    assertFalse(again.applied());
    relay.client("a", 2, count(1), 2);
    assertEquals(6, relay.upstreamCall(2).requests());
  }

  @Test
  void asksDrawPermitsThatTheClientsAreGrantedFrom() {
    relay.client("a", 1, count(10), 0);
    BudgetCall hello = relay.upstreamCall(0);
    relay.upstreamReplied(hello, redis(BudgetReply.COUNTED, 0, 10, 1), 1);
    // with nothing held, an ask is refused and counted as denied; it says when the next draw comes:
    // at once, the relay having drawn for no ask yet (its next call brought forward)
    BudgetReply refused = relay.client("a", 2, ask(1), 2);
    assertEquals(BudgetReply.DENIED, refused.status());
    assertEquals(2, relay.nextUpstreamAt());
    assertEquals(1, refused.nextGrantMillis());
    for (int i = 0; i < 99; i++) {
      relay.client("b" + i, 1, ask(1), 3);
    }
    // 100 asks over the 200 ms they span (one bucket at least): 500 a second, until the call after this
    // one (199 ms: an interval after the call it replaced, due at 101), a quarter more
    BudgetCall draw = relay.upstreamCall(relay.nextUpstreamAt());
    assertEquals(1, draw.need());
    assertEquals(125, draw.want()); // ceil(500 * 0.199 * 1.25)
    assertEquals(100, draw.denied(), "the refusals the relay made");
    relay.upstreamReplied(draw, redis(BudgetReply.GRANTED, 7, 10, 1), 110);
    assertEquals(7, relay.held(110), "Redis granted 7 of them");
    assertEquals(210, relay.nextUpstreamAt(), "an interval on: the call it replaced was due before the answer");
    BudgetReply lease = relay.client("a", 3, ask(4), 111);
    assertEquals(BudgetReply.GRANTED, lease.status());
    assertEquals(4, lease.granted());
    assertEquals(3, lease.available());
    assertEquals(0, lease.nextGrantMillis());
    assertEquals(3, relay.client("b0", 2, ask(4), 112).granted(), "what is left");
    // drawn permits not handed out within their life are dropped (Redis counted them: the safe side)
    relay.upstreamCall(relay.nextUpstreamAt());
    assertEquals(0, relay.droppedPermits());
  }

  @Test
  void aColdRelayDrawsAtItsFirstAskForItsClientsShareAndBurst() {
    for (int i = 0; i < 100; i++) {
      relay.client("c" + i, 1, count(10), 0);
    }
    relay.upstreamReplied(relay.upstreamCall(0), redis(BudgetReply.COUNTED, 0, 1_000, 1), 0);
    assertEquals(100, relay.nextUpstreamAt());
    // the outage begins: the first ask finds nothing held and no draw made for any ask
    BudgetReply refused = relay.client("c0", 2, ask(1), 30);
    assertEquals(BudgetReply.DENIED, refused.status());
    assertEquals(1, refused.nextGrantMillis(), "ask again at once: the draw goes now");
    BudgetCall draw = relay.upstreamCall(30);
    assertNotNull(draw, "the call due at 100 is brought forward");
    // its clients' paced share: 0.1 of 1,000 first attempts a second plus the floor (theirs whole), 110 a
    // second, until the call after it (170 ms: an interval after 100) a quarter more, and the burst
    // the budget saved up (500 ms): ceil(110 * (0.2125 + 0.5)) = 79, where the one ask seen says 2
    assertEquals(79, draw.want());
    assertEquals(1, draw.need());
    relay.upstreamReplied(draw, redis(BudgetReply.GRANTED, 79, 1_000, 1), 31);
    assertEquals(200, relay.nextUpstreamAt(), "the next call an interval after the one replaced: no call added");
    assertEquals(BudgetReply.GRANTED, relay.client("c1", 2, ask(1), 32).status());
    // a relay that drew within the last 2 s waits for its next call, however its asks fare
    relay.client("c2", 2, ask(100), 33);
    assertEquals(BudgetReply.DENIED, relay.client("c3", 2, new BudgetCall("payments", 0, 0, 0, 100, 100, SEED), 34)
        .status());
    assertEquals(200, relay.nextUpstreamAt(), "not cold: nothing brought forward");
  }

  @Test
  void aRefusedDrawIsNotCountedAsAClientsDenial() {
    relay.client("a", 1, ask(1), 0); // refused, 1 denial
    BudgetCall draw = relay.upstreamCall(0);
    assertEquals(1, draw.denied());
    assertEquals(1, draw.need());
    // budget.lua refused the draw and counted one denial for it
    relay.upstreamReplied(draw, redis(BudgetReply.DENIED, 0, 0, 1), 1);
    relay.client("a", 2, ask(1), 2);
    relay.client("a", 3, ask(1), 3);
    BudgetCall next = relay.upstreamCall(relay.nextUpstreamAt());
    assertEquals(1, next.denied(), "2 refusals less the one budget.lua counted for the draw");
  }

  @Test
  void aCallRedisDidNotApplyGoesAgainAndAFailedOneIsLost() {
    relay.client("a", 1, count(10), 0);
    BudgetCall first = relay.upstreamCall(0);
    relay.upstreamReplied(first, redis(BudgetReply.STALE, 0, 0, 1), 1);
    relay.client("a", 2, count(5), 2);
    BudgetCall second = relay.upstreamCall(relay.nextUpstreamAt());
    assertEquals(15, second.requests(), "not applied: sent again");
    relay.upstreamFailed(second, 200);
    assertEquals(15, relay.lostRequests(), "may have been applied: never sent twice");
    assertEquals(0, relay.pendingRequests());
    assertFalse(relay.cutOff(), "one failure is not a cut");
  }

  @Test
  void aCallInDoubtGoesAgainAsItWasForAMinuteThenItsCountsAreLost() {
    relay.client("a", 1, count(10), 0);
    BudgetCall first = relay.upstreamCall(0);
    relay.upstreamInDoubt(first, 1_000);
    relay.client("a", 2, count(5), 1_001);
    long t = relay.nextUpstreamAt();
    BudgetCall again = relay.upstreamCall(t);
    assertTrue(again == first && relay.resending(), "the same call, to go with its own number");
    relay.upstreamInDoubt(again, t + 1_000); // timed out again: still in doubt since the first time
    t = relay.nextUpstreamAt();
    assertTrue(t < CallInDoubt.LIMIT_MILLIS);
    assertTrue(relay.upstreamCall(t) == first);
    relay.upstreamInDoubt(first, t + 1_000);
    long expiry = Math.max(relay.nextUpstreamAt(), 1_000 + CallInDoubt.LIMIT_MILLIS); // a minute after the first time
    BudgetCall probe = relay.upstreamCall(expiry);
    assertTrue(relay.cutOff() && probe != first && probe.requests() == 0,
        () -> "given up: cut off, an empty probe: " + relay.cutOff() + " " + probe);
    assertFalse(relay.resending() || relay.inDoubt());
    assertEquals(10, relay.lostRequests(), "its counts lost: Redis may forget the number it went with");
    relay.upstreamReplied(probe, redis(BudgetReply.COUNTED, 0, 0, 1), expiry + 1);
    relay.client("a", 3, count(7), expiry + 2);
    BudgetCall next = relay.upstreamCall(relay.nextUpstreamAt());
    assertEquals(7, next.requests(), "only what came after, within the window");
    assertEquals(15, relay.lostRequests(), "and the 5 that came a minute ago: Redis would count them as this second's");
  }

  @Test
  void firstAttemptsKeptThroughACutOffLongerThanTheWindowAreNotSentAsThisSecondsWhenRedisIsBack() {
    // Redis gone for a minute: 100 first attempts a second reach the relay, its calls fail
    BudgetCall back = backAfterAMinuteCutOff(redis(BudgetReply.COUNTED, 0, 10, 1), redis(BudgetReply.COUNTED, 0, 10, 1));
    // the last window's (10 s: about 1,000), not the minute's 6,000 as this second's
    assertTrue(back.requests() >= 900 && back.requests() <= 1_000, "sent when Redis was back: " + back.requests());
  }

  /**
   * Redis answers {@code before} to the relay's first call, then is gone for a minute while 100 first
   * attempts a second reach the relay (its calls fail, it is cut off), then answers its probe with
   * {@code after}: the call that follows.
   */
  private BudgetCall backAfterAMinuteCutOff(BudgetReply before, BudgetReply after) {
    long seq = 0;
    relay.client("a", ++seq, count(10), 0);
    relay.upstreamReplied(relay.upstreamCall(0), before, 0);
    for (long t = 10; t <= 60_000; t += 10) {
      relay.client("a", ++seq, count(1), t);
      BudgetCall up = relay.upstreamCall(t);
      if (up != null) {
        relay.upstreamFailed(up, t);
      }
    }
    assertTrue(relay.cutOff());
    BudgetCall probe = relay.upstreamCall(relay.nextUpstreamAt());
    relay.upstreamReplied(probe, after, relay.nextUpstreamAt());
    return relay.upstreamCall(relay.nextUpstreamAt());
  }

  /** Redis's reply for a budget whose window is {@code windowSeconds}. */
  private static BudgetReply windowed(int windowSeconds) {
    return new BudgetReply(BudgetReply.COUNTED, 0, 10, 0, 0, 101, 1, 100_000, windowSeconds, 10, "enforce", 0, 0,
        20_000_000, 2_000);
  }

  @Test
  void aWindowShortenedDuringACutOffSendsOnlyTheNewWindowsFirstAttemptsWhenRedisIsBack() {
    // a window of a minute; meanwhile an operator set the window to 10 s: the probe's reply says so
    BudgetCall back = backAfterAMinuteCutOff(windowed(60), windowed(10));
    // the new window's last 10 s at most (about 1,000), not the minute's 6,000 as this second's (before:
    // all kept were sent as if they came at the change); kept by when their 6 s bucket began, so those
    // of a bucket that began more than 10 s ago are dropped (the safe side): at least 4 s of them
    assertTrue(back.requests() >= 400 && back.requests() <= 1_100, "sent when Redis was back: " + back.requests());
  }

  @Test
  void aReplysWindowOutsideItsRangeIsTakenWithinIt() {
    for (int window : new int[] {0, -1, 3_601}) {
      BudgetRelay r = new BudgetRelay("w", RelaySettings.defaults(), () -> 0.5);
      r.client("a", 1, count(10), 0);
      r.upstreamReplied(r.upstreamCall(0), windowed(window), 0); // before, a window of 0 threw here
      BudgetReply reply = r.client("a", 2, count(5), 100);
      assertTrue(reply.windowSeconds() >= 1 && reply.windowSeconds() <= 3_600, "window " + window + ": "
          + reply.windowSeconds());
      assertTrue(r.upstreamCall(r.nextUpstreamAt()).requests() >= 5, "window " + window + ": counts go on");
    }
  }

  @Test
  void firstAttemptsOfCallsGivenBackAgainAndAgainAgeAsTheyCame() {
    relay.client("a", 1, count(100), 0);
    relay.upstreamReplied(relay.upstreamCall(0), redis(BudgetReply.COUNTED, 0, 1, 1), 0); // hello: window 10 s
    relay.client("a", 2, count(50), 100); // 50 first attempts at 100 ms
    long t = 100;
    long sent = 0;
    // every call for 15 s answered "stale" (Redis applied none of it): each is given back
    while (t < 15_000) {
      t = Math.max(t + 1, relay.nextUpstreamAt());
      BudgetCall up = relay.upstreamCall(t);
      if (up != null) {
        sent = Math.max(sent, up.requests());
        relay.upstreamReplied(up, redis(BudgetReply.STALE, 0, 0, 1), t);
      }
    }
    assertEquals(50, sent, "given back and sent again meanwhile");
    t = Math.max(t + 1, relay.nextUpstreamAt());
    relay.client("a", 3, count(7), t);
    BudgetCall back = relay.upstreamCall(t);
    // the 50 came 15 s ago, older than the window: dropped, not sent as this second's (before: given back
    // at each failure as if they came then, all 50 went)
    assertEquals(7, back.requests(), "only the first attempts of the last window");
  }

  @Test
  void aCallRefusedBeforeRedisRanItGoesAgain() {
    relay.client("a", 1, count(10), 0);
    BudgetCall first = relay.upstreamCall(0);
    relay.upstreamRefused(first, 1);
    assertEquals(0, relay.lostRequests(), "never run: nothing lost");
    assertEquals(10, relay.pendingRequests());
    relay.client("a", 2, count(5), 2);
    BudgetCall second = relay.upstreamCall(relay.nextUpstreamAt());
    assertEquals(15, second.requests(), "refused unwritten: sent again");
    relay.upstreamRefused(second, relay.nextUpstreamAt());
    assertTrue(relay.cutOff(), "refused twice in a row: cut off, as after two failures");
  }

  @Test
  void aRelayCutOffFromRedisGrantsItsOwnPacedShareAndReportsItLater() {
    long t = 0;
    relay.client("a", 1, count(1), t);
    BudgetCall hello = relay.upstreamCall(t);
    relay.upstreamReplied(hello, redis(BudgetReply.COUNTED, 0, 1, 1), t);
    long seq = 1;
    long grants = 0;
    long firstAttempts = 1;
    int failures = 0;
    // 10 s of 1,000 first attempts a second in 10 ms steps, every one asking; Redis gone from 1 s on
    long cutAt = -1;
    long firstAttemptsAtCut = 0;
    for (t = 10; t <= 10_000; t += 10) {
      if (cutAt < 0 && relay.cutOff()) {
        cutAt = t;
        firstAttemptsAtCut = firstAttempts;
      }
      firstAttempts += 10;
      relay.client("a", ++seq, new BudgetCall("payments", 10, 0, 0, 0, 0, SEED), t);
      for (int i = 0; i < 10; i++) {
        BudgetReply r = relay.client("a", ++seq, ask(1), t);
        grants += r.granted();
      }
      BudgetCall up = relay.upstreamCall(t);
      if (up != null) {
        if (t < 1_000) {
          relay.upstreamReplied(up, redis(up.need() > 0 ? BudgetReply.GRANTED : BudgetReply.COUNTED, up.want(),
              firstAttempts, 1), t);
        } else {
          relay.upstreamFailed(up, t);
          failures++;
        }
      }
    }
    assertTrue(relay.cutOff());
    assertTrue(failures >= 2);
    // cut off for about 8.8 s: the relay's one client is the whole fleet, so ratio 0.1 plus the floor of 10
    assertTrue(grants > 0);
    // Redis answers again: the grants made alone are reported as a fallback's are
    relay.client("a", ++seq, count(0), t);
    BudgetCall probe = relay.upstreamCall(relay.nextUpstreamAt());
    assertEquals(0, probe.requests() + probe.denied() + probe.retries() + probe.want(), "an empty probe: counts wait");
    relay.upstreamReplied(probe, redis(BudgetReply.COUNTED, 0, firstAttempts, 1), t + 1);
    assertFalse(relay.cutOff());
    BudgetCall back = relay.upstreamCall(relay.nextUpstreamAt());
    assertTrue(back.requests() >= 8_800, "the first attempts counted while cut off: " + back.requests());
    // its paced share: 0.1 of the first attempts while cut off, plus the floor (its one client is the
    // whole fleet), from nothing when the cut began, at most one permit ahead
    double share = 0.1 * (firstAttempts - firstAttemptsAtCut) + 10 * (t - cutAt) / 1000.0;
    assertTrue(back.retries() >= share - 2 && back.retries() <= share + 1,
        "grants while cut off: " + back.retries() + ", the paced share " + share);
  }

  @Test
  void theReplyTellsTheFleetAndACeilingInTheClientsTerms() {
    for (int i = 0; i < 250; i++) {
      relay.client("c" + i, 1, count(4), 0);
    }
    BudgetCall up = relay.upstreamCall(0);
    // Redis holds 4 callers, and 4 times this relay's first attempts
    relay.upstreamReplied(up, redis(BudgetReply.COUNTED, 0, 4_000, 4), 1);
    BudgetReply r = relay.client("c0", 2, count(0), 2);
    assertEquals(1_000, r.activeClients(), "250 clients scaled by a quarter of the first attempts");
    assertEquals(1_000, relay.fleet(2));
    assertEquals(400_000, r.callCeiling(), "100,000 a second for 250 of 1,000 clients");
    assertEquals(2_000, r.maxCallsPerSecond(), "the budget's own ceiling, as Redis holds it");
    assertEquals(20_000_000, r.refillPpm(), "the budget's rate, as Redis said");
    assertEquals(100_000, r.ratioPpm());
    assertEquals(10, r.minRetriesPerSecond());
  }

  @Test
  void shadowModeGrantsWhatItWouldRefuseAndCountsItDenied() {
    relay.client("a", 1, count(1), 0);
    BudgetCall up = relay.upstreamCall(0);
    relay.upstreamReplied(up, redis(BudgetReply.COUNTED, 0, 1, 1, BudgetMode.SHADOW.wireName()), 1);
    BudgetReply r = relay.client("a", 2, new BudgetCall("payments", 0, 0, 0, 2, 3, SEED), 2);
    assertEquals(BudgetReply.SHADOW, r.status());
    assertEquals(2, r.granted(), "the need");
    assertEquals(2, relay.upstreamCall(relay.nextUpstreamAt()).denied());
  }

  @Test
  void reportsAboveWhatOneCallMayCarryAreLostSoThatACallClosesItsBatch() {
    long cap = BudgetCall.callCap(SEED);
    relay.client("a", 1, new BudgetCall("payments", cap, 0, 0, 0, 0, SEED), 0);
    relay.client("b", 1, new BudgetCall("payments", 5, 0, 0, 0, 0, SEED), 0);
    BudgetCall up = relay.upstreamCall(0);
    assertEquals(cap, up.requests());
    assertEquals(0, relay.pendingRequests(), "every count pending went, or is lost: the call closes batch 1");
    assertEquals(5, relay.lostRequests(), "undercounting is the safe side");
    assertEquals(1, relay.upstreamExtras().through());
  }

  @Test
  void anIdleRelayCallsOnlyToStayKnown() {
    relay.client("a", 1, count(1), 0);
    BudgetCall up = relay.upstreamCall(0);
    relay.upstreamReplied(up, redis(BudgetReply.COUNTED, 0, 1, 1), 0);
    int calls = 0;
    for (long t = 1; t <= 30_000; t++) {
      BudgetCall c = relay.upstreamCall(t);
      if (c != null) {
        calls++;
        relay.upstreamReplied(c, redis(BudgetReply.COUNTED, 0, 1, 1), t);
      }
    }
    assertEquals(3, calls, "every 10 s, not every 100 ms");
  }

  @Test
  void aClientInventingIdsCannotGrowTheRelaysMemory() {
    BudgetRelay bounded = new BudgetRelay("payments", RelaySettings.builder().maxClients(100).build(), () -> 0.5);
    long seq = 0;
    for (int i = 0; i < 10_000; i++) {
      if (i % 50 == 0) {
        bounded.client("live", ++seq, count(1), 0);
      }
      assertEquals(BudgetReply.COUNTED, bounded.client("invented-" + i, 1, count(1), 0).status());
    }
    assertEquals(100, bounded.recordedClients());
    assertEquals(10_001 - 100, bounded.evictedClients());
    assertEquals(BudgetReply.STALE, bounded.client("live", seq, count(1), 1).status(), "the live client is still known");
    assertEquals(100, bounded.clients(1));
    assertEquals(10_200, bounded.upstreamCall(1).requests(), "every report was counted once");
  }
}
