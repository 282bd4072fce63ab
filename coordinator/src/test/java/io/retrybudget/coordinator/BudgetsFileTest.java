package io.retrybudget.coordinator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import io.retrybudget.testing.RedisServerProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
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

  /**
   * The file wins over a client's seed: when Redis loses its data while SDK clients keep calling (so
   * the first call after the loss seeds the client's builder values at once), the coordinator still
   * puts the file's values back within 10 s. Three kinds of loss: FLUSHALL; kill -9 and a restart
   * that comes back empty; SHUTDOWN NOSAVE and a restart.
   */
  @Test
  void theFileWinsOverAClientSeedAfterDataLossUnderTraffic() throws Exception {
    Path file = dir.resolve("authoritative.json");
    Files.writeString(file,
        "{\"budgets\": {\"authoritative\": {\"ratio\": 1.0, \"window_seconds\": 3600, \"min_retries_per_second\": 0}}}");
    RedisServerProcess server = redis.server();
    try (Coordinator c = Coordinator.start(CoordinatorConfig.fromEnvironment(Map.of(
            "REDIS_URL", redis.uri(), "COORDINATOR_PORT", "0", "COORDINATOR_TOKEN", "t",
            "COORDINATOR_BUDGETS_FILE", file.toString(), "COORDINATOR_BUDGETS_FILE_CHECK_MS", "1000")));
        ApiClient api = new ApiClient(c.port(), "t");
        RedisBudgetClient sdk = RedisBudgetClient.builder(redis.connectionOptions().build())
            .flushInterval(Duration.ofMillis(50)).build()) {
      // the client's builder says 0.1 / 10 s / 10 per second: that is what its calls seed
      RetryBudget budget = sdk.budget(BudgetConfig.builder("authoritative").build());
      AtomicBoolean running = new AtomicBoolean(true);
      Thread traffic = new Thread(() -> {
        while (running.get()) {
          budget.recordFirstAttempt();
          budget.acquireBlocking();
        }
      });
      traffic.setDaemon(true);
      traffic.start();
      try {
        Eventually.await("the file's values at start", Duration.ofSeconds(5), () -> fileValues(api));
        List<Runnable> losses = List.of(
            redis::flushAll,
            server::restart, // kill -9, then an empty Redis on the same port
            () -> {
              try {
                server.call("SHUTDOWN", "NOSAVE");
              } catch (RuntimeException expected) {
                // the connection drops with the server
              }
              server.restart();
            });
        for (Runnable loss : losses) {
          loss.run();
          Eventually.await("the client's seed is in Redis", Duration.ofSeconds(5), () -> !fileValues(api));
          long took = Eventually.await("the file's values are back", Duration.ofSeconds(10), () -> fileValues(api));
          System.out.println("budgets file re-applied " + took + " ms after the client's seed");
        }
      } finally {
        running.set(false);
        traffic.join(5_000);
      }
    }
  }

  private static boolean fileValues(ApiClient api) {
    try {
      ApiClient.Response r = api.get("getBudget", "/v1/budgets/authoritative");
      return r.status() == 200 && r.json().getDouble("ratio") == 1.0 && r.json().getInteger("window_seconds") == 3600
          && r.json().getInteger("min_retries_per_second") == 0;
    } catch (Exception | AssertionError e) {
      return false; // Redis restarting
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
