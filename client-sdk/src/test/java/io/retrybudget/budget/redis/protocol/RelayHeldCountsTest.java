package io.retrybudget.budget.redis.protocol;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.testing.RedisExtension;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * budget.lua's held counts (lua/README.md, "Held counts") against a real Redis: a relay numbers the
 * batches of its clients' reports and says {@code through=<k>} (ARGV[13]) with each of its calls; a client
 * keeps what it reported into batch k until the relay settles it, and if the relay dies first carries it
 * as a held item {@code held=<relay>,<k>,<client>,<q>,<d>,<r>} (ARGV after the doubt groups), to Redis
 * directly or in another relay's call.
 *
 * <p>The invariant: for each batch (relay R, k) with counts C, its counts are added at most once in
 * total, whether by R's own call(s) or by held items carried by any number of clients any number of
 * times, provided every client's items for R carry counts of batch k only, R's call with
 * {@code through=k} carries all of batch k's counts, and R's calls are applied in number order (R sends
 * one at a time per budget, resending a call of unknown fate with its own number and {@code again}).
 * Why: an item is added only while R's entry says {@code through < k} and its (R, client) record holds
 * no batch k or later, and it leaves what it added as a credit of batch k in R's entry; R's call that
 * brings {@code through} to k or past adds its batches and takes every credit up to there off its own
 * counts, and from then on every item of those batches is skipped. Not lost: if R never applies batch
 * k, the first item (R, k, client) carried adds it.
 *
 * <p>Examples first, then random schedules of relays, clients, delayed, lost and repeated calls,
 * killed relays and carried items, checked after every step against a model stated on batches (a
 * batch R applied counts whole, one it did not counts the parts items brought) and against the made
 * counts (never above), and at the end (every live relay's calls delivered, every client's unsettled
 * items carried) equal to what was made.
 */
class RelayHeldCountsTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();

  private static final BudgetConfig SEED = BudgetConfig.builder("held").windowSeconds(3600).build();
  private static final long FLEET_MS = 120_000;
  /**
   * Random schedules: 120, about 8 s on a loaded 2-core machine (the six double-counting mutations in
   * lua/README.md each fail within 40).
   */
  private static final int SCHEDULES = 120;

  @Test
  void anItemIsAddedWhenItsRelayNeverAppliedTheBatch() throws Exception {
    try (Fixture f = new Fixture()) {
      Budget b = f.budget("held-never");
      b.call("relay-a", 1, 0, 0, 0, ""); // its probe: the relay is known, through 0
      // relay-a took {c1: 5/1/0, c2: 3/0/1} into batch 1 and was killed before sending it
      assertEquals(BudgetReply.COUNTED, b.call("c1", 1, 0, 0, 0, "", "held=relay-a,1,c1,5,1,0").get(0));
      assertArrayEquals(new long[] {5, 1, 0}, b.window(), "c1's part, carried to Redis directly");
      // c2 carries its part in another relay's call of its own batch 1 (2 first attempts)
      assertEquals(BudgetReply.COUNTED, b.call("relay-b", 1, 2, 0, 0, "through=1", "held=relay-a,1,c2,3,0,1").get(0));
      assertArrayEquals(new long[] {10, 1, 1}, b.window(), "relay-b's own 2 and c2's part");
      long epoch = b.epoch();
      assertEquals("1:" + epoch + ":0:1/8/1/1", b.entry("relay-a"), "both parts credited to relay-a's batch 1");
      assertEquals("1:" + epoch + ":1", b.entry("relay-b"), "relay-b's own entry: its through");
      assertEquals("1:" + epoch, b.entry("relay-a|c1"));
      assertEquals("1:" + epoch, b.entry("relay-a|c2"));
    }
  }

  @Test
  void anItemIsSkippedWhenItsRelayAppliedTheBatch() throws Exception {
    try (Fixture f = new Fixture()) {
      Budget b = f.budget("held-applied");
      b.call("relay-a", 1, 0, 0, 0, "");
      b.call("relay-a", 2, 8, 0, 0, "through=1"); // batch 1 {c1: 5, c2: 3}, applied; its reply lost
      b.call("c1", 1, 0, 0, 0, "", "held=relay-a,1,c1,5,0,0");
      assertArrayEquals(new long[] {8, 0, 0}, b.window(), "batch 1 once, by relay-a's call");
      assertEquals("2:" + b.epoch() + ":1", b.entry("relay-a"), "no credit");
      assertEquals(null, b.entry("relay-a|c1"), "nothing carried");
    }
  }

  @Test
  void aRelaysLaterCallTakesTheCreditsOfItsBatchesOffItsCounts() throws Exception {
    try (Fixture f = new Fixture()) {
      Budget b = f.budget("held-credit");
      b.call("relay-a", 1, 0, 0, 0, "");
      // batch 1 = {c1: 5/1/1, c2: 3}, batch 2 = {c1: 4, c2: 6/2/0}: relay-a's calls are slow, c1 thinks it dead
      b.call("c1", 1, 0, 0, 0, "", "held=relay-a,1,c1,5,1,1", "held=relay-a,2,c1,4,0,0");
      assertArrayEquals(new long[] {9, 1, 1}, b.window());
      long epoch = b.epoch();
      assertEquals("1:" + epoch + ":0:1/5/1/1:2/4/0/0", b.entry("relay-a"));
      b.call("relay-a", 2, 8, 1, 1, "through=1,first=2");
      assertArrayEquals(new long[] {12, 1, 1}, b.window(), "batch 1 whole (8/1/1), batch 2 by c1's part");
      assertEquals("2:" + epoch + ":1:2/4/0/0", b.entry("relay-a"), "batch 1's credit consumed, batch 2's kept");
      b.call("relay-a", 3, 10, 2, 0, "hold,through=2");
      assertArrayEquals(new long[] {18, 3, 1}, b.window(), "each batch exactly once: 8 + 10 first attempts");
      assertEquals("3:" + epoch + ":2", b.entry("relay-a"), "no credit left");
      b.call("c2", 1, 0, 0, 0, "", "held=relay-a,1,c2,3,0,0", "held=relay-a,2,c2,6,2,0");
      assertArrayEquals(new long[] {18, 3, 1}, b.window(), "applied batches: c2's items skipped");
      // a relay's probe (no through) consumes nothing and keeps its through
      b.call("c1", 2, 0, 0, 0, "", "held=relay-a,3,c1,7,0,0");
      b.call("relay-a", 4, 0, 0, 0, "");
      assertEquals("4:" + epoch + ":2:3/7/0/0", b.entry("relay-a"));
      b.call("relay-a", 5, 9, 0, 0, "through=5");
      assertArrayEquals(new long[] {27, 3, 1}, b.window(), "batches 3 to 5 whole: 9, c1's 7 within it");
    }
  }

  @Test
  void anItemCarriedTwiceIsAddedOnce() throws Exception {
    try (Fixture f = new Fixture()) {
      Budget b = f.budget("held-twice");
      b.call("relay-a", 1, 0, 0, 0, "");
      b.call("c1", 1, 0, 0, 0, "", "held=relay-a,2,c1,5,0,0", "held=relay-a,2,c1,5,0,0");
      assertArrayEquals(new long[] {5, 0, 0}, b.window(), "twice in one call");
      b.call("", 0, 0, 0, 0, "", "held=relay-a,2,c1,5,0,0");
      b.call("relay-b", 1, 0, 0, 0, "through=1", "held=relay-a,2,c1,5,0,0");
      assertArrayEquals(new long[] {5, 0, 0}, b.window(), "again directly without an id, and in another relay's call");
      b.call("c1", 2, 0, 0, 0, "", "held=relay-a,1,c1,3,0,0");
      assertArrayEquals(new long[] {5, 0, 0}, b.window(), "an earlier batch after a later one: lost, the safe side");
      b.call("c2", 1, 0, 0, 0, "", "held=relay-a,2,c2,4,0,0");
      assertArrayEquals(new long[] {9, 0, 0}, b.window(), "another client's part of the same batch");
      assertEquals("1:" + b.epoch() + ":0:2/9/0/0", b.entry("relay-a"), "merged into one credit");
      b.call("relay-a", 2, 12, 0, 0, "through=2"); // batches 1 (c1's 3) and 2 (9)
      assertArrayEquals(new long[] {12, 0, 0}, b.window(), "each once");
    }
  }

  @Test
  void anItemForARelayRedisNeverHeardFromMakesItsEntry() throws Exception {
    try (Fixture f = new Fixture()) {
      Budget b = f.budget("held-absent");
      b.call("c1", 1, 0, 0, 0, "", "held=relay-a,1,c1,5,0,0");
      long epoch = b.epoch();
      assertEquals("0:" + epoch + ":0:1/5/0/0", b.entry("relay-a"));
      assertEquals(1, b.active(), "c1 only: an entry an item made counts no one");
      // relay-a's first call sent again: stale, as without an entry (the entry its first copy wrote may
      // have been evicted, and an item made this one: applying the copy could count it twice)
      assertEquals(BudgetReply.STALE, b.call("relay-a", 1, 8, 0, 0, "again,through=1").get(0));
      assertArrayEquals(new long[] {5, 0, 0}, b.window(), "c1's part only: batch 1's others are lost");
      // its next call, a fresh number, closes batch 2: batch 1's credit comes off it, as far as it goes
      assertEquals(BudgetReply.COUNTED, b.call("relay-a", 2, 8, 0, 0, "through=2").get(0));
      assertArrayEquals(new long[] {8, 0, 0}, b.window(), "never more than was made");
      assertEquals("2:" + epoch + ":2", b.entry("relay-a"));
      assertEquals(2, b.active(), "relay-a counted by its own first applied call");
    }
  }

  @Test
  void aRelayTakesAtMost64BatchesCredits() throws Exception {
    try (Fixture f = new Fixture()) {
      Budget b = f.budget("held-credits");
      b.call("relay-a", 1, 0, 0, 0, "");
      String[] items = new String[65];
      for (int k = 1; k <= 65; k++) {
        items[k - 1] = "held=relay-a," + k + ",c" + k + ",1,0,0";
      }
      b.call("c0", 1, 0, 0, 0, "", items);
      assertArrayEquals(new long[] {64, 0, 0}, b.window(), "the 65th batch's item is dropped: nothing added");
      assertEquals(64, b.entry("relay-a").split(":").length - 3);
      assertEquals(null, b.entry("relay-a|c65"), "and not recorded: it may go again later");
      b.call("c0", 2, 0, 0, 0, "", "held=relay-a,64,c99,2,0,0", "held=relay-a,66,c65,1,0,0");
      assertArrayEquals(new long[] {66, 0, 0}, b.window(), "a batch it has a credit of still takes items");
      b.call("relay-a", 2, 70, 0, 0, "through=66");
      assertArrayEquals(new long[] {70, 0, 0}, b.window(), "batches 1 to 66 once");
      assertEquals("2:" + b.epoch() + ":66", b.entry("relay-a"));
    }
  }

  @Test
  void aRelayForwardingItemsCreditsTheirRelaysNotItself() throws Exception {
    try (Fixture f = new Fixture()) {
      Budget b = f.budget("held-forward");
      b.call("relay-a", 1, 0, 0, 0, "");
      b.call("relay-b", 1, 0, 0, 0, "");
      b.call("relay-b", 2, 6, 0, 0, "through=1", "held=relay-a,1,c1,5,0,0", "held=relay-b,2,c2,4,0,0",
          "held=relay-a,1,c3,2,0,0");
      assertArrayEquals(new long[] {13, 0, 0}, b.window(), "its own 6 and relay-a's 5 + 2; its own batch's item skipped");
      long epoch = b.epoch();
      assertEquals("2:" + epoch + ":1", b.entry("relay-b"));
      assertEquals("1:" + epoch + ":0:1/7/0/0", b.entry("relay-a"));
      assertEquals(null, b.entry("relay-b|c2"));
      // with doubt groups before the items: both kinds carried by one call
      b.call("c4", 1, 1, 0, 0, "");
      b.call("c4", 3, 1, 0, 0, "", "2", "10", "0", "0", "held=relay-a,2,c4,3,0,0");
      assertArrayEquals(new long[] {28, 0, 0}, b.window(), "1 + 1 + the 10 of call 2 + the 3 held");
    }
  }

  @Test
  void anOrdinaryClientsEntryStaysAsItWas() throws Exception {
    try (Fixture f = new Fixture()) {
      Budget b = f.budget("held-plain");
      long before = b.epoch();
      b.call("c1", 5, 1, 0, 0, "");
      b.call("c2", 7, 1, 0, 0, "first=3");
      b.call("c3", 9, 1, 0, 0, "first=2", "held=relay-x,1,c3,1,0,0");
      long after = b.epoch();
      for (String[] e : new String[][] {{"c1", "5"}, {"c2", "7"}, {"c3", "9"}}) {
        String entry = b.entry(e[0]);
        assertTrue(entry.equals(e[1] + ":" + before) || entry.equals(e[1] + ":" + after), e[0] + ": " + entry);
      }
      assertArrayEquals(new long[] {4, 0, 0}, b.window());
    }
  }

  @Test
  void aLongEntryQuietForTwoEpochsIsCleanedUpLikeAnyOther() throws Exception {
    try (Fixture f = new Fixture()) {
      boolean removed = false;
      for (int i = 0; i < 30 && !removed; i++) {
        Budget b = f.budget("held-clean-" + i);
        long epoch = b.epoch();
        b.call("c0", 1, 0, 0, 0, "");
        redis.server().call("HSET", b.keys.clients(), "relay-old", "9:" + (epoch - 3) + ":4:6/1/0/0");
        redis.server().call("HSET", b.keys.clients(), "relay-old|c1", "6:" + (epoch - 3));
        b.call("c1", 1, 0, 0, 0, ""); // counted: samples two fields and removes those quiet two epochs
        removed = b.entry("relay-old") == null || b.entry("relay-old|c1") == null;
      }
      assertTrue(removed, "a relay's long entry or an item's record, two epochs quiet, removed by the sampler");
    }
  }

  @Test
  void itemsOfNoCountOrOfABatchFarAheadAreNoRelaysAndFillNoCredits() throws Exception {
    try (Fixture f = new Fixture()) {
      Budget b = f.budget("held-hostile");
      b.call("relay-a", 1, 0, 0, 0, "through=3");
      String[] zeros = new String[70];
      for (int i = 0; i < zeros.length; i++) {
        zeros[i] = "held=relay-a," + (9007199254740992L - i) + ",evil,0,0,0";
      }
      b.call("evil", 1, 0, 0, 0, "", java.util.Arrays.copyOf(zeros, 64)); // (in increasing batch order or not)
      b.call("evil", 2, 0, 0, 0, "", "held=relay-a,1004,evil,1,0,0", "held=relay-a,5000,evil2,1,0,0");
      long epoch = b.epoch();
      assertEquals("1:" + epoch + ":3", b.entry("relay-a"), "no credit: zero counts, or beyond through + 1000");
      assertEquals(null, b.entry("relay-a|evil"), "nor a record");
      assertArrayEquals(new long[] {0, 0, 0}, b.window());
      b.call("c1", 1, 0, 0, 0, "", "held=relay-a,4,c1,5,0,0"); // relay-a killed with batch 4
      assertArrayEquals(new long[] {5, 0, 0}, b.window(), "an honest item still finds room");
      assertEquals("1:" + epoch + ":3:4/5/0/0", b.entry("relay-a"));
    }
  }

  @Test
  void againInAListOfOptionsIsStillAgain() throws Exception {
    try (Fixture f = new Fixture()) {
      Budget b = f.budget("held-again");
      assertEquals(BudgetReply.STALE, b.call("relay-a", 5, 3, 0, 0, "again,through=5").get(0), "no entry: stale");
      assertEquals(null, b.entry("relay-a"), "nothing written");
      assertEquals(BudgetReply.STALE, b.call("c1", 2, 3, 0, 0, "first=2,again").get(0));
      b.call("relay-a", 1, 0, 0, 0, "");
      assertEquals(BudgetReply.COUNTED, b.call("relay-a", 2, 3, 0, 0, "through=1,again").get(0));
      assertEquals(BudgetReply.STALE, b.call("relay-a", 2, 3, 0, 0, "again,through=1").get(0));
      assertEquals(BudgetReply.STALE, b.call("relay-a", 2, 0, 0, 0, "through=1", "held=relay-b,1,c1,5,0,0").get(0),
          "a stale call applies no item");
      assertArrayEquals(new long[] {3, 0, 0}, b.window());
      assertEquals(null, b.entry("relay-b"));
    }
  }

  @Test
  void olderAndUnknownOptionsAreStillAccepted() throws Exception {
    try (Fixture f = new Fixture()) {
      Budget b = f.budget("held-options");
      for (String options : new String[] {"first=3", "hold", "first=3,hold", "zzz=1,through=2,later", ",,", "first="}) {
        assertEquals(BudgetReply.COUNTED, b.call("c1", b.next(), 1, 0, 0, options).get(0), options);
      }
      assertArrayEquals(new long[] {6, 0, 0}, b.window());
      List<String> argv = new ArrayList<>(b.argv("c2", 1, 1, 0, 0, "first=3"));
      assertEquals(BudgetReply.COUNTED, b.run(argv).get(0), "ARGV[13] as the last argument");
      argv = new ArrayList<>(b.argv("c2", 2, 1, 0, 0, ""));
      argv.add("");
      argv.add("");
      assertEquals(BudgetReply.COUNTED, b.run(argv).get(0), "an empty ARGV[14] and more: nothing carried");
      assertArrayEquals(new long[] {8, 0, 0}, b.window());
    }
  }

  @Test
  void malformedOptionsAndItemsAreRefusedByNameBeforeAnyWrite() throws Exception {
    try (Fixture f = new Fixture()) {
      Budget b = f.budget("held-bad");
      b.call("c1", 1, 1, 0, 0, "");
      for (String options : new String[] {"through=0", "through=", "through", "through=-1", "through=1.5", "through=x",
          "through=1e3", "through= 1", "through=1,through=2", "again,through=99999999999999999999"}) {
        assertEquals("ERR invalid through", b.error("c1", 2, options), options);
      }
      String[] bad = {"held=", "held=r,1,c,1,0", "held=r,1,c,1,0,0,0", "held=r,0,c,1,0,0", "held=r,1,c,-1,0,0",
          "held=r,1,c,1.5,0,0", "held=r b,1,c,1,0,0", "held=r|x,1,c,1,0,0", "held=r,1,,1,0,0", "held=,1,c,1,0,0",
          "held=r,1,c,1,0,x", "held=r,99999999999999999999,c,1,0,0", "held=" + "r".repeat(101) + ",1,c,1,0,0",
          "held=r,1," + "c".repeat(101) + ",1,0,0", "held=r,1,c,1,0,0 "};
      for (String item : bad) {
        assertEquals("ERR invalid held", b.error("c1", 2, "", "held=r,1,c,1,0,0", item), item);
      }
      assertEquals("ERR invalid held", b.error("c1", 2, "", "held=r,1,c,1,0,0", "7"), "every element after the first item is one");
      String[] many = new String[257];
      Arrays.fill(many, "held=r,1,c,1,0,0");
      assertEquals("ERR invalid held", b.error("c1", 2, "", many), "at most 256");
      assertEquals("ERR invalid doubt_seq", b.error("c1", 2, "", "1", "1", "0", "held=r,1,c,1,0,0"),
          "doubt groups of 4 end where the items begin");
      assertArrayEquals(new long[] {1, 0, 0}, b.window(), "nothing written");
      assertEquals(null, b.entry("r"));
      assertEquals(BudgetReply.COUNTED, b.call("c1", 2, 0, 0, 0, "", many[0]).get(0), "well formed");
      assertEquals(BudgetReply.COUNTED, b.call("c1", 3, 0, 0, 0, "", Arrays.copyOf(many, 256)).get(0), "256 items");
      assertEquals(BudgetReply.COUNTED, b.call("r." + "x".repeat(98), 1, 0, 0, 0, "through=9007199254740992").get(0));
    }
  }

  // ---- random schedules ----------------------------------------------------------------------------

  @Test
  void noBatchCountsTwiceAndNoneOfAKilledRelayIsLostUnderRandomSchedules() throws Exception {
    Coverage seen = new Coverage();
    try (Fixture f = new Fixture()) {
      for (long seed = 0; seed < SCHEDULES; seed++) {
        new Schedule(f.budget("held-s" + seed), new SplittableRandom(seed), seen).run(40);
      }
    }
    System.out.println("RelayHeldCountsTest, " + SCHEDULES + " schedules: " + seen);
    assertTrue(seen.added > 300 && seen.skippedApplied > 50 && seen.skippedCarried > 100 && seen.skippedSelf > 3
        && seen.credited > 100 && seen.killed > 100 && seen.staleCopies > 50 && seen.recoveredAtEnd > 100,
        "every side of the rule was met: " + seen);
  }

  /** What the schedules met, so that the test shows it checked each branch. */
  private static final class Coverage {
    int added; // items that added their counts
    int skippedApplied; // items of a batch their relay had applied
    int skippedCarried; // items carried before
    int skippedSelf; // items naming the relay whose call carried them
    int credited; // added items whose relay applied their batch afterwards (their credit consumed)
    int killed; // relays killed
    int staleCopies; // relay calls arriving a second time
    int recoveredAtEnd; // killed relays' parts added by the last carry

    @Override
    public String toString() {
      return "added " + added + ", skipped as applied " + skippedApplied + ", as carried before " + skippedCarried
          + ", as the carrier's own " + skippedSelf + ", credits consumed " + credited + ", relays killed " + killed
          + ", stale copies " + staleCopies + ", parts recovered at the end " + recoveredAtEnd;
    }
  }

  /** A client's part of one batch of one relay. */
  private record Part(String relay, long k, String client) {
    static final Comparator<Part> ORDER = Comparator.comparing(Part::relay).thenComparingLong(Part::k)
        .thenComparing(Part::client);
  }

  /** A held item: a part and its counts. */
  private record Item(Part part, long[] counts) {
    String arg() {
      return "held=" + part.relay() + "," + part.k() + "," + part.client() + "," + counts[0] + "," + counts[1] + ","
          + counts[2];
    }
  }

  /** One budget.lua call as composed: the caller ('' for none), its number, own counts, through (0: none), items. */
  private record Call(String caller, long seq, long[] counts, long through, String options, List<Item> items) {}

  private static final class Relay {
    final String id;
    boolean alive = true;
    long seq;
    long batch = 1;
    final Map<String, long[]> current = new TreeMap<>(); // client -> its counts in the current batch
    final List<Item> forward = new ArrayList<>(); // items handed to it to carry with its next call
    Call outstanding; // its call of unknown fate (it sends one at a time)

    Relay(String id) {
      this.id = id;
    }
  }

  private static final class Client {
    final String id;
    long seq;
    final Set<String> abandoned = new HashSet<>(); // relays it carried items of: it reports to them no more
    final TreeMap<Part, long[]> unsettled = new TreeMap<>(Part.ORDER); // its parts not yet settled by their relay

    Client(String id) {
      this.id = id;
    }
  }

  /**
   * One random schedule. The relays and clients follow the protocol (lua/README.md, "Held counts");
   * Redis is the real script. The model of what Redis should hold is stated on batches, not on the
   * script's bookkeeping: a relay's through T is the highest {@code through} of its applied calls; a
   * part's item is added when a call carrying it is applied, it does not name that call's caller, its
   * relay's T is below its batch and it was not added before; the window then holds, for every batch,
   * all of it when k <= T, else the parts items added.
   */
  private static final class Schedule {
    final Budget b;
    final SplittableRandom random;
    final Coverage seen;
    final List<Relay> relays = new ArrayList<>();
    final List<Client> clients = new ArrayList<>();
    final List<Call> network = new ArrayList<>(); // copies on their way, delivered late or never
    final Map<String, Long> last = new HashMap<>(); // the model: each caller's last applied number
    final Map<String, Long> through = new HashMap<>(); // the model: each relay's T
    final Map<Part, long[]> parts = new HashMap<>(); // every part reported
    final Set<Part> added = new HashSet<>(); // parts an item added
    final long[] made = new long[3];
    final List<String> history = new ArrayList<>();
    int relayIds;

    Schedule(Budget b, SplittableRandom random, Coverage seen) {
      this.b = b;
      this.random = random;
      this.seen = seen;
    }

    void run(int steps) throws Exception {
      for (int i = 0, n = random.nextInt(2, 4); i < n; i++) {
        startRelay();
      }
      for (int i = 0, n = random.nextInt(2, 5); i < n; i++) {
        clients.add(new Client("c" + i));
      }
      for (int step = 0; step < steps; step++) {
        int what = random.nextInt(20);
        if (what < 7) {
          report();
        } else if (what < 11) {
          relayCall(pick(live()));
        } else if (what < 13) {
          deliverLate();
        } else if (what < 18) {
          carry();
        } else {
          kill();
        }
        check();
      }
      // the end: every live relay's calls delivered, then every client carries what is unsettled
      for (Relay r : live()) {
        while (r.outstanding != null) {
          deliver(resend(r), true);
        }
        deliver(compose(r), true);
        check();
      }
      while (!network.isEmpty()) {
        Call c = network.remove(random.nextInt(network.size()));
        if (random.nextBoolean()) {
          deliver(c, false);
        } else {
          history.add("lost for good: " + describe(c));
        }
        check();
      }
      for (Client c : clients) {
        if (!c.unsettled.isEmpty()) {
          int before = added.size();
          carryDirectly(c, items(c, new ArrayList<>(c.unsettled.keySet())));
          seen.recoveredAtEnd += added.size() - before;
          check();
        }
      }
      assertArrayEquals(made, expected(), "the model lost something:\n" + log());
      assertArrayEquals(made, b.window(), "every count made, counted once:\n" + log());
    }

    void startRelay() throws Exception {
      Relay r = new Relay("relay-" + (relayIds++) + "-" + Long.toHexString(random.nextLong()));
      relays.add(r);
      r.seq = 1;
      history.add(r.id + " starts, probe");
      deliver(new Call(r.id, 1, new long[3], 0, "", List.of()), false); // known to Redis from its start
    }

    List<Relay> live() {
      return relays.stream().filter(r -> r.alive).toList();
    }

    <T> T pick(List<T> from) {
      return from.get(random.nextInt(from.size()));
    }

    /** A client reports into a live relay's current batch. */
    void report() {
      Client c = pick(clients);
      List<Relay> to = live().stream().filter(r -> !c.abandoned.contains(r.id)).toList();
      if (to.isEmpty()) {
        return;
      }
      Relay r = pick(to);
      long[] counts = {random.nextInt(1, 10), random.nextInt(3), random.nextInt(3)};
      Part part = new Part(r.id, r.batch, c.id);
      add(r.current.computeIfAbsent(c.id, x -> new long[3]), counts);
      add(parts.computeIfAbsent(part, x -> new long[3]), counts);
      add(c.unsettled.computeIfAbsent(part, x -> new long[3]), counts);
      add(made, counts);
      history.add(c.id + " reports " + Arrays.toString(counts) + " into " + r.id + " batch " + r.batch);
    }

    /** A live relay sends its batch (or, with a call of unknown fate, sends that again): now, late or never. */
    void relayCall(Relay r) throws Exception {
      if (r.outstanding == null && random.nextInt(6) == 0) {
        // a call without through (a probe, as an older relay sends): it settles nothing and consumes nothing
        Call probe = new Call(r.id, ++r.seq, new long[3], 0, random.nextBoolean() ? "" : "hold", List.of());
        history.add(r.id + " probes " + describe(probe));
        deliver(probe, false);
        return;
      }
      Call call = r.outstanding == null ? compose(r) : resend(r);
      int how = random.nextInt(4);
      if (how < 2) {
        deliver(call, true);
      } else if (how == 2) {
        network.add(call);
        history.add("  on its way");
      } else {
        history.add("  lost");
      }
    }

    Call compose(Relay r) {
      long[] counts = new long[3];
      r.current.values().forEach(v -> add(counts, v));
      r.current.clear();
      String[] options = {"through=" + r.batch, "first=" + (r.seq + 1) + ",through=" + r.batch,
          "through=" + r.batch + ",hold", "zzz=1,through=" + r.batch};
      Call call = new Call(r.id, ++r.seq, counts, r.batch, pick(Arrays.asList(options)), List.copyOf(r.forward));
      r.forward.clear();
      r.batch++;
      r.outstanding = call;
      history.add(r.id + " sends " + describe(call));
      return call;
    }

    Call resend(Relay r) {
      Call o = r.outstanding;
      Call call = new Call(o.caller(), o.seq(), o.counts(), o.through(),
          random.nextBoolean() ? "again,through=" + o.through() : "through=" + o.through() + ",again", o.items());
      history.add(r.id + " sends again " + describe(call));
      return call;
    }

    void deliverLate() throws Exception {
      if (!network.isEmpty()) {
        Call c = network.remove(random.nextInt(network.size()));
        // a copy may also stay in the network and arrive once more
        if (random.nextInt(4) == 0) {
          network.add(c);
        }
        deliver(c, false);
      }
    }

    /** A client carries its unsettled parts of one relay: to Redis directly, without an id, or in a relay's call. */
    void carry() throws Exception {
      List<Client> holding = clients.stream().filter(c -> !c.unsettled.isEmpty()).toList();
      if (holding.isEmpty()) {
        return;
      }
      Client c = pick(holding);
      String of = pick(new ArrayList<>(c.unsettled.keySet())).relay();
      c.abandoned.add(of);
      List<Part> which = c.unsettled.keySet().stream().filter(p -> p.relay().equals(of)).toList();
      int way = random.nextInt(10);
      if (way < 4) {
        List<Item> items = items(c, which);
        carryDirectly(c, items);
        if (random.nextInt(5) == 0) {
          carryDirectly(c, items); // carried twice
        }
      } else if (way < 6) {
        Call call = new Call("", 0, new long[3], 0, "", items(c, which));
        history.add(c.id + " carries without an id " + describe(call));
        if (random.nextBoolean()) {
          deliver(call, false);
        } else {
          network.add(call);
          network.add(call);
          history.add("  two copies on their way");
        }
      } else {
        // in another live relay's next call (rarely the relay itself, whose call skips them)
        List<Relay> others = live().stream().filter(r -> random.nextInt(10) == 0 || !r.id.equals(of)).toList();
        if (!others.isEmpty()) {
          Relay via = pick(others);
          via.forward.addAll(items(c, which));
          history.add(c.id + " hands " + which.size() + " items of " + of + " to " + via.id);
        }
      }
    }

    void carryDirectly(Client c, List<Item> items) throws Exception {
      Call call = new Call(c.id, ++c.seq, new long[3], 0, random.nextBoolean() ? "" : "first=" + c.seq, items);
      history.add(c.id + " carries " + describe(call));
      deliver(call, false);
      items.forEach(i -> c.unsettled.remove(i.part())); // applied: each added now, or counted before
    }

    List<Item> items(Client c, List<Part> which) {
      return which.stream().map(p -> new Item(p, c.unsettled.get(p).clone())).toList();
    }

    /** A relay is killed (its unsent batch and a call of unknown fate with it) and another starts. */
    void kill() throws Exception {
      if (live().size() > 1 || random.nextBoolean()) {
        Relay r = pick(live());
        r.alive = false;
        seen.killed++;
        history.add(r.id + " killed");
      }
      if (live().size() < 3) {
        startRelay();
      }
    }

    /** Delivers one copy of a call: the model's rule on batches, then the script's answer. */
    void deliver(Call c, boolean known) throws Exception {
      String[] extra = c.items().stream().map(Item::arg).toArray(String[]::new);
      List<?> reply = b.call(c.caller(), c.seq(), c.counts()[0], c.counts()[1], c.counts()[2], c.options(), extra);
      boolean applies = c.caller().isEmpty() || c.seq() > last.getOrDefault(c.caller(), 0L);
      history.add("  delivered " + describe(c) + " -> " + reply.get(0));
      assertEquals(applies ? BudgetReply.COUNTED : BudgetReply.STALE, reply.get(0), log());
      if (applies) {
        if (!c.caller().isEmpty()) {
          last.put(c.caller(), c.seq());
        }
        long before = through.getOrDefault(c.caller(), 0L);
        if (c.through() > before) {
          through.put(c.caller(), c.through());
          seen.credited += (int) added.stream()
              .filter(p -> p.relay().equals(c.caller()) && p.k() > before && p.k() <= c.through()).count();
        }
        for (Item item : c.items()) {
          Part p = item.part();
          if (p.relay().equals(c.caller())) {
            seen.skippedSelf++;
          } else if (through.getOrDefault(p.relay(), 0L) >= p.k()) {
            seen.skippedApplied++;
          } else if (!added.add(p)) {
            seen.skippedCarried++;
          } else {
            assertArrayEquals(parts.get(p), item.counts(), "a part carried before it was whole: " + p);
            seen.added++;
          }
        }
      } else if (!c.caller().isEmpty() && relays.stream().anyMatch(r -> r.id.equals(c.caller()))) {
        seen.staleCopies++;
      }
      // its relay, if alive, hears the answer: applied now or before, so its batches up to `through` are settled
      for (Relay r : relays) {
        if (r.alive && r.outstanding != null && r.id.equals(c.caller()) && r.outstanding.seq() == c.seq()) {
          r.outstanding = null;
          for (Client client : clients) {
            client.unsettled.keySet().removeIf(p -> p.relay().equals(r.id) && p.k() <= c.through());
          }
          history.add("  " + r.id + " settles batches up to " + c.through());
        }
      }
      if (known && c.caller().startsWith("relay-")) {
        assertTrue(relays.stream().filter(r -> r.id.equals(c.caller())).allMatch(r -> r.outstanding == null), log());
      }
    }

    /** The window as the rule says: a batch its relay applied whole, else the parts items added. */
    long[] expected() {
      long[] sum = new long[3];
      parts.forEach((p, counts) -> {
        if (through.getOrDefault(p.relay(), 0L) >= p.k() || added.contains(p)) {
          add(sum, counts);
        }
      });
      return sum;
    }

    void check() throws Exception {
      long[] window = b.window();
      for (int i = 0; i < 3; i++) {
        assertTrue(window[i] <= made[i], "counted twice: window " + Arrays.toString(window) + ", made "
            + Arrays.toString(made) + "\n" + log());
      }
      assertArrayEquals(expected(), window, "the script and the rule on batches differ:\n" + log());
    }

    String describe(Call c) {
      return (c.caller().isEmpty() ? "''" : c.caller()) + " #" + c.seq() + " " + Arrays.toString(c.counts()) + " ["
          + c.options() + "]" + (c.items().isEmpty() ? "" : " items " + c.items().stream()
          .map(i -> i.part().relay() + "/" + i.part().k() + "/" + i.part().client() + "=" + i.counts()[0]).toList());
    }

    String log() {
      return String.join("\n", history.subList(Math.max(0, history.size() - 80), history.size()));
    }
  }

  private static void add(long[] to, long[] counts) {
    for (int i = 0; i < 3; i++) {
      to[i] += counts[i];
    }
  }

  // ---- the fixture: raw budget.lua calls through the SDK's store -------------------------------

  private static final class Fixture implements AutoCloseable {
    final RedisBudgetStore store = RedisBudgetStore.connect(redis.connectionOptions().commandTimeout(Duration.ofSeconds(5))
        .build());
    final BudgetScripts scripts = new BudgetScripts(store);

    Budget budget(String name) {
      return new Budget(this, name);
    }

    @Override
    public void close() {
      store.close();
    }
  }

  private static final class Budget {
    private static final Pattern REFUSAL = Pattern.compile("ERR invalid (through|held|doubt_seq|doubt counts)");
    final Fixture f;
    final String name;
    final BudgetKeys keys;
    long seq;

    Budget(Fixture f, String name) {
      this.f = f;
      this.name = name;
      this.keys = f.scripts.keys(name);
      redis.server().call("DEL", keys.config(), keys.window(), keys.clients(), keys.pace());
    }

    long next() {
      return ++seq;
    }

    /** ARGV of a count-only call ({@code need = 0}) seeding the budget, up to ARGV[13] = {@code options}. */
    List<String> argv(String caller, long seq, long requests, long denied, long retries, String options) {
      return List.of(caller, Long.toString(seq), Long.toString(requests), Long.toString(denied), "0", "0",
          Long.toString(SEED.ratioPpm()), Integer.toString(SEED.windowSeconds()), Integer.toString(SEED.minRetriesPerSecond()),
          SEED.mode().wireName(), Integer.toString(SEED.maxCallsPerSecond()), Long.toString(retries), options);
    }

    List<?> call(String caller, long seq, long requests, long denied, long retries, String options, String... extra)
        throws Exception {
      List<String> args = new ArrayList<>(argv(caller, seq, requests, denied, retries, options));
      args.addAll(List.of(extra));
      return run(args);
    }

    List<?> run(List<String> args) throws Exception {
      return f.store.run(LuaScript.BUDGET, new String[] {keys.config(), keys.window(), keys.clients(), keys.index(),
          keys.pace()}, args.toArray(String[]::new)).get(5, TimeUnit.SECONDS);
    }

    /** The reason budget.lua refuses a call with (Redis may append where the error was raised). */
    String error(String caller, long seq, String options, String... extra) {
      ExecutionException e = assertThrows(ExecutionException.class, () -> call(caller, seq, 1, 0, 0, options, extra));
      String m = String.valueOf(e.getCause().getMessage());
      Matcher reason = REFUSAL.matcher(m);
      return reason.find() ? reason.group() : m;
    }

    /** The window's first attempts, denied and retries (status.lua). */
    long[] window() throws Exception {
      StatusReply s = f.scripts.status(name, SEED).get(5, TimeUnit.SECONDS);
      return new long[] {s.requests(), s.denied(), s.retries()};
    }

    long active() throws Exception {
      return f.scripts.status(name, SEED).get(5, TimeUnit.SECONDS).activeClients();
    }

    String entry(String field) {
      Object v = redis.server().call("HGET", keys.clients(), field);
      return v == null ? null : String.valueOf(v);
    }

    /** The fleet epoch of Redis's clock now. */
    long epoch() {
      List<?> t = (List<?>) redis.server().call("TIME");
      return (Long.parseLong(String.valueOf(t.get(0))) * 1000 + Long.parseLong(String.valueOf(t.get(1))) / 1000) / FLEET_MS;
    }
  }
}
