package io.retrybudget.relay;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.redis.protocol.CountsInDoubt;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Clients' calls of unknown fate to one relay address behind which two relay processes answer (a
 * Service of two pods: each new connection reaches either), under random fault schedules, Jepsen-style:
 * a call applied and its reply lost, one never written (its timeout with the connection still up),
 * one lost with its connection, one run after its timeout but ahead of later calls, reconnects to
 * either process, processes restarted. The client is modelled as the SDK's {@code BudgetLink} does it
 * (counts in doubt carried by the next call, another call of unknown fate joining them under the
 * lower number); the relays are real {@link ReportLedger}s. At every step: no call's counts are
 * applied twice, across both processes (without the ledger's same-connection rule seed 1 applies one
 * twice), and more than half the calls that timed out unwritten are recovered (2,147 of 4,074).
 */
class ClientDoubtScheduleTest {
  private enum Fate { OK, REPLY_LOST, UNWRITTEN, LOST_WITH_CONNECTION, SLOW }

  /** The client's counts in doubt: the number it went with and every call whose counts it holds. */
  private record Doubt(long seq, List<Long> calls) {}

  @Test
  void noCallIsAppliedTwiceAcrossTwoProcessesBehindOneAddress() {
    long recovered = 0;
    long unwritten = 0;
    for (long seed = 0; seed < 300; seed++) {
      long[] r = run(new SplittableRandom(seed), seed);
      recovered += r[0];
      unwritten += r[1];
    }
    assertTrue(unwritten > 500, "calls timed out unwritten: " + unwritten);
    assertTrue(recovered * 2 > unwritten, "recovered " + recovered + " of " + unwritten + " calls timed out unwritten");
  }

  /** One schedule; returns calls recovered by a carrier and calls that timed out unwritten. */
  private static long[] run(SplittableRandom random, long seed) {
    ReportLedger[] processes = {new ReportLedger(), new ReportLedger()};
    Map<Long, Integer> applied = new HashMap<>();
    List<String> history = new ArrayList<>();
    ArrayDeque<Long> slow = new ArrayDeque<>(); // written on the connection, run before the next call on it
    int process = random.nextInt(2);
    long session = 1;
    long sessions = 1;
    long numbers = 0;
    Doubt doubt = null;
    long recovered = 0;
    List<Long> unwrittenCalls = new ArrayList<>();
    for (int step = 0; step < 200; step++) {
      int what = random.nextInt(20);
      if (what == 0) {
        process = random.nextInt(2); // a reconnect: either pod
        session = ++sessions;
        slow.clear(); // what was on the old connection and not run is gone with it
        history.add("reconnect to P" + process + " as session " + session);
        continue;
      }
      if (what == 1) {
        int p = random.nextInt(2);
        processes[p] = new ReportLedger(); // restarted: its ledger is new
        history.add("P" + p + " restarted");
        if (p == process) {
          process = random.nextInt(2);
          session = ++sessions;
          slow.clear();
          history.add("reconnect to P" + process + " as session " + session);
        }
        continue;
      }
      long n = ++numbers;
      Doubt carried = doubt;
      Fate fate = Fate.values()[random.nextInt(10) < 7 ? 0 : 1 + random.nextInt(4)];
      history.add("#" + n + (carried == null ? "" : " carrying #" + carried.calls()) + " P" + process + " s" + session
          + " " + fate);
      while (!slow.isEmpty()) { // ahead of it on the connection
        deliver(processes[process], slow.poll(), null, session, applied, history);
      }
      switch (fate) {
        case OK -> {
          deliver(processes[process], n, carried, session, applied, history);
          if (carried != null && doubt == carried) {
            doubt = null; // added, or dropped as applied already: done either way
          }
        }
        case SLOW -> slow.add(n);
        case REPLY_LOST -> deliver(processes[process], n, carried, session, applied, history);
        case UNWRITTEN -> unwrittenCalls.add(n);
        case LOST_WITH_CONNECTION -> {
          process = random.nextInt(2);
          session = ++sessions;
          slow.clear();
          history.add("  connection lost: reconnect to P" + process + " as session " + session);
        }
      }
      if (fate != Fate.OK) {
        // unknown fate: held in doubt, joined to what is in doubt already (one way) under the lower number
        if (doubt != null) {
          List<Long> calls = new ArrayList<>(doubt.calls());
          calls.add(n);
          doubt = new Doubt(Math.min(doubt.seq(), n), calls);
        } else {
          doubt = new Doubt(n, List.of(n));
        }
      }
      for (Map.Entry<Long, Integer> e : applied.entrySet()) {
        if (e.getValue() != 1) {
          throw new AssertionError("#" + e.getKey() + " applied twice, seed " + seed + ":\n" + String.join("\n", history));
        }
      }
    }
    for (long n : unwrittenCalls) {
      recovered += applied.containsKey(n) ? 1 : 0;
    }
    return new long[] {recovered, unwrittenCalls.size()};
  }

  private static void deliver(ReportLedger ledger, long n, Doubt carried, long session, Map<Long, Integer> applied,
      List<String> history) {
    CountsInDoubt counts = carried == null ? null : new CountsInDoubt(carried.seq(), 1, 0, 0);
    ReportLedger.Verdict v = ledger.report("client", n, counts, session, 0);
    if (v == ReportLedger.Verdict.STALE) {
      history.add("  #" + n + " stale");
      return;
    }
    applied.merge(n, 1, Integer::sum);
    if (v == ReportLedger.Verdict.NEW_AND_CARRIED) {
      for (long c : carried.calls()) {
        applied.merge(c, 1, Integer::sum);
      }
      history.add("  #" + n + " applied, carried " + carried.calls());
    } else {
      history.add("  #" + n + " applied");
    }
  }
}
