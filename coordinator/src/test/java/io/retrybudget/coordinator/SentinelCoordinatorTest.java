package io.retrybudget.coordinator;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.retrybudget.testing.RedisSentinelProcesses;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** REDIS_URL may name Sentinels: the coordinator configures and serves budgets on the master they name. */
class SentinelCoordinatorTest {
  @Test
  void aRedisUrlOfSentinelsServesTheApiFromTheMaster() throws Exception {
    try (RedisSentinelProcesses redis = RedisSentinelProcesses.start(1);
        Coordinator c = Coordinator.start(CoordinatorConfig.fromEnvironment(Map.of(
            "REDIS_URL", redis.uri(), "COORDINATOR_PORT", "0", "COORDINATOR_TOKEN", "t")));
        ApiClient api = new ApiClient(c.port(), "t")) {
      assertEquals(200, api.write("configureBudget", "PUT", "/v1/budgets/sentinel",
          "{\"ratio\": 0.5, \"min_retries_per_second\": 0}").status());
      assertEquals(200, api.write("countRequests", "POST", "/v1/budgets/sentinel/requests", "{\"count\": 10}").status());
      assertEquals(200, api.write("acquireRetries", "POST", "/v1/budgets/sentinel/retries", "{\"count\": 1}").status());
      assertEquals(1L, api.get("getBudget", "/v1/budgets/sentinel").json().getLong("retries"));
      assertEquals(1L, redis.master().call("EXISTS", "rb:v2:{sentinel}:cfg"), "stored on the master");
      assertEquals(200, api.get("ready", "/health/ready").status());
    }
  }
}
