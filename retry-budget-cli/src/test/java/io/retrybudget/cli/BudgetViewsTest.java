package io.retrybudget.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

/** The table text of listings the tests' coordinator does not produce: broken, truncated, empty. */
class BudgetViewsTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @Test
  void brokenBudgetsAndTruncationAreSaidBelowTheTable() throws Exception {
    String listing = """
        {"budgets": [{"name": "a", "mode": "shadow", "ratio": 0.1, "window_seconds": 10, "min_retries_per_second": 0,
          "requests": 5, "retries": 1, "denied": 2, "retry_ratio": 0.2, "allowance": 0, "remaining": 0, "exhausted": true,
          "active_clients": 1, "max_calls_per_second": 2000, "next_grant_ms": 250}],
         "broken": [{"name": "b", "key": "rb:v2:{b}:cfg", "field": "ratio", "error": "not a number\\u001b[2J"}],
         "truncated": true}
        """;
    assertEquals("""
        NAME  MODE    RATIO  FLOOR/S  WINDOW  REQUESTS  RETRIES  ALLOWANCE  DENIED  REMAINING  STATUS
        a     shadow  0.1    0        10s     5         1        0          2       0          EXHAUSTED (next in 250 ms, shadow: not enforced)
        broken: b (key rb:v2:{b}:cfg, field ratio): not a number?[2J
        (more budgets exist than the coordinator lists: COORDINATOR_MAX_BUDGETS)
        """, BudgetViews.listing(JSON.readTree(listing), false));
  }

  @Test
  void anEmptyListingSaysSo() throws Exception {
    assertEquals("no budgets\n", BudgetViews.listing(JSON.readTree("{\"budgets\": [], \"broken\": [], \"truncated\": false}"), false));
  }
}
