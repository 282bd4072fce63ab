package io.retrybudget.budget.redis.protocol;

import io.retrybudget.budget.redis.transport.RedisBudgetStore;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.internal.PaceArithmetic;
import io.retrybudget.budget.internal.TrustArithmetic;
import io.retrybudget.testing.RedisExtension;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The budget's trust model against a real Redis (lua/README.md, "The trust model"): one client's
 * report can neither buy another client more than the pace rule allows for believable traffic, nor
 * overflow a bucket, and a bucket that holds a count out of range heals instead of breaking the
 * budget for its keys' TTL. Budgets here use the defaults: ratio 0.1, floor 10, window 10 s,
 * max_calls_per_s 2000, so one call's report counts up to 10^6.
 */
class BudgetTrustTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();
  private static final long TWO_TO_53 = 1L << 53;
  private static RedisBudgetStore store;
  private int nextSeq;

  @BeforeAll
  static void connect() {
    store = RedisBudgetStore.connect(redis.connectionOptions().build());
  }

  @AfterAll
  static void disconnect() {
    store.close();
  }

  @BeforeEach
  void clean() {
    redis.flushAll();
    nextSeq = 0;
  }

  /** budget.lua as any client may call it (the SDK's own BudgetCall caps before sending). */
  private BudgetReply raw(String name, String client, long requests, long denied, long need, long want, long retries)
      throws Exception {
    BudgetKeys k = new BudgetKeys(name);
    List<Object> r = store.run(LuaScript.BUDGET, new String[] {k.config(), k.window(), k.clients(), k.index(), k.pace()},
        client, Integer.toString(++nextSeq), Long.toString(requests), Long.toString(denied), Long.toString(need),
        Long.toString(want), "100000", "10", "10", "enforce", "", retries == 0 ? "" : Long.toString(retries))
        .get(5, TimeUnit.SECONDS);
    return BudgetReply.parse(r);
  }

  private StatusReply status(String name) throws Exception {
    return new BudgetScripts(store).status(name, BudgetConfig.builder(name).build()).get(5, TimeUnit.SECONDS);
  }

  @Test
  void aReportOfTwoToThe53CannotBuyAnHonestClientAMillionPermits() throws Exception {
    raw("api", "honest", 1_000, 0, 0, 0, 0);
    BudgetReply lie = raw("api", "liar", TWO_TO_53, 0, 0, 0, 0);
    BudgetReply lease = raw("api", "honest", 0, 0, 1, 1_000_000, 0);
    assertTrue(lease.granted() < 1_000_000, "granted " + lease.granted());
    assertEquals(1_000 + 1_000_000, lie.requests(), "the lie counted as one call's cap, 10^6");
    // 1,001,000 first attempts in the budget's first second: 100,100 permits a second at ratio 0.1,
    // half a second of it at most in the balance (plus the floor's share)
    long cap = PaceArithmetic.cap(PaceArithmetic.refillRate(1_001_000, 1_000, 100_000, 10_000_000)) / PaceArithmetic.PPM;
    assertTrue(lease.granted() <= cap, "granted " + lease.granted() + ", the balance holds at most " + cap);
    BudgetReply million = raw("api", "honest", 0, 0, 1_000_000, 1_000_000, 0);
    assertEquals(BudgetReply.DENIED, million.status(), "all or none: a million permits are not there");
  }

  @Test
  void aThousandAndTwentyFourSuchReportsDoNotBreakTheBudget() throws Exception {
    long bucketCap = TrustArithmetic.bucketCap(1_000); // 10 s window: buckets of 1 s
    List<BudgetReply> replies = new java.util.ArrayList<>();
    for (int i = 0; i < 1_024; i++) {
      replies.add(raw("flood", "liar", TWO_TO_53, TWO_TO_53, 0, 0, TWO_TO_53)); // an error would throw here
    }
    StatusReply s = status("flood");
    for (BudgetReply r : replies) {
      assertTrue(r.requests() >= 0 && r.requests() <= 11 * bucketCap, "requests " + r.requests());
      assertTrue(r.retries() >= 0 && r.retries() <= 11 * bucketCap, "retries " + r.retries());
      assertTrue(r.denied() >= 0 && r.denied() <= 11 * bucketCap, "denied " + r.denied());
    }
    // every bucket's counts within [0, cap]: nothing wrapped past 2^63
    for (long[] slot : new WindowRing(redis.server(), new BudgetKeys("flood")).slots()) {
      for (int f = WindowRing.Q; f <= WindowRing.A; f++) {
        assertTrue(slot[f] >= 0 && slot[f] <= bucketCap, "slot " + java.util.Arrays.toString(slot));
      }
    }
    // the fleet goes on: an honest client's call is answered, and so is status
    BudgetReply honest = raw("flood", "honest", 10, 0, 1, 1, 0);
    assertTrue(List.of(BudgetReply.GRANTED, BudgetReply.DENIED).contains(honest.status()), honest.status());
    assertTrue(s.requests() > 0 && s.requests() <= 11 * bucketCap, "status answers: " + s.requests());
  }

  @Test
  void oneCallCountsAtMostItsCapOfEachCount() throws Exception {
    BudgetReply r = raw("capped", "c1", 5_000_000, 7_000_000, 0, 0, 0);
    assertEquals(1_000_000, r.requests());
    assertEquals(1_000_000, r.denied());
    BudgetReply over = raw("capped", "c1", 0, 0, 1_000_001, 1_000_001, 0);
    assertEquals(BudgetReply.DENIED, over.status(), "an ask above one call's cap is refused");
    assertEquals(2_000_000, over.denied(), "and counts the cap");
    // a budget whose ceiling is 10 calls a second: one call stands for 10^8
    BudgetKeys k = new BudgetKeys("few-calls");
    BudgetReply few = BudgetReply.parse(store.run(LuaScript.BUDGET,
        new String[] {k.config(), k.window(), k.clients(), k.index(), k.pace()},
        "c1", "1", "900000000", "0", "0", "0", "100000", "10", "10", "enforce", "10").get(5, TimeUnit.SECONDS));
    assertEquals(100_000_000, few.requests());
    assertEquals(TrustArithmetic.callCap(10), few.requests());
  }

  @Test
  void theClientCapsWhatItSendsAsTheScriptDoes() {
    BudgetConfig seed = BudgetConfig.builder("x").build();
    BudgetCall call = new BudgetCall("x", TWO_TO_53, Long.MAX_VALUE, 3, 1, Long.MAX_VALUE, seed);
    assertEquals(1_000_000, call.requests());
    assertEquals(1_000_000, call.denied());
    assertEquals(3, call.retries());
    assertEquals(1_000_000, call.want());
    assertEquals(1, call.need());
    assertEquals(100_000_000, new BudgetCall("x", TWO_TO_53, 0, 0, 0, seed.toBuilder().maxCallsPerSecond(10).build())
        .requests());
  }

  /** Sets a slot of the ring, by the bucket it holds relative to the current one. */
  private static void plantRelative(WindowRing ring, long cur, int slot, long age, long q, long g, long d, long a, long l) {
    ring.plant((int) Math.floorMod(slot - age, 11L), cur - age, q, g, d, a, l);
  }

  @Test
  void aBrokenBucketCountsAsEmptyAndIsOverwrittenWhenItComesRound() throws Exception {
    raw("heal", "c1", 100, 0, 0, 0, 0);
    BudgetKeys k = new BudgetKeys("heal");
    WindowRing ring = new WindowRing(redis.server(), k);
    int slot = -1;
    long cur = 0;
    for (int i = 0; i < WindowRing.SLOTS; i++) {
      if (ring.get(i, WindowRing.T) != 0) {
        slot = i;
        cur = ring.get(i, WindowRing.T);
      }
    }
    long over = TrustArithmetic.bucketCap(1_000) + 1;
    plantRelative(ring, cur, slot, 0, -5, 0, 0, 0, 0); // the current bucket: a negative count
    plantRelative(ring, cur, slot, 1, 300, 0, 0, 0, 0); // a sound one
    plantRelative(ring, cur, slot, 2, 0, over, 0, 0, 0); // grants over the cap
    plantRelative(ring, cur, slot, 3, 0, 0, Long.MIN_VALUE, 0, 0); // past 2^63, wrapped
    // the balance, a client entry and the fleet record unreadable too
    redis.server().call("SET", k.pace(), "garbage");
    redis.server().call("HSET", k.clients(), "c1", "garbage", "", "also garbage");
    StatusReply s = status("heal");
    BudgetReply r = raw("heal", "c1", 7, 0, 0, 0, 0);
    if (r.requests() >= 300) { // (still within the planted buckets' window: else they moved on)
      assertEquals(300, s.requests(), "status counts the broken buckets as empty");
      assertEquals(0, s.retries());
      assertEquals(0, s.denied());
    }
    assertTrue(r.requests() == 307 || r.requests() == 7, "the broken current bucket starts afresh: " + r.requests());
    assertEquals(BudgetReply.COUNTED, r.status());
    assertEquals(1, r.activeClients(), "the client counted again");
    long[][] slots = ring.slots();
    long newest = java.util.Arrays.stream(slots).mapToLong(x -> x[WindowRing.T]).max().orElse(0);
    if (newest == cur) { // (the call came in the planted current bucket, not the next one on a loaded machine)
      assertEquals(7, slots[slot][WindowRing.Q], "overwritten in its bucket");
    }
    assertEquals(32L, (Long) redis.server().call("STRLEN", k.pace()), "a new balance written");
    assertTrue(String.valueOf(redis.server().call("HGET", k.clients(), "c1")).matches("\\d+:\\d+"));
  }
}
