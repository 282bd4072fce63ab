package io.retrybudget.budget.redis;

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
    List<Object> raw = store.run(LuaScript.BUDGET, new String[] {k.config(), k.window(), k.clients(), k.index()},
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

  private List<Object> status(String name) throws Exception {
    BudgetKeys k = new BudgetKeys(name);
    return store.run(LuaScript.STATUS, new String[] {k.config(), k.window()}, "100000", "10", "10", "enforce")
        .get(5, TimeUnit.SECONDS);
  }

  @Test
  void grantsExactlyTheAllowanceThenDenies() throws Exception {
    count("api", 1000);
    int granted = 0;
    int denied = 0;
    for (int i = 0; i < 150; i++) {
      BudgetReply r = acquire("api");
      if (r.status().equals(BudgetReply.GRANTED)) {
        granted++;
        assertEquals(1, r.granted());
      } else {
        assertEquals(BudgetReply.DENIED, r.status());
        assertEquals(0, r.granted());
        denied++;
      }
    }
    assertEquals(100, granted);
    assertEquals(50, denied);
    List<Object> s = status("api");
    assertEquals(1000L, s.get(1));
    assertEquals(100L, s.get(2));
    assertEquals(50L, s.get(3));
    assertEquals(100L, s.get(4));
    assertEquals("0.100000", s.get(10));
  }

  @Test
  void theFloorIsForTheWholeFleetNotPerClient() throws Exception {
    int granted = 0;
    for (int i = 0; i < 50; i++) {
      // five different clients ask; the floor (2/s over 10 s = 20) is shared by all of them
      BudgetReply r = budget("floor", "client-" + (i % 5), 0, 0, 1, 1, 100_000, 10, 2, "enforce");
      if (r.status().equals(BudgetReply.GRANTED)) {
        granted++;
      }
    }
    assertEquals(20, granted);
  }

  @Test
  void allOrNoneAndLeases() throws Exception {
    count("batch", 100); // allowance 10
    BudgetReply five = budget("batch", "c1", 0, 0, 5, 5, 100_000, 100, 0, "enforce");
    assertEquals(5, five.granted());
    BudgetReply six = budget("batch", "c1", 0, 0, 6, 6, 100_000, 100, 0, "enforce");
    assertEquals(BudgetReply.DENIED, six.status());
    assertEquals(6, six.denied(), "all-or-none refusal counts every permit asked for");
    BudgetReply lease = budget("batch", "c1", 0, 0, 1, 8, 100_000, 100, 0, "enforce");
    assertEquals(5, lease.granted(), "a lease takes what is left, up to what was wanted");
    assertEquals(10, lease.retries());
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
    budget("shadowed", "c1", 10, 0, 0, 0, 100_000, 100, 0, "shadow"); // allowance 1
    BudgetReply first = budget("shadowed", "c1", 0, 0, 1, 1, 100_000, 100, 0, "shadow");
    BudgetReply second = budget("shadowed", "c1", 0, 0, 1, 1, 100_000, 100, 0, "shadow");
    assertEquals(BudgetReply.GRANTED, first.status());
    assertEquals(BudgetReply.SHADOW, second.status());
    assertEquals(1, second.granted());
    assertEquals(1, second.denied());
    assertEquals(2, second.retries());
  }

  @Test
  void aCallSeenBeforeIsNotAppliedTwice() throws Exception {
    BudgetKeys k = new BudgetKeys("dedupe");
    String[] keys = {k.config(), k.window(), k.clients(), k.index()};
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
    count("layout", 10); // ratio 0.1, floor 0: one permit
    acquire("layout");
    acquire("layout"); // refused
    BudgetKeys k = new BudgetKeys("layout");
    assertEquals(8 + 11 * 48L, (Long) redis.server().call("STRLEN", k.window()));
    long[][] slots = new WindowRing(redis.server(), k).slots();
    int used = 0;
    for (long[] slot : slots) {
      if (slot[WindowRing.T] != 0) {
        used++;
        assertEquals(10, slot[WindowRing.Q]);
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
    String[] keys = {k.config(), k.window(), k.clients(), k.index()};
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
    assertEquals(List.of(250000L, 10L, 10L, "enforce"), first);
    List<Object> second = store.run(LuaScript.CONFIGURE, new String[] {k.config(), k.index()},
        "", "30", "0", "shadow", "100000", "10", "10", "enforce").get(5, TimeUnit.SECONDS);
    assertEquals(List.of(250000L, 30L, 0L, "shadow"), second);
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
    assertTrue(cliTtl > 0 && cliTtl <= 60_000, "clients ttl " + cliTtl);
    assertTrue(cfgTtl > 0, "config ttl " + cfgTtl);
  }

  @Test
  void arithmeticMatchesTheJavaRuleForLargeCounts() throws Exception {
    long requests = 123_456_789L;
    BudgetReply r = budget("big", "c1", requests, 0, 0, 0, 123_457, 60, 17, "enforce");
    assertEquals(BudgetArithmetic.allowance(123_457, requests, 17, 60), r.allowance());
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
        org.junit.jupiter.params.provider.Arguments.of(List.of("HSET", k.clients(), "c1", "garbage"), k.clients(), "c1"),
        org.junit.jupiter.params.provider.Arguments.of(List.of("SET", k.index(), "x"), k.index(), "type"));
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
    assertTrue(scripts.delete("broken").get(5, TimeUnit.SECONDS) || key.equals(k.index()));
    assertEquals(0L, redis.server().call("EXISTS", k.config(), k.window(), k.clients()));
  }

  /** Every key of the budget with its type, TTL and contents. */
  private static Object snapshot(BudgetKeys k) {
    List<Object> out = new java.util.ArrayList<>();
    for (String key : List.of(k.config(), k.window(), k.clients(), k.index())) {
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
        new String[] {k.config(), k.window(), k.clients(), k.index()},
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
}
