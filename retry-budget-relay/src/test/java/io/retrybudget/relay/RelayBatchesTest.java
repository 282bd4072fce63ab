package io.retrybudget.relay;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.redis.protocol.BudgetCall;
import io.retrybudget.budget.redis.protocol.BudgetReply;
import io.retrybudget.budget.redis.protocol.CallExtras;
import io.retrybudget.budget.redis.protocol.HeldCounts;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A relay's batches: what it tells clients of the way their counts take to Redis, and the held items it forwards. */
class RelayBatchesTest {
  private static final BudgetConfig SEED = BudgetConfig.builder("payments").ratio(0.1).build();
  private final BudgetRelay relay = new BudgetRelay("payments", RelaySettings.defaults(), () -> 0.5);
  private long seq;

  private BudgetRelay.Answer report(long requests, List<HeldCounts> held, long now) {
    return relay.answer("c1", ++seq, new BudgetCall("payments", requests, 0, 0, 0, 0, SEED), List.of(), held,
        ReportLedger.Arrival.on(1), now);
  }

  private static BudgetReply applied() {
    return new BudgetReply(BudgetReply.COUNTED, 0, 100, 0, 0, 110, 2, 100_000, 10, 10, "enforce", 0, 0, 20_000_000,
        2_000);
  }

  private static HeldCounts item(long batch) {
    return new HeldCounts("relay-gone", batch, "c1", 4, 0, 0);
  }

  private BudgetCall due(long now) {
    BudgetCall up = relay.upstreamCall(Math.max(now, relay.nextUpstreamAt()));
    assertNotNull(up);
    return up;
  }

  @Test
  void aCallClosesTheBatchOfEveryCountItTakesAndItsAnswerSettlesIt() {
    BudgetRelay.Answer a = report(3, List.of(), 0);
    assertEquals(1, a.batch());
    assertEquals(0, a.settled());
    BudgetCall up = due(0);
    assertEquals(3, up.requests());
    assertEquals(1, relay.upstreamExtras().through(), "through=1: batch 1 is all in this call");
    BudgetRelay.Answer b = report(2, List.of(), 5);
    assertEquals(2, b.batch(), "reports after the call go into the next batch");
    assertEquals(0, b.settled(), "Redis has not answered yet");
    relay.upstreamReplied(up, applied(), 10);
    assertEquals(1, report(0, List.of(), 11).settled());
  }

  @Test
  void aCallNotAppliedSettlesNothingItsCountsCloseALaterBatch() {
    report(3, List.of(), 0);
    BudgetCall up = due(0);
    relay.upstreamReplied(up, new BudgetReply(BudgetReply.MISSING, 0, 0, 0, 0, 0, 0, 100_000, 10, 10, "enforce", 0, 0,
        0, 2_000), 10);
    assertEquals(0, report(1, List.of(), 11).settled());
    BudgetCall next = due(11);
    assertEquals(4, next.requests(), "given back and sent with the next");
    assertEquals(2, relay.upstreamExtras().through());
    relay.upstreamReplied(next, applied(), 20);
    assertEquals(2, report(0, List.of(), 21).settled());
  }

  @Test
  void aCallInDoubtGoesAgainSayingWhatItSaidAndItsStaleAnswerSettlesIt() {
    report(3, List.of(item(7)), 0);
    BudgetCall up = due(0);
    CallExtras first = relay.upstreamExtras();
    assertEquals(List.of(item(7)), first.held(), "the held item taken goes with the call that closes its batch");
    relay.upstreamInDoubt(up, 10);
    report(5, List.of(), 11);
    BudgetCall again = due(11);
    assertTrue(relay.resending());
    assertEquals(up, again);
    assertEquals(first, relay.upstreamExtras(), "the same batch and items");
    relay.upstreamReplied(again, new BudgetReply(BudgetReply.STALE, 0, 0, 0, 0, 0, 0, 100_000, 10, 10, "enforce", 0, 0,
        0, 2_000), 20);
    assertEquals(1, report(0, List.of(), 21).settled(), "stale when sent again: the first was applied");
    assertEquals(5, due(21).requests());
    assertEquals(List.of(), relay.upstreamExtras().held());
  }

  @Test
  void heldItemsAreTakenAllOrNoneUpToOneCallsWorthAndGivenBackWithTheirCall() {
    List<HeldCounts> many = new ArrayList<>();
    for (int i = 1; i <= 16; i++) {
      many.add(item(i));
    }
    int taken = 0;
    for (int i = 0; i < 17; i++) {
      if (report(1, many, i).took()) {
        taken++;
      }
    }
    assertEquals(CallExtras.MAX_HELD / 16, taken, "as many as one call forwards: the rest are carried again");
    BudgetCall up = due(20);
    assertEquals(CallExtras.MAX_HELD, relay.upstreamExtras().held().size());
    assertFalse(report(1, List.of(item(1)), 21).took(), "in flight and waiting together: one call's worth");
    relay.upstreamRefused(up, 22);
    BudgetCall next = due(30);
    assertEquals(CallExtras.MAX_HELD, relay.upstreamExtras().held().size(), "refused unsent: given back, sent again");
    assertEquals(18, next.requests());
  }

  @Test
  void aStaleReportTakesNoItemAndAProbeClosesNoBatch() {
    report(1, List.of(), 0);
    BudgetRelay.Answer stale = relay.answer("c1", 1, new BudgetCall("payments", 1, 0, 0, 0, 0, SEED), List.of(),
        List.of(item(1)), ReportLedger.Arrival.on(1), 1);
    assertEquals(BudgetReply.STALE, stale.reply().status());
    assertFalse(stale.took());
    for (int i = 0; i < RelaySettings.defaults().failuresToCutOff(); i++) {
      BudgetCall up = due(10 + i);
      relay.upstreamRefused(up, 10 + i);
    }
    assertTrue(relay.cutOff());
    BudgetCall probe = due(100);
    assertEquals(0, probe.requests());
    assertEquals(CallExtras.NONE, relay.upstreamExtras(), "a probe closes nothing and forwards nothing");
    relay.upstreamReplied(probe, applied(), 110);
    assertEquals(0, report(0, List.of(), 111).settled());
    BudgetCall after = due(111);
    assertEquals(1, after.requests());
    relay.upstreamReplied(after, applied(), 120);
    assertEquals(relay.upstreamExtras().through(), 0);
    assertEquals(report(0, List.of(), 121).batch() - 1, report(0, List.of(), 122).settled());
  }

  @Test
  void anIdleRelayStillSendsTheItemsItTook() {
    report(0, List.of(), 0);
    relay.upstreamReplied(due(0), applied(), 1);
    assertTrue(report(0, List.of(item(3)), 2).took());
    BudgetCall up = due(2);
    assertEquals(0, up.requests());
    assertEquals(List.of(item(3)), relay.upstreamExtras().held());
  }

  @Test
  void itemsOfACallGivenUpInDoubtWaitAgainForTheNext() {
    report(1, List.of(item(7)), 0);
    BudgetCall up = due(0);
    relay.upstreamInDoubt(up, 10);
    BudgetCall again = due(10 + CallInDoubt.LIMIT_MILLIS + 1); // held a minute: given up, a fresh call goes
    assertFalse(relay.resending());
    assertEquals(List.of(item(7)), relay.upstreamExtras().held(), "budget.lua adds an item once: sent again");
    assertEquals(0, again.requests(), "the counts of the call given up are lost");
  }

  @Test
  void whatRedisDidNotApplyForTwoMinutesIsGivenUpLestItCountTwice() {
    report(4, List.of(), 0);
    relay.upstreamReplied(due(0), applied(), 1);
    for (int i = 0; i < RelaySettings.defaults().failuresToCutOff(); i++) {
      report(3, List.of(), 10 + i);
      relay.upstreamRefused(due(10 + i), 10 + i);
    }
    assertTrue(relay.cutOff());
    assertTrue(report(2, List.of(item(9)), 500).took());
    assertEquals(8, relay.pendingRequests(), "kept while cut off");
    long t = 1;
    while (t < 1 + RelayBatches.GIVE_UP_MILLIS) {
      t = Math.max(t + 1, relay.nextUpstreamAt());
      BudgetCall probe = due(t);
      relay.upstreamRefused(probe, t);
    }
    assertEquals(0, relay.pendingRequests(), "two minutes unapplied: given up (Redis may forget the credits by 4)");
    assertEquals(8, relay.lostRequests());
    assertEquals(1, relay.droppedHeldItems());
    report(1, List.of(), t + 1);
    BudgetCall healed = due(t + 1);
    relay.upstreamReplied(healed, applied(), t + 2); // the probe answered: Redis decides again
    BudgetCall next = due(t + 3);
    assertEquals(1, next.requests(), "what came after is sent");
  }
}
