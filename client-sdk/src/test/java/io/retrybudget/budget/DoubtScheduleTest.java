package io.retrybudget.budget;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisException;
import io.retrybudget.budget.redis.protocol.BudgetCall;
import io.retrybudget.budget.redis.protocol.BudgetReply;
import io.retrybudget.budget.redis.protocol.ClientSequence;
import io.retrybudget.budget.redis.protocol.CountsInDoubt;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * A budget's calls of unknown fate under random fault schedules, Jepsen-style, on fake time: the real
 * {@link RedisRetryBudget} and {@link BudgetLink} against a model of three ways (two relays and Redis),
 * each de-duplicating by the client's last number and adding each carried call's counts by
 * budget.lua's rule ({@link CountsInDoubt#applies}). A call is applied and its reply lost, lost before it ran, applied
 * after its timeout but ahead of later calls (one connection, in order), delivered late out of order
 * (a copy from a connection already replaced), refused unsent, or refused with an error reply; the
 * route moves between ways and relays restart (their ledgers and connections gone). The history is
 * checked at every application: no call's first attempts are applied twice, and never more than were
 * made. With isolated faults on one way, every first attempt is applied exactly once; under chaos most
 * counts of calls that never ran are recovered (none were before). Under chaos one relay carrier in four
 * is answered as not surely judged ({@code NumberedCall.judged()}): the model keeps its counts in doubt,
 * and a budget that let go of them fails the check of the next carrier's counts.
 */
class DoubtScheduleTest {
  private static final BudgetConfig CONFIG = BudgetConfig.builder("doubt").ratio(0.1).minRetriesPerSecond(10).build();

  /** What happens to one call. */
  private enum Fate { OK, REPLY_LOST, UNRUN, SLOW, ORPHAN, REFUSED, ERROR_REPLY }

  @Test
  void isolatedFaultsLoseNothingAndApplyNothingTwice() {
    for (long seed = 0; seed < 150; seed++) {
      Run run = new Run(seed, false);
      run.go();
      assertEquals(run.made, run.appliedRequests, "every first attempt applied exactly once, seed " + seed + ":\n"
          + run.history());
      assertTrue(run.unrunInDoubt > 0 || seed % 10 != 0 || run.faults == 0, "faults were met");
    }
  }

  @Test
  void underChaosNothingIsAppliedTwiceAndMostCountsOfCallsThatNeverRanAreRecovered() {
    long unrun = 0;
    long recovered = 0;
    for (long seed = 0; seed < 150; seed++) {
      Run run = new Run(seed, true);
      run.go();
      assertTrue(run.appliedRequests <= run.made, "seed " + seed);
      unrun += run.unrunInDoubt;
      recovered += run.recovered;
    }
    assertTrue(unrun > 1_000, "calls that never ran were met: " + unrun);
    assertTrue(recovered * 2 > unrun, "recovered " + recovered + " of " + unrun + " first attempts in calls that never ran");
  }

  /** One schedule: a budget, the model of its ways, the history. */
  private static final class Run implements FleetRegistry.Port {
    final SplittableRandom random;
    final boolean chaos;
    final FakeEngine engine;
    final RedisRetryBudget budget;
    final Way[] ways = {new Way(true), new Way(true), new Way(false)};
    final Map<Long, Integer> applied = new HashMap<>(); // number -> times its first attempts were applied
    final Map<Long, Long> requestsOf = new HashMap<>(); // number -> first attempts it went with
    // the model of the budget's counts in doubt (BudgetLink's rule, followed step by step on this one
    // thread): the way, and the calls whose counts they hold; a carrier's counts are checked against it
    Doubt doubt;
    final List<String> history = new ArrayList<>();
    int current; // the way calls take now
    long numbers;
    long made;
    long appliedRequests;
    long unrunInDoubt; // first attempts of calls that never ran and whose client took them for unknown fate
    long recovered; // of those, applied by a carrier
    final java.util.Set<Long> unrunNumbers = new java.util.HashSet<>();
    int faults;
    int okSince; // calls answered in order since the last fault (none at first: a first call of unknown fate is lost, no entry judges it)
    boolean faulty = true;

    Run(long seed, boolean chaos) {
      this.random = new SplittableRandom(seed);
      this.chaos = chaos;
      this.engine = new FakeEngine(200, FallbackPolicy.LOCAL, random::nextDouble);
      engine.portInstead = this;
      this.budget = engine.budget(CONFIG);
    }

    void go() {
      for (int step = 0; step < 300; step++) {
        int n = random.nextInt(4);
        for (int i = 0; i < n; i++) {
          budget.recordFirstAttempt();
          made++;
        }
        if (chaos && random.nextInt(4) == 0) {
          budget.acquire(); // a permit ask: calls in flight together
        }
        if (chaos && random.nextInt(40) == 0) {
          current = random.nextInt(ways.length);
          history.add("route -> " + current);
        }
        if (chaos && random.nextInt(80) == 0) {
          int w = random.nextInt(2);
          ways[w].restart();
          history.add("relay " + w + " restarted");
        }
        engine.advanceMillis(random.nextInt(20, 200));
      }
      faulty = false;
      history.add("faults stop");
      engine.advanceMillis(CallsInDoubt.KEPT_MILLIS + 10_000); // everything in flight lands, the counts go
      for (Way w : ways) {
        w.drain();
      }
      assertEquals(false, budget.holdsDoubt(), "nothing left in doubt");
    }

    String history() {
      return String.join("\n", history.subList(Math.max(0, history.size() - 600), history.size()));
    }

    @Override
    public CompletableFuture<BudgetReply> budget(BudgetCall call, ClientSequence sequence) {
      return send(call, sequence, null).reply();
    }

    @Override
    public FleetRegistry.Sent send(BudgetCall call, ClientSequence sequence, CallsInDoubt offered) {
      int w = current;
      Way way = ways[w];
      long number = ++numbers;
      requestsOf.put(number, call.requests());
      List<CountsInDoubt> carried = offered != null && offered.way() == w ? offered.counts() : List.of();
      if (doubt != null) {
        List<Held> kept = doubt.calls.stream().filter(h -> engine.millis() - h.sentAt <= CallsInDoubt.KEPT_MILLIS).toList();
        doubt = kept.isEmpty() ? null : new Doubt(doubt.way, kept); // held too long: given up
      }
      Doubt modelled = carried.isEmpty() ? null : doubt;
      if (!carried.isEmpty()) {
        assertTrue(modelled != null && modelled.way == w, "carries counts the model holds none of:\n" + history());
        assertEquals(modelled.numbers(), carried.stream().map(CountsInDoubt::seq).toList(), "the calls carried");
        for (CountsInDoubt d : carried) {
          assertEquals(requestsOf.get(d.seq()), d.requests(), "carried counts are their call's:\n" + history());
        }
      } else {
        assertTrue(doubt == null || doubt.way != w, "counts in doubt on this way not carried:\n" + history());
      }
      Message m = new Message(number, w, engine.millis(), call, carried, modelled, new CompletableFuture<>());
      Fate fate = fate();
      history.add(engine.millis() + " #" + number + " way " + w + " " + call.requests() + "+" + call.need()
          + (carried.isEmpty() ? "" : " carrying #" + carried.stream().map(CountsInDoubt::seq).toList()) + " " + fate);
      way.flushSlow(); // calls ahead of it on the connection run first
      // a relay that had no entry of this client on the connection did not judge what a call carried
      // (NumberedCall.judged(), one carrier in four under chaos; a hash, so the schedules stay as they were)
      boolean judged = !chaos || !way.relay || (number * 0x9E3779B97F4A7C15L >>> 62) != 0;
      switch (fate) {
        case OK -> {
          BudgetReply r = way.run(m);
          engine.time.schedule(() -> {
            if (r.applied() && m.offered != null && judged) {
              release(m); // each added, or dropped as run already: done either way
            }
            m.reply.complete(r);
          }, (1 + random.nextInt(5)) * FakeEngine.MS);
        }
        case REPLY_LOST -> {
          way.run(m);
          failInDoubt(m, new RedisException("Connection closed"), 1 + random.nextInt(chaos ? 200 : 3));
        }
        case UNRUN -> {
          unrunInDoubt += call.requests();
          unrunNumbers.add(number);
          failInDoubt(m, new RedisException("Connection closed"), 1 + random.nextInt(chaos ? 200 : 3));
        }
        case SLOW -> {
          way.slow.add(m); // runs before the next call on this way, or a little later
          failInDoubt(m, new RedisCommandTimeoutException("Command timed out"), 1 + random.nextInt(chaos ? 100 : 3));
          engine.time.schedule(way::flushSlow, (5 + random.nextInt(300)) * FakeEngine.MS);
        }
        case ORPHAN -> {
          way.orphans.add(m); // on a connection already replaced: may arrive after later calls, or never
          failInDoubt(m, new RedisException("Connection closed"), 1 + random.nextInt(100));
          engine.time.schedule(() -> way.deliverOrphan(m), (50 + random.nextInt(3_000)) * FakeEngine.MS);
        }
        case REFUSED -> fail(m, new RedisException("Currently not connected"), 0);
        case ERROR_REPLY -> engine.time.schedule(() -> {
          if (m.offered != null) {
            release(m); // an error reply to a carrier gives up what it carried
          }
          m.reply.completeExceptionally(new RedisCommandExecutionException("BUSY Redis is busy running a script"));
        }, FakeEngine.MS);
      }
      return new FleetRegistry.Sent(m.reply, w, () -> number, !carried.isEmpty(), () -> judged);
    }

    private Fate fate() {
      if (!faulty) {
        return Fate.OK;
      }
      int r = random.nextInt(100);
      Fate f;
      if (chaos) {
        f = r < 55 ? Fate.OK : r < 65 ? Fate.REPLY_LOST : r < 77 ? Fate.UNRUN : r < 85 ? Fate.SLOW : r < 91 ? Fate.ORPHAN
            : r < 97 ? Fate.REFUSED : Fate.ERROR_REPLY;
      } else {
        // isolated: a fault now and then, never in the two calls after one (a carrier's own fate is
        // known), answered within 3 ms, the route and relays still
        f = okSince < 2 || r < 85 ? Fate.OK : r < 90 ? Fate.REPLY_LOST : r < 96 ? Fate.UNRUN : r < 98 ? Fate.SLOW
            : Fate.REFUSED;
      }
      okSince = f == Fate.OK ? okSince + 1 : 0;
      faults += f == Fate.OK ? 0 : 1;
      return f;
    }

    private void fail(Message m, Throwable error, long afterMillis) {
      engine.time.schedule(() -> m.reply.completeExceptionally(error), afterMillis * FakeEngine.MS);
    }

    private void failInDoubt(Message m, Throwable error, long afterMillis) {
      engine.time.schedule(() -> {
        // of unknown fate: added to the calls in doubt on its way (another way's given up), the oldest
        // sent given up beyond the limit
        List<Held> calls = new ArrayList<>(doubt != null && doubt.way == m.way ? doubt.calls : List.of());
        calls.add(new Held(m.number, m.sentAt));
        calls.sort(java.util.Comparator.comparingLong(Held::number));
        while (calls.size() > io.retrybudget.budget.redis.protocol.BudgetScripts.MAX_CARRIED) {
          calls.remove(calls.stream().min(java.util.Comparator.comparingLong(Held::sentAt)).orElseThrow());
        }
        doubt = new Doubt(m.way, calls);
        m.reply.completeExceptionally(error);
      }, afterMillis * FakeEngine.MS);
    }

    /** The calls {@code m} carried are let go of. */
    private void release(Message m) {
      if (doubt != null) {
        List<Held> left = doubt.calls.stream().filter(h -> !m.offered.numbers().contains(h.number)).toList();
        doubt = left.isEmpty() ? null : new Doubt(doubt.way, left);
      }
    }

    /** Number {@code n}'s first attempts were applied: never twice, never more than made. */
    private void applied(long n, long requests, String how) {
      int times = applied.merge(n, 1, Integer::sum);
      history.add("  applied #" + n + " (" + requests + ") " + how);
      assertEquals(1, times, "#" + n + " applied twice:\n" + history());
      appliedRequests += requests;
      assertTrue(appliedRequests <= made, "applied " + appliedRequests + " of " + made + " made:\n" + history());
    }

    /** A call on its way (carrying the counts of {@code offered}, as the model holds them), and the future its client waits on. */
    private record Message(long number, int way, long sentAt, BudgetCall call, List<CountsInDoubt> carried, Doubt offered,
        CompletableFuture<BudgetReply> reply) {}

    /** Counts in doubt as the model holds them: their way, and each call's number and send time, in number order. */
    private record Doubt(int way, List<Held> calls) {
      List<Long> numbers() {
        return calls.stream().map(Held::number).toList();
      }
    }

    private record Held(long number, long sentAt) {}

    /** A relay or Redis: the client's last number (its entry), and calls on its connection not run yet. */
    private final class Way {
      final boolean relay;
      Long last;
      final ArrayDeque<Message> slow = new ArrayDeque<>();
      final List<Message> orphans = new ArrayList<>();

      Way(boolean relay) {
        this.relay = relay;
      }

      BudgetReply run(Message m) {
        if (last != null && m.number <= last) {
          history.add("  #" + m.number + " stale");
          return reply(BudgetReply.STALE);
        }
        Long before = last;
        last = m.number;
        applied(m.number, m.call.requests(), "itself");
        for (CountsInDoubt d : m.carried) {
          if (d.applies(before, m.number)) { // budget.lua's rule, call by call
            applied(d.seq(), d.requests(), "carried by #" + m.number);
            recovered += unrunNumbers.contains(d.seq()) ? d.requests() : 0;
          }
        }
        return reply(m.call.need() > 0 ? BudgetReply.GRANTED : BudgetReply.COUNTED);
      }

      void flushSlow() {
        while (!slow.isEmpty()) {
          run(slow.poll());
        }
      }

      void deliverOrphan(Message m) {
        if (orphans.remove(m)) {
          history.add(engine.millis() + " late copy of #" + m.number);
          run(m);
        }
      }

      void drain() {
        flushSlow();
        orphans.clear(); // never arrive: lost
      }

      void restart() {
        last = null; // a new relay: its ledger holds no one
        slow.clear(); // its connections reset with them
        orphans.clear();
      }

      private BudgetReply reply(String status) {
        long g = BudgetReply.GRANTED.equals(status) ? 1 : 0;
        return new BudgetReply(status, g, appliedRequests, 0, 0, appliedRequests / 10 + 100, 1, 100_000, 10, 10, "enforce",
            5, 0, 10_000_000, 2_000);
      }
    }
  }
}
