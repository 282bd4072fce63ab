package io.retrybudget.budget.redis.protocol;

import io.retrybudget.budget.redis.transport.RedisBudgetStore;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.testing.RedisExtension;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * An older SDK (budget.lua of the window rule, before paced admission: four keys, no balance; kept as
 * a test resource) and this one on the same keys during a rolling upgrade. The older rule grants while
 * the window's retries are under its allowance, in one burst; what it grants is paid from the paced
 * balance, into a debt, so the newer clients grant nothing until the fleet is back under the paced
 * rule (lua/README.md, "Mixed versions").
 */
class MixedVersionsTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();
  private static RedisBudgetStore store;
  private static String windowRule;
  private int nextSeq;

  @BeforeAll
  static void connect() throws IOException {
    store = RedisBudgetStore.connect(redis.connectionOptions().build());
    try (InputStream in = MixedVersionsTest.class.getResourceAsStream("/io/retrybudget/lua-window-rule/budget.lua")) {
      windowRule = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
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

  /** This SDK's budget.lua: ratio 0.1, no floor, a one-hour window (so the test stays in one bucket). */
  private BudgetReply current(String client, long requests, long need) throws Exception {
    BudgetKeys k = new BudgetKeys("mixed");
    return BudgetReply.parse(store.run(LuaScript.BUDGET, new String[] {k.config(), k.window(), k.clients(), k.index(), k.pace()},
        client, Integer.toString(++nextSeq), Long.toString(requests), "0", Long.toString(need), Long.toString(need),
        "100000", "3600", "0", "enforce").get(5, TimeUnit.SECONDS));
  }

  /** The older SDK's budget.lua on the same keys: returns {status, granted, requests, retries, ...}. */
  @SuppressWarnings("unchecked")
  private List<Object> older(String client, long need) {
    BudgetKeys k = new BudgetKeys("mixed");
    return (List<Object>) redis.server().call("EVAL", windowRule, "4", k.config(), k.window(), k.clients(), k.index(),
        client, Integer.toString(++nextSeq), "0", "0", Long.toString(need), Long.toString(need), "100000", "3600", "0",
        "enforce");
  }

  @Test
  void whatTheOlderRuleGrantsIsPaidFromTheBalance() throws Exception {
    // 36,000 first attempts in the budget's first bucket (360 s): 100 a second, so the paced rule
    // refills 10 permits a second and holds 5; the older rule's allowance is the window's 3,600
    BudgetReply counted = current("new", 36_000, 0);
    assertEquals(5, counted.available());
    List<Object> burst = older("old", 3_600);
    assertEquals("granted", burst.get(0), "the older rule grants its window's allowance at once");
    BudgetReply after = current("new", 0, 1);
    if (after.requests() != 36_000) {
      return; // (crossed into the next bucket: the counts moved on)
    }
    assertEquals(BudgetReply.DENIED, after.status(), "the burst was paid from the balance: " + after);
    assertEquals(3_600, after.retries());
    // 3,595 permits owed at 10 a second: the next grant in about 360 s, not 100 ms
    assertTrue(after.nextGrantMillis() >= 359_000 && after.nextGrantMillis() <= 360_000, "next grant in " + after.nextGrantMillis());
    BudgetReply again = current("new", 0, 1);
    assertTrue(again.nextGrantMillis() >= 358_000, "the burst is paid once, not at every call: " + again.nextGrantMillis());
  }
}
