package io.retrybudget.budget.redis.protocol;

import io.retrybudget.budget.redis.transport.RedisBudgetStore;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.internal.BudgetArithmetic;
import io.retrybudget.testing.RedisBinary;
import io.retrybudget.testing.RedisExtension;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The scripts of lua/ against a real Redis, called as any client would (EVALSHA by the store).
 * .ci/run runs this class a second time with REDIS_SERVER_BINARY=embedded (Redis 6.2).
 */
class LuaScriptTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();
  private static RedisBudgetStore store;
  private int nextSeq;

  @BeforeAll
  static void connect() {
    System.out.println("redis-server version under test: " + RedisBinary.version());
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

  private BudgetReply budget(String name, String client, long requests, long denied, int need, int want,
      long ratioPpm, int window, int floor, String mode) throws Exception {
    BudgetKeys k = new BudgetKeys(name);
    List<Object> raw = store.run(LuaScript.BUDGET, new String[] {k.config(), k.window(), k.clients(), k.index(), k.pace()},
        client, Integer.toString(++nextSeq), Long.toString(requests), Long.toString(denied),
        Integer.toString(need), Integer.toString(want), Long.toString(ratioPpm), Integer.toString(window),
        Integer.toString(floor), mode).get(5, TimeUnit.SECONDS);
    return BudgetReply.parse(raw);
  }

  private BudgetReply count(String name, long requests) throws Exception {
    return budget(name, "c1", requests, 0, 0, 0, 100_000, 100, 0, "enforce");
  }

  private BudgetReply acquire(String name) throws Exception {
    return budget(name, "c1", 0, 0, 1, 1, 100_000, 100, 0, "enforce");
  }

  /**
   * Counts first attempts into a budget with a one-hour window (buckets of 360 s), ratio 0.1 and no
   * floor. A new budget's first attempts span one bucket while it is in its first: 360 s, so n first
   * attempts refill {@code n * 0.1 / 360} permits a second (tests run within one bucket).
   */
  private BudgetReply countHour(String name, long requests) throws Exception {
    return countIn(name, requests, 100_000, 3600, 0);
  }

  /** Counts {@code requests} first attempts in calls of at most 10^6 each (what one call may report). */
  private BudgetReply countIn(String name, long requests, long ratioPpm, int window, int floor) throws Exception {
    BudgetReply r;
    long left = requests;
    do {
      long part = Math.min(left, 1_000_000L);
      r = budget(name, "c1", part, 0, 0, 0, ratioPpm, window, floor, "enforce");
      left -= part;
    } while (left > 0);
    return r;
  }

  private BudgetReply askHour(String name, int need, int want) throws Exception {
    return budget(name, "c1", 0, 0, need, want, 100_000, 3600, 0, "enforce");
  }

  private List<Object> status(String name) throws Exception {
    BudgetKeys k = new BudgetKeys(name);
    return store.run(LuaScript.STATUS, new String[] {k.config(), k.window(), k.pace(), k.clients()}, "100000", "10", "10", "enforce")
        .get(5, TimeUnit.SECONDS);
  }

  @Test
  void aBurstOfAsksGetsHalfASecondOfTheRateNotTheWindowsAllowance() throws Exception {
    // 360,000 first attempts over the 360 s they span: 1,000 a second, so the paced balance refills at
    // 100 permits a second and holds half a second of that, 50; the window's allowance (36,000) is
    // never spent at once
    countHour("api", 360_000);
    int granted = 0;
    int denied = 0;
    for (int i = 0; i < 150; i++) {
      BudgetReply r = askHour("api", 1, 1);
      if (r.status().equals(BudgetReply.GRANTED)) {
        granted++;
        assertEquals(1, r.granted());
        assertEquals(50 - granted, r.available(), "what is left after this grant");
      } else {
        assertEquals(BudgetReply.DENIED, r.status());
        assertEquals(0, r.granted());
        assertEquals(0, r.available());
        assertEquals(10, r.nextGrantMillis(), "refills at 100 permits a second: the next one in 10 ms");
        denied++;
      }
    }
    assertEquals(50, granted);
    assertEquals(100, denied);
    List<Object> s = status("api");
    assertEquals(360_000L, s.get(1));
    assertEquals(50L, s.get(2));
    assertEquals(100L, s.get(3));
    assertEquals(36_000L, s.get(4), "the window's allowance, shown");
    assertEquals("0.000139", s.get(10));
    assertEquals(0L, s.get(12), "nothing grantable now");
    assertEquals(100_000_000L, s.get(14), "refills at 100 permits a second, in micro-permits");
    assertEquals(2_000L, s.get(15), "max_calls_per_s: the default");
  }

  @Test
  void theFloorIsForTheWholeFleetNotPerClientAndPaced() throws Exception {
    long start = System.nanoTime();
    int granted = 0;
    for (int i = 0; i < 50; i++) {
      // five different clients ask; the floor (2/s) is shared by all of them and paced: the balance
      // holds half a second of it (1 permit) and refills 2 a second, not the window's 20 at once
      BudgetReply r = budget("floor", "client-" + (i % 5), 0, 0, 1, 1, 100_000, 10, 2, "enforce");
      if (r.status().equals(BudgetReply.GRANTED)) {
        granted++;
      }
    }
    long tookMs = (System.nanoTime() - start) / 1_000_000 + 1;
    assertTrue(granted >= 1, "the balance starts with half a second of the floor: " + granted);
    assertTrue(granted <= 1 + tookMs * 2 / 1000, granted + " grants in " + tookMs + " ms");
  }

  @Test
  void allOrNoneAndLeases() throws Exception {
    countHour("batch", 72_000); // 200 a second: refills 20 permits a second and holds 10
    BudgetReply five = askHour("batch", 5, 5);
    assertEquals(5, five.granted());
    BudgetReply six = askHour("batch", 6, 6);
    assertEquals(BudgetReply.DENIED, six.status());
    assertEquals(6, six.denied(), "all-or-none refusal counts every permit asked for");
    BudgetReply lease = askHour("batch", 1, 8);
    assertEquals(5, lease.granted(), "a lease takes what is left, up to what was wanted");
    assertEquals(10, lease.retries());
    assertEquals(0, lease.available());
  }

  @Test
  void firstClientSeedsConfigurationAndNobodyOverwritesIt() throws Exception {
    budget("seeded", "a", 10, 0, 0, 0, 200_000, 20, 3, "shadow");
    BudgetReply other = budget("seeded", "b", 10, 0, 0, 0, 500_000, 5, 7, "enforce");
    assertEquals(200_000, other.ratioPpm());
    assertEquals(20, other.windowSeconds());
    assertEquals(3, other.minRetriesPerSecond());
    assertEquals("shadow", other.mode());
    assertEquals(20, other.requests());
  }

  @Test
  void shadowModeGrantsButCountsWouldDeny() throws Exception {
    budget("shadowed", "c1", 10, 0, 0, 0, 100_000, 10, 0, "shadow"); // 1 a second: the balance holds 1 permit
    BudgetReply first = budget("shadowed", "c1", 0, 0, 1, 1, 100_000, 10, 0, "shadow");
    BudgetReply second = budget("shadowed", "c1", 0, 0, 1, 1, 100_000, 10, 0, "shadow");
    assertEquals(BudgetReply.GRANTED, first.status());
    assertEquals(BudgetReply.SHADOW, second.status());
    assertEquals(1, second.granted());
    assertEquals(1, second.denied());
    assertEquals(2, second.retries());
  }

  @Test
  void aCallSeenBeforeIsNotAppliedTwice() throws Exception {
    BudgetKeys k = new BudgetKeys("dedupe");
    String[] keys = {k.config(), k.window(), k.clients(), k.index(), k.pace()};
    String[] args = {"client-x", "7", "40", "2", "0", "0", "100000", "100", "0", "enforce"};
    BudgetReply once = BudgetReply.parse(store.run(LuaScript.BUDGET, keys, args).get(5, TimeUnit.SECONDS));
    BudgetReply again = BudgetReply.parse(store.run(LuaScript.BUDGET, keys, args).get(5, TimeUnit.SECONDS));
    String[] older = args.clone();
    older[1] = "6";
    BudgetReply late = BudgetReply.parse(store.run(LuaScript.BUDGET, keys, older).get(5, TimeUnit.SECONDS));
    assertEquals(BudgetReply.COUNTED, once.status());
    assertEquals(BudgetReply.STALE, again.status());
    assertEquals(BudgetReply.STALE, late.status());
    assertEquals(40, late.requests());
    assertEquals(2, late.denied());
    // another client with the same sequence number is a different call
    String[] otherClient = args.clone();
    otherClient[0] = "client-y";
    BudgetReply other = BudgetReply.parse(store.run(LuaScript.BUDGET, keys, otherClient).get(5, TimeUnit.SECONDS));
    assertEquals(80, other.requests());
    assertEquals(2, other.activeClients());
  }

  @Test
  void bucketsLeaveTheWindowGradually() throws Exception {
    assertLeaving("sliding-recent", 5_000, 100);
    assertLeaving("sliding-old", 100_000 + 1_000, 0);
  }

  /**
   * Plants a leaving bucket whose last grant was {@code grantAgeMs} ago and checks what the window
   * counts of it: its grants in full while the last one is less than a window (100 s) old, its
   * first attempts by the share still inside.
   */
  private void assertLeaving(String name, long grantAgeMs, long expectedRetries) throws Exception {
    BudgetReply now = count(name, 500); // window 100 s: buckets of 10 s
    BudgetKeys k = new BudgetKeys(name);
    WindowRing ring = new WindowRing(redis.server(), k);
    long cur = -1;
    int slot = -1;
    for (int i = 0; i < WindowRing.SLOTS; i++) {
      if (ring.get(i, WindowRing.T) != 0) {
        cur = ring.get(i, WindowRing.T);
        slot = i;
      }
    }
    assertTrue(slot >= 0);
    @SuppressWarnings("unchecked")
    List<Object> time = (List<Object>) redis.server().call("TIME");
    long nowMs = Long.parseLong((String) time.get(0)) * 1000 + Long.parseLong((String) time.get(1)) / 1000;
    // the ring has 11 slots: bucket cur - n lives in slot (slot - n) mod 11
    ring.plant((slot + 2) % 11, cur - 9, 300, 30, 0, 0, nowMs - 80_000); // inside the window: counts fully
    ring.plant((slot + 1) % 11, cur - 10, 1000, 100, 0, 0, nowMs - grantAgeMs); // leaving
    ring.plant((slot + 10) % 11, cur - 12, 7000, 700, 0, 0, nowMs - 115_000); // gone
    BudgetReply after = count(name, 0);
    long leaving = after.requests() - now.requests() - 300;
    assertTrue(leaving >= 0 && leaving <= 1000, "share of the leaving bucket's first attempts: " + leaving);
    assertEquals(30 + expectedRetries, after.retries(), "grants of the leaving bucket, last one " + grantAgeMs + " ms old");
  }

  @Test
  void theRingIsLaidOutAsDocumented() throws Exception {
    count("layout", 100); // ratio 0.1, floor 0, 1 a second over 100 s: one permit
    acquire("layout");
    acquire("layout"); // refused
    BudgetKeys k = new BudgetKeys("layout");
    assertEquals(8 + 11 * 48L, (Long) redis.server().call("STRLEN", k.window()));
    long[][] slots = new WindowRing(redis.server(), k).slots();
    int used = 0;
    for (long[] slot : slots) {
      if (slot[WindowRing.T] != 0) {
        used++;
        assertEquals(100, slot[WindowRing.Q]);
        assertEquals(1, slot[WindowRing.G]);
        assertEquals(1, slot[WindowRing.D]);
        assertEquals(1, slot[WindowRing.A], "client c1 counted once");
        assertTrue(slot[WindowRing.L] > 1_700_000_000_000L, "last grant in Redis ms: " + slot[WindowRing.L]);
      }
    }
    assertEquals(1, used, "one bucket written");
  }

  @Test
  void aRingOfAnotherShapeStartsAfresh() throws Exception {
    BudgetKeys k = new BudgetKeys("foreign");
    redis.server().call("SET", k.window(), "not a ring");
    BudgetReply r = count("foreign", 3);
    assertEquals(3, r.requests());
    assertEquals(8 + 11 * 48L, (Long) redis.server().call("STRLEN", k.window()));
  }

  @Test
  void changingTheWindowStartsTheCountsAfresh() throws Exception {
    count("rewindow", 100);
    BudgetKeys k = new BudgetKeys("rewindow");
    store.run(LuaScript.CONFIGURE, new String[] {k.config(), k.index()}, "", "20", "", "", "100000", "10", "10", "enforce")
        .get(5, TimeUnit.SECONDS);
    BudgetReply r = count("rewindow", 1);
    assertEquals(20, r.windowSeconds());
    assertEquals(1, r.requests());
  }

  @Test
  void rejectsBadArgumentsNamingThem() {
    BudgetKeys k = new BudgetKeys("bad");
    String[] keys = {k.config(), k.window(), k.clients(), k.index(), k.pace()};
    ExecutionException e = assertThrows(ExecutionException.class, () -> store.run(LuaScript.BUDGET, keys,
        "c", "1", "-5", "0", "0", "0", "100000", "10", "10", "enforce").get(5, TimeUnit.SECONDS));
    assertTrue(e.getCause().getMessage().contains("invalid requests"), e.getCause().getMessage());
    e = assertThrows(ExecutionException.class, () -> store.run(LuaScript.BUDGET, keys,
        "c", "1", "0", "0", "2", "1", "100000", "10", "10", "enforce").get(5, TimeUnit.SECONDS));
    assertTrue(e.getCause().getMessage().contains("invalid want"), e.getCause().getMessage());
    e = assertThrows(ExecutionException.class, () -> store.run(LuaScript.CONFIGURE, new String[] {k.config(), k.index()},
        "0", "", "", "", "100000", "10", "10", "enforce").get(5, TimeUnit.SECONDS));
    assertTrue(e.getCause().getMessage().contains("invalid ratio_ppm"), e.getCause().getMessage());
    e = assertThrows(ExecutionException.class, () -> store.run(LuaScript.CONFIGURE, new String[] {k.config(), k.index()},
        "", "", "", "loud", "100000", "10", "10", "enforce").get(5, TimeUnit.SECONDS));
    assertTrue(e.getCause().getMessage().contains("invalid mode"), e.getCause().getMessage());
    assertEquals(0L, redis.server().call("EXISTS", k.config()), "nothing half-written");
  }

  @Test
  void configureKeepsFieldsLeftOut() throws Exception {
    BudgetKeys k = new BudgetKeys("conf");
    List<Object> first = store.run(LuaScript.CONFIGURE, new String[] {k.config(), k.index()},
        "250000", "", "", "", "100000", "10", "10", "enforce").get(5, TimeUnit.SECONDS);
    assertEquals(List.of(250000L, 10L, 10L, "enforce", 2000L), first);
    List<Object> second = store.run(LuaScript.CONFIGURE, new String[] {k.config(), k.index()},
        "", "30", "0", "shadow", "100000", "10", "10", "enforce").get(5, TimeUnit.SECONDS);
    assertEquals(List.of(250000L, 30L, 0L, "shadow", 2000L), second);
  }

  @Test
  void statusOfAnUnknownBudgetSaysSoAndCreatesNothing() throws Exception {
    List<Object> s = status("nobody");
    assertEquals(0L, s.get(0));
    assertEquals(0L, redis.server().call("DBSIZE"));
  }

  @Test
  void idleKeysExpire() throws Exception {
    budget("ttl", "c1", 5, 0, 0, 0, 100_000, 10, 1, "enforce");
    BudgetKeys k = new BudgetKeys("ttl");
    long winTtl = (Long) redis.server().call("PTTL", k.window());
    long cliTtl = (Long) redis.server().call("PTTL", k.clients());
    long cfgTtl = (Long) redis.server().call("PTTL", k.config());
    assertTrue(winTtl > 0 && winTtl <= 20_000, "window ttl " + winTtl);
    assertTrue(cliTtl > 0 && cliTtl <= 3 * io.retrybudget.budget.internal.FleetCount.EPOCH_MILLIS,
        "clients ttl: three fleet epochs " + cliTtl);
    assertTrue(cfgTtl > 0, "config ttl " + cfgTtl);
  }

  @Test
  void arithmeticMatchesTheJavaRuleForLargeCounts() throws Exception {
    long requests = 123_456_789L;
    BudgetReply r = countIn("big", requests, 123_457, 60, 17);
    assertEquals(BudgetArithmetic.allowance(123_457, requests, 17, 60), r.allowance());
    // a new budget: its first attempts span one bucket (6 s), or, when the 124 calls that carry them
    // (at most 10^6 a call: the trust model's cap) straddle a bucket's end, since the start of the first
    // bucket (6 to 12 s, on Redis's clock): the rate is the Java rule's for one of those spans, exactly
    long refill = r.refillPpm();
    boolean matches = false;
    for (long span = 6_000; span <= 12_000 && !matches; span++) {
      matches = io.retrybudget.budget.internal.PaceArithmetic.refillRate(requests, span, 123_457, 17 * 1_000_000L) == refill;
    }
    assertTrue(matches, "refill " + refill + " is the Java rule's for a span of 6-12 s; for 6 s it is "
        + io.retrybudget.budget.internal.PaceArithmetic.refillRate(requests, 6_000, 123_457, 17 * 1_000_000L));
    assertEquals(io.retrybudget.budget.internal.PaceArithmetic.cap(refill) / 1_000_000, r.available(),
        "a new balance after this much traffic starts full");
  }

  @Test
  void everyKeyOfABudgetSharesOneHashTag() {
    BudgetKeys k = new BudgetKeys("payments-api");
    for (String key : List.of(k.config(), k.window(), k.clients())) {
      assertTrue(key.startsWith("rb:v2:{payments-api}:"), key);
      assertEquals("payments-api", BudgetKeys.budgetOf(key));
    }
    assertEquals(null, BudgetKeys.budgetOf("other:{x}:y"));
    assertFalse(BudgetKeys.budgetOf("rb:v2:{bad name}:cfg") != null);
  }

  // ---- bad state in Redis: refused before any write, naming key and field ----

  static java.util.stream.Stream<org.junit.jupiter.params.provider.Arguments> brokenStates() {
    BudgetKeys k = new BudgetKeys("broken");
    return java.util.stream.Stream.of(
        org.junit.jupiter.params.provider.Arguments.of(List.of("HSET", k.config(), "ratio_ppm", "nan"), k.config(), "ratio_ppm"),
        org.junit.jupiter.params.provider.Arguments.of(List.of("HSET", k.config(), "ratio_ppm", "inf"), k.config(), "ratio_ppm"),
        org.junit.jupiter.params.provider.Arguments.of(List.of("HSET", k.config(), "ratio_ppm", "0.5"), k.config(), "ratio_ppm"),
        org.junit.jupiter.params.provider.Arguments.of(List.of("HSET", k.config(), "min_rps", "inf"), k.config(), "min_rps"),
        org.junit.jupiter.params.provider.Arguments.of(List.of("HSET", k.config(), "min_rps", "-inf"), k.config(), "min_rps"),
        org.junit.jupiter.params.provider.Arguments.of(List.of("HSET", k.config(), "window_s", "1e300"), k.config(), "window_s"),
        org.junit.jupiter.params.provider.Arguments.of(List.of("HSET", k.config(), "window_s", "7200"), k.config(), "window_s"),
        org.junit.jupiter.params.provider.Arguments.of(List.of("HSET", k.config(), "mode", "loud"), k.config(), "mode"),
        org.junit.jupiter.params.provider.Arguments.of(List.of("SET", k.config(), "hello"), k.config(), "type"),
        org.junit.jupiter.params.provider.Arguments.of(List.of("HSET", k.window(), "a", "b"), k.window(), "type"),
        org.junit.jupiter.params.provider.Arguments.of(List.of("SET", k.clients(), "x"), k.clients(), "type"),
        org.junit.jupiter.params.provider.Arguments.of(List.of("SET", k.index(), "x"), k.index(), "type"),
        org.junit.jupiter.params.provider.Arguments.of(List.of("HSET", k.config(), "max_calls_per_s", "0"), k.config(), "max_calls_per_s"),
        org.junit.jupiter.params.provider.Arguments.of(List.of("HSET", k.config(), "max_calls_per_s", "1.5"), k.config(), "max_calls_per_s"),
        org.junit.jupiter.params.provider.Arguments.of(List.of("HSET", k.pace(), "a", "b"), k.pace(), "type"));
  }

  @org.junit.jupiter.params.ParameterizedTest
  @org.junit.jupiter.params.provider.MethodSource("brokenStates")
  void badStoredStateIsRefusedBeforeAnyWriteNamingKeyAndField(List<String> setup, String key, String field)
      throws Exception {
    redis.server().call(setup.toArray(new String[0]));
    BudgetKeys k = new BudgetKeys("broken");
    Object before = snapshot(k);
    BudgetScripts scripts = new BudgetScripts(store);
    ExecutionException e = assertThrows(ExecutionException.class, () -> scripts.budget(new BudgetCall("broken", 5, 0, 1, 1,
        io.retrybudget.budget.BudgetConfig.builder("broken").build()), new ClientSequence("c1")).get(5, TimeUnit.SECONDS));
    BrokenBudgetException b = assertInstanceOf(BrokenBudgetException.class, e.getCause());
    assertEquals("broken", b.budget());
    assertEquals(key, b.key());
    assertEquals(field, b.field());
    assertTrue(b.getMessage().contains(key) && b.getMessage().contains(field), b.getMessage());
    assertEquals(before, snapshot(k), "nothing written");
    if (!key.equals(k.clients()) && !key.equals(k.index())) {
      // status reads the configuration and window only
      ExecutionException s = assertThrows(ExecutionException.class,
          () -> scripts.status("broken", io.retrybudget.budget.BudgetConfig.builder("broken").build()).get(5, TimeUnit.SECONDS));
      assertEquals(field, assertInstanceOf(BrokenBudgetException.class, s.getCause()).field());
    }
    // delete always works, whatever the keys hold
    // (a paced balance alone is no budget: deleted, but not reported as one)
    assertTrue(scripts.delete("broken").get(5, TimeUnit.SECONDS) || key.equals(k.index()) || key.equals(k.pace()));
    assertEquals(0L, redis.server().call("EXISTS", k.config(), k.window(), k.clients(), k.pace()));
  }

  /** Every key of the budget with its type, TTL and contents. */
  private static Object snapshot(BudgetKeys k) {
    List<Object> out = new java.util.ArrayList<>();
    for (String key : List.of(k.config(), k.window(), k.clients(), k.index(), k.pace())) {
      Object type = redis.server().call("TYPE", key);
      out.add(List.of(key, type, redis.server().call("PTTL", key), String.valueOf(switch (String.valueOf(type)) {
        case "hash" -> redis.server().call("HGETALL", key);
        case "string" -> redis.server().call("GET", key);
        case "zset" -> redis.server().call("ZRANGE", key, "0", "-1", "WITHSCORES");
        default -> "";
      })));
    }
    return out;
  }

  @Test
  void aSeedThatIsOutOfRangeIsRefusedAndNothingIsWritten() throws Exception {
    BudgetKeys k = new BudgetKeys("badseed");
    ExecutionException e = assertThrows(ExecutionException.class, () -> store.run(LuaScript.BUDGET,
        new String[] {k.config(), k.window(), k.clients(), k.index(), k.pace()},
        "c", "1", "0", "0", "0", "0", "100000", "1e300", "10", "enforce").get(5, TimeUnit.SECONDS));
    assertTrue(e.getCause().getMessage().contains("invalid seed window_s"), e.getCause().getMessage());
    assertEquals(0L, redis.server().call("DBSIZE"), "nothing half-written");
  }

  @Test
  void withoutASeedABudgetWithNoConfigurationIsMissingAndNothingIsCreated() throws Exception {
    BudgetScripts scripts = new BudgetScripts(store);
    BudgetReply r = scripts.budget(new BudgetCall("typo", 5, 0, 1, 1, null)).get(5, TimeUnit.SECONDS);
    assertEquals(BudgetReply.MISSING, r.status());
    assertFalse(r.applied());
    assertEquals(0L, redis.server().call("DBSIZE"));
  }

  @Test
  void aSeedIsMarkedAsSuchAndConfigureMarksItSet() throws Exception {
    BudgetScripts scripts = new BudgetScripts(store);
    io.retrybudget.budget.BudgetConfig d = io.retrybudget.budget.BudgetConfig.builder("d").build();
    scripts.budget(new BudgetCall("marked", 1, 0, 0, 0, io.retrybudget.budget.BudgetConfig.builder("marked").ratio(0.3).build()))
        .get(5, TimeUnit.SECONDS);
    StatusReply seeded = scripts.status("marked", d).get(5, TimeUnit.SECONDS);
    assertEquals(StatusReply.Source.SEED, seeded.source());
    assertEquals(300_000, seeded.settings().ratioPpm());
    scripts.configure("marked", new ConfigChange(null, 20, null, null), d).get(5, TimeUnit.SECONDS);
    StatusReply set = scripts.status("marked", d).get(5, TimeUnit.SECONDS);
    assertEquals(StatusReply.Source.SET, set.source());
    assertEquals(new BudgetSettings(300_000, 20, 10, "enforce"), set.settings(), "fields left out kept");
    assertEquals(StatusReply.Source.NONE, scripts.status("unknown", d).get(5, TimeUnit.SECONDS).source());
  }

  @Test
  void theIndexListsBudgetsAndDeleteRemovesEveryKeyAndTheEntry() throws Exception {
    BudgetScripts scripts = new BudgetScripts(store);
    io.retrybudget.budget.BudgetConfig d = io.retrybudget.budget.BudgetConfig.builder("d").build();
    for (int i = 0; i < 5; i++) {
      redis.server().call("SET", "unrelated-" + i, "x");
    }
    budget("listed-a", "c1", 3, 0, 1, 1, 100_000, 10, 1, "enforce");
    scripts.configure("listed-b", new ConfigChange(200_000L, null, null, null), d).get(5, TimeUnit.SECONDS);
    CompletableFuture<Void> never = new CompletableFuture<>();
    assertEquals(List.of("listed-a", "listed-b"), List.copyOf(scripts.listNames(never).get(5, TimeUnit.SECONDS)));
    assertTrue(scripts.delete("listed-a").get(5, TimeUnit.SECONDS));
    assertFalse(scripts.delete("listed-a").get(5, TimeUnit.SECONDS), "already gone");
    BudgetKeys k = new BudgetKeys("listed-a");
    assertEquals(0L, redis.server().call("EXISTS", k.config(), k.window(), k.clients()));
    assertEquals(List.of("listed-b"), List.copyOf(scripts.listNames(never).get(5, TimeUnit.SECONDS)));
  }

  // ---- paced admission ----

  /** Redis's clock in ms, as the scripts read it. */
  private static long redisNowMs() {
    @SuppressWarnings("unchecked")
    List<Object> time = (List<Object>) redis.server().call("TIME");
    return Long.parseLong((String) time.get(0)) * 1000 + Long.parseLong((String) time.get(1)) / 1000;
  }

  /** Plants a budget's paced balance: micro-permits, and the Redis ms it was last brought up to date. */
  private static void plantBalance(String name, long balancePpm, long atMs) {
    redis.server().call("EVAL", "return redis.call('SET', KEYS[1], struct.pack('<i8i8', tonumber(ARGV[1]), tonumber(ARGV[2])))",
        "1", new BudgetKeys(name).pace(), Long.toString(balancePpm), Long.toString(atMs));
  }

  private static long[] readBalance(String name) {
    @SuppressWarnings("unchecked")
    List<Object> r = (List<Object>) redis.server().call("EVAL",
        "local v = redis.call('GET', KEYS[1]) return { struct.unpack('<i8i8', v) }", "1", new BudgetKeys(name).pace());
    return new long[] {(Long) r.get(0), (Long) r.get(1)};
  }

  @Test
  void theFloorRefillsTheBalanceAtItsRate() throws Exception {
    budget("refill", "c1", 0, 0, 0, 0, 100_000, 10, 10, "enforce"); // floor 10 a second
    long plantedAt = redisNowMs() - 500;
    plantBalance("refill", 0, plantedAt); // empty, last brought up to date 500 ms ago: 5 permits by now
    int granted = 0;
    BudgetReply r;
    do {
      r = budget("refill", "c1", 0, 0, 1, 1, 100_000, 10, 10, "enforce");
      if (r.status().equals(BudgetReply.GRANTED)) {
        granted++;
      }
    } while (r.status().equals(BudgetReply.GRANTED) && granted < 100);
    long sincePlant = redisNowMs() - plantedAt;
    assertTrue(granted >= 5, granted + " granted: 500 ms of a floor of 10 a second is 5");
    assertTrue(granted <= sincePlant * 10 / 1000, granted + " granted in " + sincePlant + " ms since the plant");
    assertTrue(r.nextGrantMillis() > 0 && r.nextGrantMillis() <= 100, "next permit within 100 ms: " + r.nextGrantMillis());
    assertEquals(10_000_000L, r.refillPpm(), "no traffic: refills at the floor, 10 permits a second");
  }

  @Test
  void firstAttemptsDepositTheRatioAndTheBalanceIsCapped() throws Exception {
    countHour("deposit", 3_600_000); // 10,000 a second: refills 1,000 permits a second, holds 500
    long far = redisNowMs() + 3_600_000; // "last updated" in the future: no floor refill (there is none anyway)
    plantBalance("deposit", 0, far);
    BudgetReply r = countHour("deposit", 50); // 50 first attempts at ratio 0.1: 5 permits
    assertEquals(5, r.available());
    assertEquals(0, r.nextGrantMillis());
    int granted = 0;
    while (askHour("deposit", 1, 1).status().equals(BudgetReply.GRANTED)) {
      granted++;
    }
    assertEquals(5, granted, "exactly the deposits");
    assertEquals(0, readBalance("deposit")[0], "whole permits withdrawn");
    countHour("deposit", 7); // 0.7 of a permit: none yet
    assertEquals(BudgetReply.DENIED, askHour("deposit", 1, 1).status());
    assertEquals(700_000L, readBalance("deposit")[0], "fractions are kept, in micro-permits");
    plantBalance("deposit", 1L << 52, redisNowMs());
    BudgetReply capped = countHour("deposit", 0);
    assertEquals(capped.refillPpm() / 2, readBalance("deposit")[0], "never above the cap");
    assertEquals(500L, capped.available(), "half a second of deposits at 10,000 first attempts a second");
  }

  @Test
  void retriesAClientsFallbackGrantedAreCountedAndSpentFromTheBalance() throws Exception {
    countHour("reported", 3_600_000); // a cap of 500 permits
    plantBalance("reported", 0, redisNowMs() + 3_600_000);
    BudgetKeys k = new BudgetKeys("reported");
    String[] keys = {k.config(), k.window(), k.clients(), k.index(), k.pace()};
    // 50 first attempts deposit 5 permits; the fallback granted 3 retries while Redis did not answer
    BudgetReply r = BudgetReply.parse(store.run(LuaScript.BUDGET, keys, "c1", Integer.toString(++nextSeq), "50", "0",
        "0", "0", "100000", "3600", "0", "enforce", "", "3").get(5, TimeUnit.SECONDS));
    assertEquals(BudgetReply.COUNTED, r.status());
    assertEquals(2, r.available(), "5 deposited, 3 spent by the fallback");
    assertEquals(3, r.retries(), "counted as retries in the window");
    // more than the balance holds: the balance is emptied, the retries all counted
    r = BudgetReply.parse(store.run(LuaScript.BUDGET, keys, "c1", Integer.toString(++nextSeq), "0", "0",
        "0", "0", "100000", "3600", "0", "enforce", "", "10").get(5, TimeUnit.SECONDS));
    assertEquals(0, r.available());
    assertEquals(0, readBalance("reported")[0]);
    assertEquals(13, r.retries());
    ExecutionException e = assertThrows(ExecutionException.class, () -> store.run(LuaScript.BUDGET, keys,
        "c1", Integer.toString(++nextSeq), "0", "0", "0", "0", "100000", "3600", "0", "enforce", "", "-1").get(5, TimeUnit.SECONDS));
    assertTrue(e.getCause().getMessage().contains("invalid retries"), e.getCause().getMessage());
    // a call seen before reports nothing twice
    r = BudgetReply.parse(store.run(LuaScript.BUDGET, keys, "c1", "1", "0", "0", "0", "0", "100000", "3600", "0",
        "enforce", "", "7").get(5, TimeUnit.SECONDS));
    assertEquals(BudgetReply.STALE, r.status());
    assertEquals(13, r.retries());
  }

  @Test
  void aYoungBudgetsRateIsOverTheTimeItsFirstAttemptsSpan() throws Exception {
    // a new budget with a 10 s window that has had 1,000 first attempts in its first second: that is
    // 1,000 a second (not 100, as over the whole window), so it refills 100 permits a second
    BudgetReply young = budget("young", "c1", 1_000, 0, 0, 0, 100_000, 10, 0, "enforce");
    long spanMs = 1_000; // one bucket, while the budget is in its first
    assertEquals(io.retrybudget.budget.internal.PaceArithmetic.refillRate(1_000, spanMs, 100_000, 0), young.refillPpm());
    assertEquals(100_000_000L, young.refillPpm());
    // a budget whose window has had first attempts for a whole window (the leaving bucket holds some):
    // over the window
    BudgetReply mature = budget("mature", "c1", 1, 0, 0, 0, 100_000, 10, 0, "enforce");
    BudgetKeys k = new BudgetKeys("mature");
    WindowRing ring = new WindowRing(redis.server(), k);
    int slot = -1;
    long cur = 0;
    for (int i = 0; i < WindowRing.SLOTS; i++) {
      if (ring.get(i, WindowRing.T) != 0) {
        slot = i;
        cur = ring.get(i, WindowRing.T);
      }
    }
    ring.plant(slot, cur, 999, 0, 0, 1, 0);
    ring.plant((slot + 2) % 11, cur - 9, 100, 0, 0, 0, 0); // nine buckets ago
    ring.plant((slot + 1) % 11, cur - 10, 1_000_000, 0, 0, 0, 0); // leaving: its share counts
    BudgetReply r = budget("mature", "c1", 0, 0, 0, 0, 100_000, 10, 0, "enforce");
    if (redisNowMs() / 1_000 == cur) { // (still in that bucket: else the planted ones moved on)
      assertEquals(io.retrybudget.budget.internal.PaceArithmetic.refillRate(r.requests(), 10_000, 100_000, 0), r.refillPpm(),
          "over the whole window once its first attempts span it");
    }
    assertTrue(mature.refillPpm() > 0);
  }

  @Test
  void aClockThatWentBackRefillsNothingAndDecidesOnTheBalance() throws Exception {
    budget("clockback", "c1", 0, 0, 0, 0, 100_000, 10, 10, "enforce");
    long now = redisNowMs();
    plantBalance("clockback", 0, now + 60_000); // written by a master whose clock ran a minute ahead
    BudgetReply r = budget("clockback", "c1", 0, 0, 1, 1, 100_000, 10, 10, "enforce");
    assertEquals(BudgetReply.DENIED, r.status());
    long[] after = readBalance("clockback");
    assertTrue(after[1] < now + 60_000, "the time moves to Redis's own: " + after[1]);
  }

  @Test
  void theBalanceExpiresWithTheWindowAndStatusReadsIt() throws Exception {
    countHour("pttl", 36_000); // 10 permits a second, 5 saved up
    BudgetKeys k = new BudgetKeys("pttl");
    long ttl = (Long) redis.server().call("PTTL", k.pace());
    assertTrue(ttl > 3_600_000 && ttl <= 7_200_000, "two windows: " + ttl);
    askHour("pttl", 1, 3);
    List<Object> s = status("pttl");
    assertEquals(16, s.size());
    assertEquals(2L, s.get(12), "5 permits, 3 leased");
    assertEquals(0L, s.get(13));
    // a caller of an older SDK passes two keys: still answered, the balance taken as full
    List<Object> old = store.run(LuaScript.STATUS, new String[] {k.config(), k.window()}, "100000", "3600", "0", "enforce")
        .get(5, TimeUnit.SECONDS);
    assertEquals(16, old.size());
    assertEquals(5L, old.get(12));
  }

  @Test
  void maxCallsPerSecondIsStoredWithTheConfiguration() throws Exception {
    BudgetScripts scripts = new BudgetScripts(store);
    io.retrybudget.budget.BudgetConfig seed = io.retrybudget.budget.BudgetConfig.builder("calls").maxCallsPerSecond(500).build();
    BudgetReply first = scripts.budget(new BudgetCall("calls", 1, 0, 0, 0, seed)).get(5, TimeUnit.SECONDS);
    assertEquals(500, first.maxCallsPerSecond(), "a new budget's seed stores it");
    assertEquals("500", redis.server().call("HGET", new BudgetKeys("calls").config(), "max_calls_per_s"));
    io.retrybudget.budget.BudgetConfig other = seed.toBuilder().maxCallsPerSecond(9_000).build();
    assertEquals(500, scripts.budget(new BudgetCall("calls", 1, 0, 0, 0, other)).get(5, TimeUnit.SECONDS).maxCallsPerSecond());
    BudgetSettings set = scripts.configure("calls", new ConfigChange(null, null, null, null, 3_000), seed).get(5, TimeUnit.SECONDS);
    assertEquals(3_000, set.maxCallsPerSecond());
    assertEquals(3_000, scripts.budget(new BudgetCall("calls", 1, 0, 0, 0, seed)).get(5, TimeUnit.SECONDS).maxCallsPerSecond(),
        "a change is in the next reply of every client");
    assertEquals(3_000, scripts.configure("calls", new ConfigChange(200_000L, null, null, null), seed)
        .get(5, TimeUnit.SECONDS).maxCallsPerSecond(), "kept when left out");
    assertEquals(3_000, scripts.status("calls", seed).get(5, TimeUnit.SECONDS).settings().maxCallsPerSecond());
    ExecutionException e = assertThrows(ExecutionException.class,
        () -> scripts.configure("calls", new ConfigChange(null, null, null, null, 0), seed).get(5, TimeUnit.SECONDS));
    assertTrue(e.getCause().getMessage().contains("invalid max_calls_per_s"), e.getCause().getMessage());
    // a configuration stored before the field existed reads as the default; a seed does not add it
    BudgetKeys legacy = new BudgetKeys("legacy");
    redis.server().call("HSET", legacy.config(), "ratio_ppm", "100000", "window_s", "10", "min_rps", "10", "mode", "enforce");
    assertEquals(2_000, scripts.budget(new BudgetCall("legacy", 1, 0, 0, 0, seed)).get(5, TimeUnit.SECONDS).maxCallsPerSecond());
    assertEquals(null, redis.server().call("HGET", legacy.config(), "max_calls_per_s"));
    ExecutionException badSeed = assertThrows(ExecutionException.class, () -> store.run(LuaScript.BUDGET,
        new String[] {legacy.config(), legacy.window(), legacy.clients(), legacy.index(), legacy.pace()},
        "c", "9", "0", "0", "0", "0", "100000", "10", "10", "enforce", "0").get(5, TimeUnit.SECONDS));
    assertTrue(badSeed.getCause().getMessage().contains("invalid seed max_calls_per_s"), badSeed.getCause().getMessage());
  }

  @Test
  void aCallerWithoutThePaceKeyIsRefused() {
    BudgetKeys k = new BudgetKeys("fourkeys");
    ExecutionException e = assertThrows(ExecutionException.class, () -> store.run(LuaScript.BUDGET,
        new String[] {k.config(), k.window(), k.clients(), k.index()},
        "c", "1", "5", "0", "0", "0", "100000", "10", "10", "enforce").get(5, TimeUnit.SECONDS));
    assertTrue(e.getCause().getMessage().contains("invalid keys"), e.getCause().getMessage());
    assertEquals(0L, redis.server().call("DBSIZE"));
  }

  /**
   * What the assembled {@code script} holds of fragment {@code name}: the text between the fragment's
   * begin and end lines, as Redis runs it.
   */
  static String assembledFragment(LuaScript script, String name) {
    String body = script.body();
    String open = "-- fragments/" + name + ": begin";
    String close = "-- fragments/" + name + ": end";
    int begin = body.indexOf(open);
    int end = body.indexOf(close);
    assertTrue(begin >= 0 && end > begin, script + " holds fragment " + name);
    assertEquals(-1, body.indexOf(open, begin + 1), script + " holds fragment " + name + " once");
    return body.substring(begin, end + close.length());
  }

  /**
   * budget.lua and status.lua as Redis sees them: every include replaced by its fragment, verbatim,
   * nothing left to include; and what lua/assemble.sh prints (for callers outside Java) is the
   * same text, byte for byte.
   */
  @Test
  void theScriptsRedisRunsAreAssembledFromOneTextOfEachFragment() throws Exception {
    for (LuaScript script : List.of(LuaScript.BUDGET, LuaScript.STATUS)) {
      assertFalse(script.body().contains("\n--#include "), script + " has no include left");
      for (String fragment : List.of("pace.lua", "trust.lua", "fleet.lua")) {
        assertEquals(LuaScript.fragment(fragment).stripTrailing(), assembledFragment(script, fragment),
            script + " holds " + fragment + " as it is");
      }
      java.nio.file.Path sh = java.nio.file.Path.of("..", "lua", "assemble.sh");
      Process p = new ProcessBuilder("bash", sh.toString(), script.name()).redirectErrorStream(true).start();
      String printed = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
      assertEquals(0, p.waitFor(), printed);
      assertEquals(script.body(), printed, "lua/assemble.sh " + script.name() + " prints what Redis runs");
    }
    // a fragment that includes another is refused, not half-assembled
    IllegalStateException nested = assertThrows(IllegalStateException.class,
        () -> LuaScript.assemble("--#include a.lua\n", name -> "--#include b.lua\n"));
    assertTrue(nested.getMessage().contains("a.lua"), nested.getMessage());
    assertEquals("x\none\ntwo\ny\n", LuaScript.assemble("x\n--#include f.lua\ny\n", name -> "one\ntwo\n"));
  }

  /**
   * Parity of the rule itself: the pace functions as assembled into budget.lua and into status.lua,
   * each run inside Redis on random inputs (edges included), answer what PaceArithmetic answers.
   */
  @Test
  void thePacedRuleInLuaIsThePacedRuleInJava() throws Exception {
    assertEquals(4_000, paceParity(LuaScript.BUDGET));
    assertEquals(4_000, paceParity(LuaScript.STATUS));
  }

  /** The parity of {@code script}'s assembled pace functions with PaceArithmetic: the cases checked. */
  private int paceParity(LuaScript script) throws Exception {
    String harness = assembledFragment(script, "pace.lua") + "\n" + """
        local out = {}
        for i = 0, tonumber(ARGV[1]) - 1 do
          local o = 1 + i * 9
          local requests, window_s, ratio, min_rps = tonumber(ARGV[o + 1]), tonumber(ARGV[o + 2]), tonumber(ARGV[o + 3]), tonumber(ARGV[o + 4])
          local balance, at, now, add = tonumber(ARGV[o + 5]), tonumber(ARGV[o + 6]), tonumber(ARGV[o + 7]), tonumber(ARGV[o + 8])
          local bucket_ms = window_s * 100
          local cur = math.floor(now / bucket_ms)
          local oldest = cur - tonumber(ARGV[o + 9])
          if tonumber(ARGV[o + 9]) < 0 then oldest = nil end
          local span = pace_span(oldest, cur, now, bucket_ms, window_s * 1000)
          out[#out + 1] = span
          local refill = pace_rate(requests, span, ratio, min_rps)
          local cap = pace_cap(refill)
          local b = pace_refill(balance, at, now, add, ratio, min_rps, cap)
          out[#out + 1] = pace_start(requests, window_s, ratio, min_rps, cap)
          out[#out + 1] = refill
          out[#out + 1] = cap
          out[#out + 1] = b
          out[#out + 1] = math.floor(b / PPM)
          out[#out + 1] = pace_next_ms(b, refill)
        end
        return out
        """;
    long seed = System.nanoTime();
    java.util.SplittableRandom random = new java.util.SplittableRandom(seed);
    int cases = 0;
    for (int batch = 0; batch < 20; batch++) {
      int n = 200;
      List<String> args = new java.util.ArrayList<>();
      args.add(Integer.toString(n));
      long[][] inputs = new long[n][];
      for (int i = 0; i < n; i++) {
        long window = pick(random, 1, 3600, 1, 10, 3600);
        long ratio = pick(random, 1, 1_000_000, 1, 100_000, 1_000_000);
        long minRps = pick(random, 0, 1_000_000, 0, 10, 1_000_000);
        long requests = pick(random, 0, 1L << 53, 0, window - 1, 1_000_000_000L * window, 1_000_000_000L * window / 10, 1L << 53);
        long cap = io.retrybudget.budget.internal.PaceArithmetic.cap(
            io.retrybudget.budget.internal.PaceArithmetic.refillRate(requests, window * 1000, ratio, minRps * 1_000_000));
        long balance = pick(random, 0, 1L << 53, 0, 999_999, cap, cap + 1, 1L << 53);
        long now = 1_700_000_000_000L + random.nextLong(1_000_000_000L);
        long at = now - pick(random, -100_000, 20_000_000, 0, 8_999_999, 9_000_000, -1);
        long add = pick(random, 0, 1L << 53, 0, 8_999_999_999L, 9_000_000_000L, 1L << 53);
        long age = pick(random, -1, 12, -1, 0, 9, 10, 11); // how many buckets ago the oldest with first attempts; -1: none
        inputs[i] = new long[] {requests, window, ratio, minRps, balance, at, now, add, age};
        for (long v : inputs[i]) {
          args.add(Long.toString(v));
        }
      }
      @SuppressWarnings("unchecked")
      List<Object> out = (List<Object>) redis.server().call(java.util.stream.Stream.concat(
          java.util.stream.Stream.of("EVAL", harness, "0"), args.stream()).toArray(String[]::new));
      for (int i = 0; i < n; i++) {
        long[] in = inputs[i];
        long bucketMs = in[1] * 100;
        long cur = Math.floorDiv(in[6], bucketMs);
        long span = io.retrybudget.budget.internal.PaceArithmetic.span(in[8] < 0 ? Long.MIN_VALUE : cur - in[8], cur, in[6],
            bucketMs, in[1] * 1000);
        long refill = io.retrybudget.budget.internal.PaceArithmetic.refillRate(in[0], span, in[2], in[3] * 1_000_000);
        long cap = io.retrybudget.budget.internal.PaceArithmetic.cap(refill);
        long b = io.retrybudget.budget.internal.PaceArithmetic.refill(in[4], in[5], in[6], in[7], in[2], in[3] * 1_000_000, cap);
        String what = script + ", seed " + seed + ", inputs " + java.util.Arrays.toString(in);
        int o = 7 * i;
        assertEquals(span, (Long) out.get(o), "span, " + what);
        assertEquals(io.retrybudget.budget.internal.PaceArithmetic.start(in[0], in[1], in[2], in[3] * 1_000_000, cap),
            (Long) out.get(o + 1), "start, " + what);
        assertEquals(refill, (Long) out.get(o + 2), "refill rate, " + what);
        assertEquals(cap, (Long) out.get(o + 3), "cap, " + what);
        assertEquals(b, (Long) out.get(o + 4), "balance, " + what);
        assertEquals(io.retrybudget.budget.internal.PaceArithmetic.available(b), (Long) out.get(o + 5), "available, " + what);
        assertEquals(io.retrybudget.budget.internal.PaceArithmetic.nextMillis(b, refill), (Long) out.get(o + 6), "next, " + what);
        cases++;
      }
    }
    return cases;
  }

  /** A random value in [lo, hi], or one of the edges, a third of the time. */
  private static long pick(java.util.SplittableRandom random, long lo, long hi, long... edges) {
    if (random.nextInt(3) == 0) {
      return Math.max(lo, Math.min(hi, edges[random.nextInt(edges.length)]));
    }
    return lo + (long) (random.nextDouble() * (hi - lo));
  }

  /**
   * Parity of whole calls: random sequences of counts, permit requests and leases through budget.lua
   * decide exactly as the Java model of the same call (window counts + PacedBalance). No floor and a
   * window of an hour, so that the few ms between calls change nothing.
   */
  @Test
  void budgetCallsDecideAsTheJavaModel() throws Exception {
    long seed = System.nanoTime();
    java.util.SplittableRandom random = new java.util.SplittableRandom(seed);
    for (int sequence = 0; sequence < 12; sequence++) {
      String name = "parity-" + sequence;
      // the budget is new, so its first attempts span one bucket (360 s) while every call stays in its
      // first bucket: a sequence that crosses into the next one stops there (the span grew)
      long bucketAtStart = redisNowMs() / 360_000;
      long ratio = pick(random, 1, 1_000_000, 1, 100_000, 1_000_000);
      String mode = random.nextInt(4) == 0 ? "shadow" : "enforce";
      io.retrybudget.budget.internal.PacedBalance model = new io.retrybudget.budget.internal.PacedBalance();
      long requests = 0;
      long retries = 0;
      long denied = 0;
      for (int step = 0; step < 25; step++) {
        long add = random.nextInt(3) == 0 ? 0 : random.nextLong(1, 50_000);
        long need = random.nextInt(3) == 0 ? 0 : random.nextLong(1, 6);
        long want = need + (random.nextBoolean() ? 0 : random.nextLong(0, 20));
        BudgetReply r = budget(name, "c1", add, 0, (int) need, (int) want, ratio, 3600, 0, mode);
        requests += add;
        long available = model.update(0, add, requests, 360_000, 3600, ratio, 0);
        String expected;
        long granted = 0;
        if (need == 0) {
          expected = BudgetReply.COUNTED;
        } else if (available >= need) {
          expected = BudgetReply.GRANTED;
          granted = Math.min(want, available);
          model.take(granted);
        } else if (mode.equals("shadow")) {
          expected = BudgetReply.SHADOW;
          granted = need;
          denied += need;
        } else {
          expected = BudgetReply.DENIED;
          denied += need;
        }
        retries += granted;
        String what = "seed " + seed + ", sequence " + sequence + ", step " + step;
        if (redisNowMs() / 360_000 != bucketAtStart) {
          break; // crossed a bucket boundary: the rest of this sequence is not comparable
        }
        assertEquals(expected, r.status(), what);
        assertEquals(granted, r.granted(), what);
        assertEquals(requests, r.requests(), what);
        assertEquals(retries, r.retries(), what);
        assertEquals(denied, r.denied(), what);
        assertEquals(io.retrybudget.budget.internal.PaceArithmetic.available(model.balance()), r.available(), what);
        assertEquals(model.nextMillis(), r.nextGrantMillis(), what);
        assertEquals(model.refillRate(), r.refillPpm(), what);
      }
    }
  }
}
