package io.retrybudget.coordinator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.redis.protocol.BudgetKeys;
import io.retrybudget.testing.RedisExtension;
import io.vertx.core.json.JsonArray;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The coordinator on a real 3-master Redis Cluster: budgets on every master are listed and served. */
class ClusterCoordinatorTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.cluster();

  @Test
  void servesAndListsBudgetsOnEveryMaster() throws Exception {
    try (Coordinator c = Coordinator.start(CoordinatorConfig.fromEnvironment(Map.of(
            "REDIS_CLUSTER_NODES", String.join(",", redis.nodes()), "COORDINATOR_PORT", "0", "COORDINATOR_TOKEN", "t")));
        ApiClient api = new ApiClient(c.port(), "t")) {
      Set<Integer> mastersUsed = new HashSet<>();
      for (int i = 0; i < 20; i++) {
        String name = "svc-" + i;
        assertEquals(200, api.write("configureBudget", "PUT", "/v1/budgets/" + name,
            "{\"ratio\": 0.5, \"window_seconds\": 3600, \"min_retries_per_second\": 0}").status());
        assertEquals(200, api.write("countRequests", "POST", "/v1/budgets/" + name + "/requests", "{\"count\": 2880}").status());
        // 2,880 first attempts spanning a new budget's first bucket (360 s) at ratio 0.5: 4 permits a
        // second, half a second of it saved up
        assertEquals(200, api.write("acquireRetries", "POST", "/v1/budgets/" + name + "/retries", "{\"count\": 2}").status());
        assertEquals(429, api.write("acquireRetries", "POST", "/v1/budgets/" + name + "/retries", "{\"count\": 1}").status());
        mastersUsed.add(redis.clusterProcesses().masterFor(new BudgetKeys(name).config()).port());
      }
      assertEquals(3, mastersUsed.size(), "the budgets spread over all three masters");
      JsonArray budgets = api.get("listBudgets", "/v1/budgets").json().getJsonArray("budgets");
      assertEquals(20, budgets.size());
      var one = api.get("getBudget", "/v1/budgets/svc-7").json();
      assertEquals(2, one.getLong("retries"));
      assertEquals(1, one.getLong("denied"));
      assertTrue(api.get("ready", "/health/ready").status() == 200);
    }
  }
}
