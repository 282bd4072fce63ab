package io.retrybudget.budget.redis.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * budget.lua's counts in doubt (ARGV[14..], groups of 4: {@link CountsInDoubt}) against a real Redis: the counts of
 * a call of unknown fate, carried by a later call, are added only if that call never ran, and a late copy
 * of it is then stale; without the client's entry they are dropped. Then a random schedule of deliveries
 * (in order, late, never), carriers, entry clean-ups and bad arguments, checked after every step
 * against the Java rule ({@link CountsInDoubt#applies}) and against the invariant: no call's counts are
 * applied twice.
 */
class CarriedCountsTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();

  private static final BudgetConfig SEED = BudgetConfig.builder("doubt").windowSeconds(3600).build();

  @Test
  void theCountsOfACallThatNeverRanAreAddedOnce() throws Exception {
    redis.flushAll();
    try (Fixture f = new Fixture()) {
      f.call(new BudgetCall("doubt", 1, 0, 0, 0, SEED), List.of());
      long lost = f.skipNumber(); // a number handed out whose call never reached Redis
      BudgetReply carrier = f.call(new BudgetCall("doubt", 2, 0, 0, 0, SEED), List.of(new CountsInDoubt(lost, 5, 1, 0)));
      assertEquals(BudgetReply.COUNTED, carrier.status());
      assertEquals(8, carrier.requests(), "1 + 2 + the 5 carried");
      assertEquals(1, carrier.denied(), "its refusal too");
      BudgetReply second = f.call(new BudgetCall("doubt", 0, 0, 0, 0, SEED), List.of(new CountsInDoubt(lost, 5, 1, 0)));
      assertEquals(8, second.requests(), "carried twice, added once");
      assertEquals(BudgetReply.STALE, f.raw(lost, 5, null).get(0), "and the call itself, arriving late, is stale");
      assertEquals(8, f.requests());
    }
  }

  @Test
  void eachCarriedCallIsJudgedOnItsOwn() throws Exception {
    redis.flushAll();
    try (Fixture f = new Fixture()) {
      f.call(new BudgetCall("doubt", 1, 0, 0, 0, SEED), List.of());
      long ran = f.client.next(); // ran, its reply lost
      assertEquals(BudgetReply.COUNTED, f.raw(ran, 10, null).get(0));
      long lost = f.skipNumber(); // never arrived
      BudgetReply carrier = f.call(new BudgetCall("doubt", 2, 0, 0, 0, SEED),
          List.of(new CountsInDoubt(ran, 10, 0, 0), new CountsInDoubt(lost, 100, 0, 0)));
      assertEquals(113, carrier.requests(), "1 + 10 once + the 100 of the call that never ran + 2");
      BudgetReply again = f.call(new BudgetCall("doubt", 0, 0, 0, 0, SEED),
          List.of(new CountsInDoubt(ran, 10, 0, 0), new CountsInDoubt(lost, 100, 0, 0)));
      assertEquals(113, again.requests(), "carried again (the carrier's fate unknown to its client): never twice");
    }
  }

  @Test
  void aCarrierAnsweredNoScriptGoesAgainWithWhatItCarries() throws Exception {
    redis.flushAll();
    try (Fixture f = new Fixture()) {
      f.call(new BudgetCall("doubt", 1, 0, 0, 0, SEED), List.of());
      long lost = f.skipNumber();
      redis.flushScripts(); // the carrier's EVALSHA is answered NOSCRIPT, never run, and sent again with the text
      BudgetReply carrier = f.call(new BudgetCall("doubt", 2, 0, 0, 0, SEED), List.of(new CountsInDoubt(lost, 5, 0, 0)));
      assertEquals(8, carrier.requests(), "1 + 2 + the 5 carried, once");
      assertEquals(lost + 2, f.client.last(), "the refused attempt took a number, the re-send the next");
    }
  }

  @Test
  void theCountsOfACallThatRanAreNotAddedAgain() throws Exception {
    redis.flushAll();
    try (Fixture f = new Fixture()) {
      f.call(new BudgetCall("doubt", 1, 0, 0, 0, SEED), List.of());
      BudgetCall call = new BudgetCall("doubt", 5, 0, 0, 0, SEED);
      NumberedCall first;
      BudgetReply carrier;
      redis.server().pause();
      try {
        first = f.scripts.numbered(call, f.keys, f.client);
        first.reply().orTimeout(200, TimeUnit.MILLISECONDS);
        assertThrows(ExecutionException.class, () -> first.reply().get(5, TimeUnit.SECONDS));
        // the carrier queues behind it on the one connection: it runs after the call it carries
        NumberedCall next = f.scripts.numbered(new BudgetCall("doubt", 2, 0, 0, 0, SEED), f.keys, f.client,
            List.of(CountsInDoubt.of(first.number(), call)));
        redis.server().resume();
        carrier = next.reply().get(5, TimeUnit.SECONDS);
      } finally {
        redis.server().resume();
      }
      assertEquals(BudgetReply.COUNTED, carrier.status());
      assertEquals(8, carrier.requests(), "1 + the 5 that ran + 2: the 5 once");
    }
  }

  @Test
  void withoutTheClientsEntryTheCarriedCountsAreDropped() throws Exception {
    redis.flushAll();
    try (Fixture f = new Fixture()) {
      f.call(new BudgetCall("doubt", 1, 0, 0, 0, SEED), List.of());
      long lost = f.skipNumber();
      // the entry cleaned up (a client silent for two fleet epochs, an eviction, a relay restarted)
      redis.server().call("HDEL", f.keys.clients(), f.client.clientId());
      BudgetReply carrier = f.call(new BudgetCall("doubt", 2, 0, 0, 0, SEED), List.of(new CountsInDoubt(lost, 5, 0, 0)));
      assertEquals(BudgetReply.COUNTED, carrier.status());
      assertEquals(3, carrier.requests(), "the carrier's own only: with no entry nobody knows whether the 5 ran");
    }
  }

  @Test
  void nonsenseInTheCarriedArgumentsIsRefusedBeforeAnyWrite() throws Exception {
    redis.flushAll();
    try (Fixture f = new Fixture()) {
      f.call(new BudgetCall("doubt", 1, 0, 0, 0, SEED), List.of());
      f.client.next();
      f.client.next();
      long seq = f.client.next();
      assertEquals("ERR invalid doubt_seq", f.rawError(seq, new String[] {Long.toString(seq), "1", "0", "0"}));
      assertEquals("ERR invalid doubt_seq", f.rawError(seq, new String[] {"0", "1", "0", "0"}));
      assertEquals("ERR invalid doubt_seq", f.rawError(seq, new String[] {"x", "1", "0", "0"}));
      assertEquals("ERR invalid doubt counts", f.rawError(seq, new String[] {"1", "-1", "0", "0"}));
      assertEquals("ERR invalid doubt counts", f.rawError(seq, new String[] {"1", "1", "", "0"}));
      assertEquals("ERR invalid doubt_seq", f.rawError(seq, new String[] {"2", "1", "0", "0", "1", "1", "0", "0"}),
          "groups in increasing number order");
      assertEquals("ERR invalid doubt_seq", f.rawError(seq, new String[] {"1", "1", "0"}), "groups of 4");
      String[] nine = new String[36];
      for (int g = 0; g < 9; g++) {
        System.arraycopy(new String[] {Integer.toString(g + 1), "0", "0", "0"}, 0, nine, 4 * g, 4);
      }
      assertEquals("ERR invalid doubt_seq", f.rawError(seq + 20, nine), "at most 8 groups");
      assertEquals(1, f.requests(), "nothing written");
      assertEquals(BudgetReply.COUNTED, f.raw(seq, 1, new String[] {"1", "2", "0", "0"}).get(0), "the same call, well formed");
      List<String> carried = new ArrayList<>(List.of("", "")); // ARGV[13] and an empty ARGV[14]: carries nothing
      assertEquals(BudgetReply.COUNTED, f.rawArgs(f.client.next(), 1, carried).get(0));
    }
  }

  @Test
  void noNumberIsAppliedTwiceUnderRandomDeliveriesAndCarriers() throws Exception {
    int added = 0;
    int dropped = 0;
    for (long seed = 0; seed < 60; seed++) {
      redis.flushAll();
      try (Fixture f = new Fixture()) {
        int[] outcome = f.randomSchedule(new SplittableRandom(seed));
        added += outcome[0];
        dropped += outcome[1];
      }
    }
    assertTrue(added > 100 && dropped > 100, "both sides of the rule were met: added " + added + ", dropped " + dropped);
  }

  private static final class Fixture implements AutoCloseable {
    /** Call {@code n}'s first attempts: a power of two, so a sum tells which calls were added (under the cap of 10^6). */
    static long each(long n) {
      return 1L << (n % 19);
    }
    final RedisBudgetStore store = RedisBudgetStore.connect(redis.connectionOptions().commandTimeout(Duration.ofSeconds(2))
        .build());
    final BudgetScripts scripts = new BudgetScripts(store);
    final BudgetKeys keys = scripts.keys("doubt");
    final ClientSequence client = new ClientSequence("client-1");

    BudgetReply call(BudgetCall call, List<CountsInDoubt> carried) throws Exception {
      return scripts.numbered(call, keys, client, carried).reply().get(5, TimeUnit.SECONDS);
    }

    long skipNumber() {
      return client.next();
    }

    long requests() {
      return scripts.status("doubt", SEED).join().requests();
    }

    List<?> raw(long seq, long requests, String[] carried) {
      List<String> extra = new ArrayList<>();
      if (carried != null) {
        extra.add("");
        extra.addAll(List.of(carried));
      }
      return rawArgs(seq, requests, extra);
    }

    List<?> rawArgs(long seq, long requests, List<String> extra) {
      List<String> args = new ArrayList<>(List.of("EVAL", LuaScript.BUDGET.body(), "5", keys.config(), keys.window(),
          keys.clients(), keys.index(), keys.pace(), client.clientId(), Long.toString(seq), Long.toString(requests), "0",
          "0", "0", Long.toString(SEED.ratioPpm()), Integer.toString(SEED.windowSeconds()),
          Integer.toString(SEED.minRetriesPerSecond()), SEED.mode().wireName(), Integer.toString(SEED.maxCallsPerSecond()),
          ""));
      args.addAll(extra);
      return (List<?>) redis.server().call(args.toArray(String[]::new));
    }

    /** The error budget.lua answers, up to its first blank after the reason (Redis may append where it was raised). */
    String rawError(long seq, String[] carried) {
      RuntimeException e = assertThrows(RuntimeException.class, () -> raw(seq, 1, carried));
      String m = String.valueOf(e.getCause() == null ? e.getMessage() : e.getCause().getMessage());
      java.util.regex.Matcher reason = java.util.regex.Pattern.compile("ERR invalid doubt[_ ](seq|counts)").matcher(m);
      return reason.find() ? reason.group() : m;
    }

    /**
     * One random schedule of one client's calls, each of {@link #each} first attempts: delivered at once,
     * held back and delivered late (after later numbers), or never; later calls carry a random earlier
     * number's counts; the client's entry is sometimes cleaned up. After every step the budget's count
     * is the model's, and no number is applied twice. Returns how often carried counts were added and dropped.
     */
    int[] randomSchedule(SplittableRandom random) {
      Map<Long, Integer> appliedTimes = new HashMap<>(); // number -> times its counts were added (by itself or carried)
      java.util.Set<Long> forgotten = new java.util.HashSet<>(); // numbers applied before the entry's last clean-up
      List<Long> heldBack = new ArrayList<>();
      List<Long> handedOut = new ArrayList<>();
      Long last = null; // the model of the client's entry
      long expected = 0;
      int added = 0;
      int dropped = 0;
      List<String> history = new ArrayList<>();
      for (int step = 0; step < 40; step++) {
        int what = random.nextInt(10);
        if (what == 0) {
          redis.server().call("HDEL", keys.clients(), client.clientId());
          last = null;
          forgotten.addAll(appliedTimes.keySet());
          history.add("entry cleaned up");
          continue;
        }
        if (what == 1 && !heldBack.isEmpty()) {
          long n = heldBack.remove(random.nextInt(heldBack.size()));
          List<?> r = raw(n, each(n), null);
          boolean runs = last == null || n > last; // a late copy with no entry is applied as new (budget.lua's rule)
          history.add("late " + n + " -> " + r.get(0));
          assertEquals(runs ? BudgetReply.COUNTED : BudgetReply.STALE, r.get(0), String.join("\n", history));
          if (runs) {
            last = n;
            expected += each(n);
            applied(appliedTimes, forgotten, n, history);
          }
          assertEquals(expected, BudgetReply.asLong(r.get(2)), String.join("\n", history));
          continue;
        }
        long n = client.next();
        handedOut.add(n);
        if (what <= 3) {
          heldBack.add(n); // on its way, or lost
          history.add("held " + n);
          continue;
        }
        List<CountsInDoubt> carried = new ArrayList<>();
        if (what >= 6 && handedOut.size() > 1) {
          // mostly the numbers held back (as the SDK carries its calls of unknown fate), some any number
          java.util.TreeSet<Long> which = new java.util.TreeSet<>();
          for (int k = random.nextInt(1, 4); k > 0; k--) {
            which.add(!heldBack.isEmpty() && random.nextInt(10) < 7 ? heldBack.get(random.nextInt(heldBack.size()))
                : handedOut.get(random.nextInt(handedOut.size() - 1)));
          }
          which.forEach(w -> carried.add(new CountsInDoubt(w, each(w), 0, 0)));
        }
        List<?> r = raw(n, each(n), carried.isEmpty() ? null : carried.stream()
            .flatMap(d -> java.util.stream.Stream.of(Long.toString(d.seq()), Long.toString(d.requests()), "0", "0"))
            .toArray(String[]::new));
        boolean runs = last == null || n > last;
        history.add("call " + n + (carried.isEmpty() ? "" : " carrying " + carried.stream().map(CountsInDoubt::seq).toList())
            + " -> " + r.get(0) + " " + r.get(2));
        assertEquals(runs ? BudgetReply.COUNTED : BudgetReply.STALE, r.get(0), String.join("\n", history));
        Long before = last;
        if (runs) {
          expected += each(n);
          applied(appliedTimes, forgotten, n, history);
          last = n;
        }
        for (CountsInDoubt d : carried) {
          if (runs && d.applies(before, n)) {
            expected += d.requests();
            added++;
            applied(appliedTimes, forgotten, d.seq(), history);
          } else {
            dropped++;
          }
        }
        assertEquals(expected, BudgetReply.asLong(r.get(2)), "the script and the rule differ:\n" + String.join("\n", history));
      }
      return new int[] {added, dropped};
    }

    /**
     * Number {@code n}'s counts were added: never a second time, but where the entry was lost since the
     * first (the case the rule admits, docs/RELAY.md: a late copy that arrives after its client's entry
     * was cleaned up or evicted runs as new, and counts carried after that may be added again).
     */
    private static void applied(Map<Long, Integer> times, java.util.Set<Long> forgotten, long n, List<String> history) {
      int before = times.merge(n, 1, Integer::sum) - 1;
      assertTrue(before == 0 || forgotten.contains(n),
          "number " + n + " applied " + (before + 1) + " times:\n" + String.join("\n", history));
    }

    @Override
    public void close() {
      store.close();
    }
  }
}
