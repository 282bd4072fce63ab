package io.retrybudget.budget;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class BudgetConfigTest {

  @Test
  void defaultsAreTheDesignsDefaults() {
    BudgetConfig c = BudgetConfig.builder("payments-api").build();
    assertEquals(100_000, c.ratioPpm());
    assertEquals(0.10, c.ratio(), 1e-12);
    assertEquals(10, c.windowSeconds());
    assertEquals(10, c.minRetriesPerSecond());
    assertEquals(BudgetMode.ENFORCE, c.mode());
    assertEquals(100 + 100, c.allowance(1000));
  }

  @ParameterizedTest
  @ValueSource(strings = {"", " ", "a b", "ümlaut", "x{y}", "a/b", "a:b", ".", ".."})
  void rejectsBadNamesNamingTheField(String name) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> BudgetConfig.builder(name));
    assertTrue(e.getMessage().startsWith("name "), e.getMessage());
  }

  @Test
  void acceptsNamesUpTo100Characters() {
    assertEquals(100, BudgetConfig.builder("a".repeat(100)).build().name().length());
    assertThrows(IllegalArgumentException.class, () -> BudgetConfig.builder("a".repeat(101)));
    assertThrows(IllegalArgumentException.class, () -> BudgetConfig.builder(null));
    assertEquals("A-z_0.9", BudgetConfig.builder("A-z_0.9").build().name());
    assertEquals("...", BudgetConfig.builder("...").build().name(), "only . and .. are path segments");
  }

  @Test
  void everyBadValueNamesItsField() {
    BudgetConfig.Builder b = BudgetConfig.builder("x");
    assertMessage("ratio", () -> b.ratio(0));
    assertMessage("ratio", () -> b.ratio(-0.1));
    assertMessage("ratio", () -> b.ratio(1.01));
    assertMessage("ratio", () -> b.ratio(Double.NaN));
    assertMessage("ratio", () -> b.ratio(1e-9));
    assertMessage("ratio_ppm", () -> b.ratioPpm(0));
    assertMessage("window_seconds", () -> b.windowSeconds(0));
    assertMessage("window_seconds", () -> b.windowSeconds(-3));
    assertMessage("window_seconds", () -> b.windowSeconds(3601));
    assertMessage("min_retries_per_second", () -> b.minRetriesPerSecond(-1));
    assertThrows(NullPointerException.class, () -> b.mode(null));
  }

  @Test
  void aBuiltConfigNeverChanges() {
    BudgetConfig.Builder b = BudgetConfig.builder("x").ratio(0.2);
    BudgetConfig first = b.build();
    b.ratio(0.5);
    assertEquals(0.2, first.ratio(), 1e-12);
    assertEquals(first, first.toBuilder().build());
  }

  private static void assertMessage(String field, org.junit.jupiter.api.function.Executable call) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call);
    assertTrue(e.getMessage().startsWith(field + " "), e.getMessage());
  }
}
