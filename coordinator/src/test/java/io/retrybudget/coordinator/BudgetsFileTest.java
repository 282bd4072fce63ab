package io.retrybudget.coordinator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

class BudgetsFileTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();
  @TempDir Path dir;

  @Test
  void appliedAtStartAndAgainWhenRedisLosesIt() throws Exception {
    Path file = dir.resolve("budgets.json");
    Files.writeString(file, """
        {"budgets": {
          "payments-api": {"ratio": 0.05, "window_seconds": 30, "min_retries_per_second": 2, "mode": "shadow"},
          "search": {"ratio": 0.2}
        }}""");
    try (Coordinator c = Coordinator.start(CoordinatorConfig.fromEnvironment(Map.of(
            "REDIS_URL", redis.uri(), "COORDINATOR_PORT", "0", "COORDINATOR_TOKEN", "t",
            "COORDINATOR_BUDGETS_FILE", file.toString(), "COORDINATOR_BUDGETS_FILE_CHECK_MS", "200")));
        ApiClient api = new ApiClient(c.port(), "t")) {
      var payments = api.get("getBudget", "/v1/budgets/payments-api").json();
      assertEquals(0.05, payments.getDouble("ratio"));
      assertEquals(30, payments.getInteger("window_seconds"));
      assertEquals("shadow", payments.getString("mode"));
      assertEquals(10, api.get("getBudget", "/v1/budgets/search").json().getInteger("window_seconds"), "defaults fill the rest");

      redis.flushAll(); // Redis lost everything (a restart without persistence)
      Eventually.await("re-applied", Duration.ofSeconds(5),
          () -> status(api, "/v1/budgets/payments-api") == 200 && status(api, "/v1/budgets/search") == 200);
      assertEquals(0.05, api.get("getBudget", "/v1/budgets/payments-api").json().getDouble("ratio"));
    }
  }

  @Test
  void aBadFileStopsTheStartNamingBudgetAndField() throws Exception {
    Path file = dir.resolve("bad.json");
    Files.writeString(file, "{\"budgets\": {\"ok\": {\"ratio\": 0.1}, \"payments\": {\"window_seconds\": 0}}}");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Coordinator.start(
        CoordinatorConfig.fromEnvironment(Map.of("REDIS_URL", redis.uri(), "COORDINATOR_PORT", "0",
            "COORDINATOR_BUDGETS_FILE", file.toString()))));
    assertTrue(e.getMessage().contains("'payments'") && e.getMessage().contains("window_seconds"), e.getMessage());
  }

  private static int status(ApiClient api, String path) {
    try {
      return api.get("getBudget", path).status();
    } catch (Exception e) {
      return -1;
    }
  }
}
