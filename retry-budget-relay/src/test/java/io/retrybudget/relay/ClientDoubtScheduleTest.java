package io.retrybudget.relay;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.redis.protocol.BudgetScripts;
import io.retrybudget.budget.redis.protocol.CountsInDoubt;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * Clients' calls of unknown fate to one relay address behind which two relay processes answer (a
 * Service of two pods: each new connection reaches either), under random fault schedules, Jepsen-style:
 * a call applied and its reply lost, one never written (its timeout with the connection still up), one
 * never written whose failure its client learns only after sending the next (a later call ran first),
 * one lost with its connection, one run after its timeout but ahead of later calls, reconnects to
 * either process, processes restarted. The client is modelled as the SDK's {@code HeldDoubts} does it
 * (its calls of unknown fate, at most {@link BudgetScripts#MAX_CARRIED}, carried by every next call
 * until one is answered); the relays are real {@link ReportLedger}s. At every step: no call's counts are
 * applied twice, across both processes (without the ledger's same-connection rule seed 2 applies one
 * twice), and more than half the calls that were never written are recovered (4,254 of 6,519; with budget.lua's coarser rule, a last number below the call's, 2,390, and the test fails).
 */
class ClientDoubtScheduleTest {
  private enum Fate { OK, REPLY_LOST, UNWRITTEN, UNWRITTEN_NOTICED_LATE, LOST_WITH_CONNECTION, SLOW }

  @Test
  void noCallIsAppliedTwiceAcrossTwoProcessesBehindOneAddress() {
    long recovered = 0;
    long unwritten = 0;
    for (long seed = 0; seed < 300; seed++) {
      long[] r = new Run(new SplittableRandom(seed), seed).go();
      recovered += r[0];
      unwritten += r[1];
    }
    assertTrue(unwritten > 500, "calls never written: " + unwritten);
    assertTrue(recovered * 2 > unwritten, "recovered " + recovered + " of " + unwritten + " calls never written");
  }

  /** One schedule: the client's state, the two processes, the history. */
  private static final class Run {
    final SplittableRandom random;
    final long seed;
    final ReportLedger[] processes = {new ReportLedger(), new ReportLedger()};
    final Map<Long, Integer> applied = new HashMap<>();
    final List<String> history = new ArrayList<>();
    final ArrayDeque<Long> slow = new ArrayDeque<>(); // written on the connection, run before the next call on it
    final TreeSet<Long> doubt = new TreeSet<>(); // the client's calls of unknown fate
    final List<Long> unwrittenCalls = new ArrayList<>();
    int process;
    long session = 1;
    long sessions = 1;
    long numbers;

    Run(SplittableRandom random, long seed) {
      this.random = random;
      this.seed = seed;
      this.process = random.nextInt(2);
    }

    long[] go() {
      Long noticeLate = null; // a call never written whose failure the client learns after its next call
      for (int step = 0; step < 200; step++) {
        int what = random.nextInt(20);
        if (what == 0) {
          reconnect("reconnect");
          continue;
        }
        if (what == 1) {
          int p = random.nextInt(2);
          processes[p] = new ReportLedger(); // restarted: its ledger is new
          history.add("P" + p + " restarted");
          if (p == process) {
            reconnect("its connections reset");
          }
          continue;
        }
        long n = ++numbers;
        List<Long> carried = List.copyOf(doubt);
        Fate fate = Fate.values()[random.nextInt(10) < 7 ? 0 : 1 + random.nextInt(5)];
        history.add("#" + n + (carried.isEmpty() ? "" : " carrying #" + carried) + " P" + process + " s" + session + " "
            + fate);
        while (!slow.isEmpty()) { // ahead of it on the connection
          deliver(slow.poll(), List.of());
        }
        switch (fate) {
          case OK -> {
            if (deliver(n, carried)) {
              doubt.removeAll(carried); // answered: each added, or dropped as run already
            }
          }
          case SLOW -> slow.add(n);
          case REPLY_LOST -> deliver(n, carried);
          case UNWRITTEN, UNWRITTEN_NOTICED_LATE -> unwrittenCalls.add(n);
          case LOST_WITH_CONNECTION -> reconnect("connection lost");
        }
        if (noticeLate != null) {
          unknown(noticeLate);
          noticeLate = null;
        }
        if (fate == Fate.UNWRITTEN_NOTICED_LATE) {
          noticeLate = n;
        } else if (fate != Fate.OK) {
          unknown(n);
        }
      }
      long recovered = unwrittenCalls.stream().filter(applied::containsKey).count();
      return new long[] {recovered, unwrittenCalls.size()};
    }

    /** Call {@code n} is of unknown fate to its client: held with the others, the oldest given up beyond the limit. */
    private void unknown(long n) {
      doubt.add(n);
      while (doubt.size() > BudgetScripts.MAX_CARRIED) {
        doubt.pollFirst();
      }
    }

    private void reconnect(String why) {
      process = random.nextInt(2); // either pod
      session = ++sessions;
      slow.clear(); // what was on the old connection and not run is gone with it
      history.add("  " + why + ": reconnect to P" + process + " as session " + session);
    }

    /**
     * Call {@code n} arrives at the current process carrying {@code carried}; true when it was applied.
     * Each carried call goes with 2^i first attempts (i its place), so the sum added tells which were.
     */
    private boolean deliver(long n, List<Long> carried) {
      List<CountsInDoubt> counts = new ArrayList<>();
      for (int i = 0; i < carried.size(); i++) {
        counts.add(new CountsInDoubt(carried.get(i), 1L << i, 0, 0));
      }
      ReportLedger.Judged j = processes[process].report("client", n, counts, session, 0);
      if (j.verdict() == ReportLedger.Verdict.STALE) {
        history.add("  #" + n + " stale");
        return false;
      }
      apply(n, "itself");
      for (int i = 0; i < carried.size(); i++) {
        if ((j.requests() >>> i & 1) != 0) {
          apply(carried.get(i), "carried by #" + n);
        }
      }
      return true;
    }

    private void apply(long n, String how) {
      history.add("  #" + n + " applied " + how);
      if (applied.merge(n, 1, Integer::sum) != 1) {
        throw new AssertionError("#" + n + " applied twice, seed " + seed + ":\n" + String.join("\n", history));
      }
    }
  }
}
