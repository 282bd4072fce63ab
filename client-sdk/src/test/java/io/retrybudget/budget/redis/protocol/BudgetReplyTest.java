package io.retrybudget.budget.redis.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A budget.lua reply as the SDK reads it: Redis's 15 values (the call ceiling is the budget's own), a
 * relay's 16 (the call ceiling its clients pace against, beside Redis's {@code max_calls_per_s}).
 */
class BudgetReplyTest {
  private static List<Object> redisReply() {
    return new ArrayList<>(List.of("granted", 1L, 100L, 5L, 0L, 110L, 20L, 100_000L, 10L, 10L, "enforce", 3L, 0L,
        20_000_000L, 2_000L));
  }

  @Test
  void redisFifteenValuesPaceAgainstTheBudgetsOwnCeiling() {
    BudgetReply r = BudgetReply.parse(redisReply());
    assertEquals(2_000, r.maxCallsPerSecond());
    assertEquals(2_000, r.callCeiling());
    assertEquals(20, r.activeClients());
  }

  @Test
  void aRelaysSixteenthValueIsTheCallCeilingAndTheConfigurationStaysRedis() {
    List<Object> relay = redisReply();
    relay.add(400_000L);
    BudgetReply r = BudgetReply.parse(relay);
    assertEquals(2_000, r.maxCallsPerSecond(), "the budget's configuration, as Redis holds it");
    assertEquals(400_000, r.callCeiling(), "what this client paces its calls against");
    assertEquals(2_000, r.settings().maxCallsPerSecond());
  }

  @Test
  void anyOtherLengthIsRefused() {
    List<Object> shorter = redisReply().subList(0, 14);
    assertThrows(IllegalStateException.class, () -> BudgetReply.parse(shorter));
    List<Object> longer = redisReply();
    longer.add(1L);
    longer.add(2L);
    assertThrows(IllegalStateException.class, () -> BudgetReply.parse(longer));
    assertThrows(IllegalStateException.class, () -> BudgetReply.parse(null));
  }
}
