package io.retrybudget.budget;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import io.retrybudget.budget.redis.protocol.BudgetCall;
import io.retrybudget.budget.redis.protocol.HeldCounts;
import io.retrybudget.budget.redis.protocol.RelayHeld;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A call of unknown fate to a relay, given up on its way (the way answers as a new relay, another way's
 * call of unknown fate takes its place, or a minute passed), is kept for the relay batch it went into if
 * it ran there, when the client knows that relay process had it: the way's last tag came on the same
 * connection. Without that it is lost, as before.
 */
class AdoptedDoubtsTest {
  private final RelayHeld relayHeld = new RelayHeld("c1");
  private final HeldDoubts doubts = new HeldDoubts((held, at) -> {
    if (held.origin() == null) {
      return false;
    }
    relayHeld.adopt(held.origin(), held.counts().requests(), held.counts().denied(), held.counts().retries(), at);
    return true;
  });

  private static BudgetCall counts(long requests) {
    return new BudgetCall("b", requests, 0, 0, 0, 0, null);
  }

  private static final RelayHeld.Known A_AT_7 = new RelayHeld.Known("relay-a", 7, 3);

  @Test
  void aWayThatAnswersAsANewRelayGivesItsOldRelaysCallsToBeCarriedAsItsBatch() {
    doubts.unknown(0, 41, counts(6), 100, A_AT_7);
    doubts.unknown(0, 42, counts(2), 110, null); // its connection not known: cannot be kept for a relay
    doubts.relayGone(0, "relay-a", 200);
    assertEquals(0, doubts.lostRequests());
    assertEquals(List.of(new HeldCounts("relay-a", 7, "c1", 6, 0, 0)), relayHeld.offer(0, 210).items(),
        "carried as relay-a's batch 7 (the way answers as another relay now)");
    assertEquals(2, doubts.offer(210).requests(), "the one that may have gone to a process the client cannot name stays");
    doubts.offer(110 + CallsInDoubt.KEPT_MILLIS + 1);
    assertFalse(doubts.any());
    assertEquals(2, doubts.lostRequests(), "and is lost, as before");
  }

  @Test
  void anotherWaysCallOfUnknownFateOrAMinuteGivesThemUpToo() {
    doubts.unknown(0, 41, counts(6), 100, A_AT_7);
    doubts.unknown(1, 50, counts(1), 120, null);
    assertEquals(List.of(new HeldCounts("relay-a", 7, "c1", 6, 0, 0)), relayHeld.offer(1, 130).items());
    assertEquals(0, doubts.lostRequests());
    doubts.unknown(1, 51, counts(4), 140, new RelayHeld.Known("relay-b", 2, 5));
    doubts.offer(140 + CallsInDoubt.KEPT_MILLIS + 1);
    assertEquals(1, doubts.lostRequests(), "call 50: no relay batch known");
    List<HeldCounts> items = relayHeld.offer(2, 140 + CallsInDoubt.KEPT_MILLIS + 2).items();
    assertEquals(List.of(new HeldCounts("relay-b", 2, "c1", 4, 0, 0)), items, "call 51, kept a minute more");
    assertEquals(6, relayHeld.lostRequests(), "call 41, kept for relay-a a minute from 120 ms");
  }

  @Test
  void aBatchAdoptedAfterAPartOfItWasCarriedIsItsNextPart() {
    relayHeld.applied(0, new io.retrybudget.budget.redis.protocol.RelayTag("relay-a", 7, 6, true), 3, List.of(),
        counts(5), 0);
    assertEquals(List.of(new HeldCounts("relay-a", 7, "c1", 5, 0, 0)), relayHeld.offer(1, 10).items());
    doubts.unknown(0, 41, counts(6), 20, relayHeld.offer(0, 20).known());
    doubts.relayGone(0, "relay-a", 30);
    assertEquals(List.of(new HeldCounts("relay-a", 7, "c1", 5, 0, 0), new HeldCounts("relay-a", 7, "c1", 6, 0, 0, 2)),
        relayHeld.offer(1, 40).items(), "the same batch, part 2: budget.lua adds it after part 1");
  }
}
