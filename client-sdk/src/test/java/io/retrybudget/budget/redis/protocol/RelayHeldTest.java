package io.retrybudget.budget.redis.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The client's side of held counts: kept until their relay settles the batch, carried elsewhere meanwhile. */
class RelayHeldTest {
  private static final int A = 0;
  private static final int B = 1;
  private static final int REDIS = 2;
  private final RelayHeld held = new RelayHeld("c1");

  private static BudgetCall counts(long requests) {
    return new BudgetCall("b", requests, requests > 0 ? 1 : 0, 0, 0, 0, null);
  }

  @Test
  void countsAreKeptUntilTheirRelaySettlesTheirBatch() {
    held.applied(A, new RelayTag("relay-a", 3, 2, true), 1, List.of(), counts(5), 0);
    held.applied(A, new RelayTag("relay-a", 3, 2, true), 1, List.of(), counts(2), 10); // the same batch: one item
    held.applied(A, new RelayTag("relay-a", 4, 2, true), 1, List.of(), counts(1), 20);
    assertEquals(List.of(), held.offer(A, 30).items(), "not carried back to the relay that holds them");
    assertEquals(List.of(new HeldCounts("relay-a", 3, "c1", 7, 2, 0), new HeldCounts("relay-a", 4, "c1", 1, 1, 0)),
        held.offer(B, 30).items(), "carried to another way, in batch order");
    held.applied(A, new RelayTag("relay-a", 5, 3, true), 1, List.of(), counts(0), 40);
    assertEquals(List.of(new HeldCounts("relay-a", 4, "c1", 1, 1, 0)), held.offer(REDIS, 50).items(), "batch 3 settled");
    held.applied(A, new RelayTag("relay-a", 5, 4, true), 1, List.of(), counts(0), 60);
    assertFalse(held.any());
  }

  @Test
  void redisJudgesWhatItWasCarriedARelayForwardsItAndKeepsItUntilItSettles() {
    held.applied(A, new RelayTag("relay-a", 3, 2, true), 1, List.of(), counts(5), 0);
    List<HeldCounts> toB = held.offer(B, 10).items();
    held.applied(B, new RelayTag("relay-b", 8, 7, false), 1, toB, counts(0), 10);
    assertEquals(toB, held.offer(B, 20).items(), "not taken: carried again");
    held.applied(B, new RelayTag("relay-b", 8, 7, true), 1, toB, counts(0), 20);
    assertEquals(List.of(), held.offer(B, 30).items(), "taken: B holds them now");
    assertEquals(List.of(), held.offer(A, 30).items(), "nor to A: it is A's batch");
    assertEquals(toB, held.offer(REDIS, 30).items(), "B gone: the same item (A's batch 3) goes to Redis");
    held.applied(REDIS, null, 1, held.offer(REDIS, 50).items(), counts(1), 50);
    assertFalse(held.any(), "Redis's applied reply judged it");
    held.applied(A, new RelayTag("relay-a", 3, 2, true), 1, List.of(), counts(5), 60);
    held.applied(B, new RelayTag("relay-b", 8, 7, true), 1, held.offer(B, 60).items(), counts(0), 60);
    assertEquals(1, held.offer(REDIS, 70).items().size(), "B holds it");
    held.applied(A, new RelayTag("relay-a", 4, 3, true), 1, List.of(), counts(0), 80);
    assertFalse(held.any(), "A settled its batch 3: in Redis once, whatever B does with its copy");
  }

  @Test
  void aNewRelayAtAWayGetsWhatTheOldOneHeld() {
    held.applied(A, new RelayTag("relay-a", 3, 2, true), 1, List.of(), counts(5), 0);
    assertEquals(List.of(), held.offer(A, 10).items());
    held.applied(A, new RelayTag("relay-a2", 1, 0, true), 1, List.of(), counts(1), 10); // A restarted, a new id
    assertEquals(List.of(new HeldCounts("relay-a", 3, "c1", 5, 1, 0)), held.offer(A, 20).items());
  }

  @Test
  void keptAtMostSixteenAndAMinuteGivenUpCounted() {
    for (int i = 1; i <= RelayHeld.MAX + 2; i++) {
      held.applied(A, new RelayTag("relay-a", i, 0, true), 1, List.of(), counts(10), i);
    }
    assertEquals(20, held.lostRequests(), "the two oldest given up");
    assertEquals(RelayHeld.MAX, held.offer(B, 100).items().size());
    assertEquals(List.of(), held.offer(B, 3 + RelayHeld.KEPT_MILLIS + 100).items());
    assertEquals(10L * (RelayHeld.MAX + 2), held.lostRequests());
  }

  @Test
  void wireFormsRoundTripAndRefuseNonsenseByName() {
    HeldCounts h = new HeldCounts("relay-1f", 7, "c.9_x", 3, 2, 1);
    assertEquals("held=relay-1f,7,c.9_x,3,2,1", h.arg());
    assertEquals(h, HeldCounts.parse(h.arg()));
    RelayTag t = new RelayTag("relay-1f", 7, 6, true);
    assertEquals(t, RelayTag.parse(t.wire()));
    for (String bad : new String[] {"held=", "held=a,1,c,1,1", "held=a b,1,c,1,1,1", "held=a,0,c,1,1,1",
        "held=a,1,c,-1,1,1", "held=a,1,c,1,1,x", "x=a,1,c,1,1,1"}) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> HeldCounts.parse(bad), bad);
      assertTrue(e.getMessage().contains("held"), e.getMessage());
    }
    for (String bad : new String[] {"", "a,1,0", "a,1,0,2", "a,0,0,1", "a,1,-1,1", ":,1,0,1"}) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> RelayTag.parse(bad), bad);
      assertTrue(e.getMessage().contains("relay tag"), e.getMessage());
    }
    assertEquals("first=3,hold,through=9", new CallExtras(true, 9, List.of()).options("first=3"));
    assertEquals("through=2", CallExtras.through(2, List.of()).options(""));
    assertEquals("again,through=2", CallExtras.through(2, List.of()).options("again"));
  }

  @Test
  void aCallAdoptedForAnEarlierBatchIsThatBatchsNextPart() {
    held.applied(A, new RelayTag("relay-a", 1, 0, true), 3, List.of(), counts(3), 0);
    held.applied(A, new RelayTag("relay-a", 2, 0, true), 3, List.of(), counts(4), 10);
    held.adopt(new RelayHeld.Known("relay-a", 1, 3), 6, 0, 0, 20); // a call sent after batch 1's tag
    assertEquals(List.of(new HeldCounts("relay-a", 1, "c1", 3, 1, 0), new HeldCounts("relay-a", 1, "c1", 6, 0, 0, 2),
        new HeldCounts("relay-a", 2, "c1", 4, 1, 0)), held.offer(B, 30).items(),
        "numbered per batch, carried in batch and part order");
  }

  @Test
  void aTagBeyondWhatAnItemCanSayIsRefused() {
    assertThrows(IllegalArgumentException.class, () -> RelayTag.parse("relay-a,9007199254740993,0,1"));
    assertThrows(IllegalArgumentException.class, () -> RelayTag.parse("relay-a,1,9007199254740993,1"));
    assertEquals(HeldCounts.MAX_NUMBER, RelayTag.parse("relay-a,9007199254740992,0,1").batch());
  }
}
