package io.retrybudget.coordinator.relay;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.redis.protocol.LuaScript;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A relay's warning about clients of another SDK version: the first at once, then at most one a minute. */
class ForeignScriptsTest {
  private long now = 1_000;
  private final List<String> log = new ArrayList<>();
  private final ForeignScripts foreign = new ForeignScripts(() -> now, log::add, LuaScript.BUDGET.sha1());

  @Test
  void theFirstRefusalIsLoggedAtOnceNamingBothShas() {
    foreign.refused("abc");
    assertEquals(1, log.size());
    assertTrue(log.get(0).startsWith("refused 1 call(s) of a script that is not this relay's budget.lua (the last: sha abc;"
        + " this relay runs " + LuaScript.BUDGET.sha1() + ")"), log.get(0));
    assertTrue(log.get(0).contains("docs/RELAY.md, \"Upgrading\""), log.get(0));
  }

  @Test
  void laterOnesAreCountedIntoOneLineAMinute() {
    foreign.refused("a");
    for (int i = 0; i < 500; i++) {
      now += 100; // 50 s of refusals, 10 a second
      foreign.refused(i % 2 == 0 ? "b" : "c");
    }
    assertEquals(1, log.size(), "within the minute nothing more is logged");
    now = 1_000 + ForeignScripts.LOG_EVERY_MILLIS;
    foreign.refused("d");
    assertEquals(2, log.size());
    assertTrue(log.get(1).startsWith("refused 501 call(s) of a script that is not this relay's budget.lua in the last minute"
        + " (the last: sha d;"), log.get(1));
    now += ForeignScripts.LOG_EVERY_MILLIS - 1;
    foreign.refused("e");
    assertEquals(2, log.size());
    assertEquals(503, foreign.refused());
  }
}
