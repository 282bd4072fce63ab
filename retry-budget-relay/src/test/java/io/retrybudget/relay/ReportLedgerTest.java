package io.retrybudget.relay;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.retrybudget.budget.internal.FleetCount;
import io.retrybudget.budget.redis.protocol.CountsInDoubt;
import io.retrybudget.relay.ReportLedger.Verdict;
import java.util.List;
import org.junit.jupiter.api.Test;

class ReportLedgerTest {
  private static final long E = FleetCount.EPOCH_MILLIS;

  @Test
  void aReportIsAppliedOnceAndAnOvertakenOneNever() {
    ReportLedger l = new ReportLedger();
    assertEquals(Verdict.NEW, l.report("a", 1, 0));
    assertEquals(Verdict.STALE, l.report("a", 1, 1), "the same report again");
    assertEquals(Verdict.NEW, l.report("a", 3, 2));
    assertEquals(Verdict.STALE, l.report("a", 2, 3), "overtaken by 3");
    assertEquals(Verdict.NEW, l.report("b", 1, 3), "numbers are per client");
    assertThrows(IllegalArgumentException.class, () -> l.report("a", 0, 4));
    assertThrows(IllegalArgumentException.class, () -> l.report("", 5, 4));
  }

  private static Verdict carrying(ReportLedger l, long seq, long session, long... carried) {
    List<CountsInDoubt> c = new java.util.ArrayList<>();
    for (long n : carried) {
      c.add(new CountsInDoubt(n, 1, 0, 0));
    }
    return l.report("a", seq, c, session, 0).verdict();
  }

  @Test
  void carriedCountsAreAddedOnlyForACallThatNeverArrivedOnThisConnection() {
    ReportLedger l = new ReportLedger();
    assertEquals(Verdict.NEW, carrying(l, 5, 1, 4), "no entry: dropped");
    assertEquals(Verdict.NEW_AND_CARRIED, carrying(l, 8, 1, 6), "6 never arrived");
    assertEquals(Verdict.NEW, carrying(l, 9, 1, 8), "8 was applied");
    assertEquals(Verdict.NEW_AND_CARRIED, carrying(l, 10, 1, 7),
        "7 never arrived though later ones did (it timed out unwritten): on one connection it never will");
    assertEquals(Verdict.NEW, carrying(l, 11, 1, 7, 6), "each added once: carried again, dropped");
    assertEquals(Verdict.STALE, carrying(l, 11, 1, 3), "a stale carrier applies nothing");
    // two relay processes behind one address: report 12 went to the other; the client came back here
    // on a new connection, where nothing tells whether 12 ran
    assertEquals(Verdict.NEW, carrying(l, 13, 2, 12), "another connection than the last report's: dropped");
    assertEquals(Verdict.NEW_AND_CARRIED, carrying(l, 15, 2, 14), "numbered after this connection's first: added");
    assertEquals(Verdict.NEW, carrying(l, 16, 2, 12), "numbered before this connection's first report: dropped");
    assertEquals(Verdict.NEW, carrying(l, 100, 2));
    assertEquals(Verdict.NEW, carrying(l, 101, 2, 30), "more than 64 numbers back: not recorded, dropped");
    assertEquals(Verdict.NEW, carrying(l, 102, 2));
    ReportLedger.Judged both = l.report("a", 105, List.of(new CountsInDoubt(102, 1, 0, 0), new CountsInDoubt(103, 2, 0, 0),
        new CountsInDoubt(104, 4, 1, 1)), 2, 0);
    assertEquals(new ReportLedger.Judged(Verdict.NEW_AND_CARRIED, 6, 1, 1), both, "103 and 104, not 102");
  }

  private static long told(ReportLedger l, long seq, long session, long first, long... carried) {
    List<CountsInDoubt> c = new java.util.ArrayList<>();
    for (int i = 0; i < carried.length; i++) {
      c.add(new CountsInDoubt(carried[i], 1L << i, 0, 0));
    }
    ReportLedger.Judged j = l.report("a", seq, c, new ReportLedger.Arrival(session, first), 0);
    return j.verdict() == Verdict.STALE ? -1 : j.requests();
  }

  @Test
  void aClientsFloorLetsItsFirstMomentsOnAConnectionBeAdded() {
    ReportLedger l = new ReportLedger();
    // calls 1 and 2 timed out unwritten on the client's first connection; 3 arrived first
    assertEquals(0, told(l, 3, 1, 1, 1, 2), "no entry yet: dropped");
    assertEquals(0b11, told(l, 4, 1, 1, 1, 2), "a later report on the same connection: 1 and 2 added");
    assertEquals(0, told(l, 5, 1, 1, 1, 2), "once");
    assertEquals(0, told(l, 6, 1, 0, 1, 2), "and not without a floor");
    // 7 unwritten on connection 1; 8 went on connection 2 with the old floor (sent as it opened)
    assertEquals(0, told(l, 8, 2, 1, 7), "the first report on a connection adds nothing, whatever its floor");
    assertEquals(0, told(l, 9, 2, 9, 7), "below the client's floor on this connection: may have gone on connection 1");
    assertEquals(0, told(l, 10, 2, 9, 9), "nor 9 itself: it was applied");
    assertEquals(0, told(l, 11, 2, 0, 7), "without a floor, the first report seen here (8) is the floor");
    assertEquals(-1, told(l, 10, 2, 1, 7), "a stale report adds nothing");
    ReportLedger none = new ReportLedger();
    told(none, 3, 1, 0);
    assertEquals(0, told(none, 4, 1, 0, 1, 2), "an SDK that tells no floor: as before");
  }

  @Test
  void anArrivalNamesAWrongFloor() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new ReportLedger.Arrival(1, -1));
    assertEquals("first must be positive, or 0 when not told, was -1", e.getMessage());
    assertEquals(new ReportLedger.Arrival(4, 0), ReportLedger.Arrival.on(4));
  }

  @Test
  void anEntryMadeSoonAfterAnEvictionAddsNoCarriedCountsForTwoMinutes() {
    ReportLedger l = new ReportLedger(1);
    l.report("a", 21, List.of(), 1, 0); // applied; its reply lost: the client holds 21 in doubt
    l.report("b", 1, List.of(), 7, 10); // evicts a
    l.report("a", 20, List.of(), 1, 20); // a late copy of an older call, overtaken on a's connection
    assertEquals(Verdict.NEW, l.report("a", 22, List.of(new CountsInDoubt(21, 1, 0, 0)), 1, 30).verdict(),
        "made just after an eviction: nothing tells that 21 ran here, so not added");
    ReportLedger later = new ReportLedger(1);
    later.report("b", 1, List.of(), 7, 0);
    later.report("c", 1, List.of(), 1, 1); // evicts b
    later.report("d", 1, List.of(), 2, 1 + ReportLedger.DISTRUST_AFTER_EVICTION_MILLIS + 1);
    assertEquals(Verdict.NEW_AND_CARRIED, later.report("d", 3, List.of(new CountsInDoubt(2, 1, 0, 0)), 2,
        2 + ReportLedger.DISTRUST_AFTER_EVICTION_MILLIS + 1).verdict(), "two minutes on: trusted again");
  }

  @Test
  void theRecordReachesSixtyThreeNumbersBack() {
    ReportLedger l = new ReportLedger();
    l.report("a", 10, List.of(), 1, 0);
    l.report("a", 74, List.of(), 1, 0); // 64 on: 10 leaves the record
    assertEquals(Verdict.NEW, carrying(l, 75, 1, 10), "64 back: not in the record, dropped");
    assertEquals(Verdict.NEW_AND_CARRIED, carrying(l, 76, 1, 12), "62 back from 74, never applied: added");
  }

  @Test
  void clientsAreCountedOncePerEpochAndTheLastEpochHolds() {
    ReportLedger l = new ReportLedger();
    for (int i = 0; i < 100; i++) {
      l.report("c" + i, 1, 10);
      l.report("c" + i, 2, 20);
    }
    assertEquals(100, l.clients(30));
    // the next epoch: none counted yet, the last epoch's 100 hold
    assertEquals(100, l.clients(E + 1));
    l.report("c0", 3, E + 1);
    assertEquals(100, l.clients(E + 2));
    // two epochs on, only the client that called in the one before is left
    assertEquals(1, l.clients(2 * E + 1));
  }

  /** A fleet of 10 starting as an epoch ends (4 report before, 6 after) is 10, not its larger part, 6. */
  @Test
  void aFleetThatStartsAsAnEpochEndsIsCountedWhole() {
    ReportLedger l = new ReportLedger();
    for (int i = 0; i < 4; i++) {
      l.report("c" + i, 1, E - 10);
    }
    for (int i = 4; i < 10; i++) {
      l.report("c" + i, 1, E + 10);
    }
    assertEquals(10, l.clients(E + 20));
    for (int i = 0; i < 4; i++) {
      l.report("c" + i, 2, E + 30); // called again in this epoch: counted once
    }
    assertEquals(10, l.clients(E + 40));
    assertEquals(10, l.clients(2 * E + 1), "the next epoch: this one's 10");
  }

  @Test
  void quietClientsAreSweptOncePerEpochOffThePath() {
    ReportLedger l = new ReportLedger();
    l.report("old", 1, 0);
    l.report("live", 1, 0);
    assertEquals(0, l.sweep(1));
    l.report("live", 2, 2 * E);
    l.report("live", 3, 3 * E);
    assertEquals(1, l.sweep(3 * E));
    assertEquals(0, l.sweep(3 * E + 5), "once per epoch");
    assertEquals(1, l.entries());
    // a client back after being swept starts again: its numbers only grow, so nothing is applied twice
    assertEquals(Verdict.NEW, l.report("old", 2, 3 * E + 6));
  }

  @Test
  void aClockThatWentBackCountsAClientAgainRatherThanDroppingIt() {
    ReportLedger l = new ReportLedger();
    l.report("a", 1, 2 * E);
    assertEquals(Verdict.NEW, l.report("a", 2, E));
    assertEquals(1, l.clients(E));
  }

  @Test
  void inventedIdsCannotGrowTheRecordPastItsBoundAndALiveClientKeepsItsNumbers() {
    ReportLedger l = new ReportLedger(1_000);
    long seq = 0;
    // within one epoch (the quiet-epoch sweep frees nothing): 100,000 invented ids, one live client
    // reporting after every 500 of them
    for (int i = 0; i < 100_000; i++) {
      if (i % 500 == 0) {
        assertEquals(Verdict.NEW, l.report("live", ++seq, 10));
      }
      assertEquals(Verdict.NEW, l.report("invented-" + i, 1, 10));
    }
    assertEquals(1_000, l.entries(), "the record holds its bound");
    assertEquals(100_001 - 1_000, l.evicted());
    assertEquals(0, l.sweep(11), "nothing is quiet yet: only the bound limits the record");
    assertEquals(Verdict.STALE, l.report("live", seq, 12), "the live client's last report, again: still known");
    assertEquals(1_000, l.clients(12), "the count of clients is capped at the bound");
    // an evicted id reports again: new to the ledger, its number only grew
    assertEquals(Verdict.NEW, l.report("invented-0", 2, 13));
    assertEquals(1_000, l.entries());
    assertThrows(IllegalArgumentException.class, () -> new ReportLedger(0));
  }
}
