package io.retrybudget.coordinator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Redis killed under the coordinator, then back with an empty script cache. */
class RedisOutageTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();

  @Test
  void readinessAndFast503sWhileRedisIsDownThenEverythingWorksAgain() throws Exception {
    try (Coordinator c = Coordinator.start(CoordinatorConfig.fromEnvironment(Map.of(
            "REDIS_URL", redis.uri(), "COORDINATOR_PORT", "0", "COORDINATOR_TOKEN", "t", "COORDINATOR_AUTO_CREATE", "true")));
        ApiClient api = new ApiClient(c.port(), "t")) {
      assertEquals(200, api.write("countRequests", "POST", "/v1/budgets/outage/requests", "{\"count\": 100}").status());
      assertEquals(200, api.get("ready", "/health/ready").status());

      redis.server().kill();
      long tookMs = Eventually.await("ready turns 503", Duration.ofSeconds(5),
          () -> call(() -> api.get("ready", "/health/ready").status()) == 503);
      System.out.println("ready turned 503 in " + tookMs + " ms");
      assertEquals(200, api.get("live", "/health/live").status(), "alive all the same");
      for (String[] w : new String[][] {
          {"acquireRetries", "POST", "/v1/budgets/outage/retries", "{\"count\": 1}"},
          {"countRequests", "POST", "/v1/budgets/outage/requests", "{\"count\": 1}"},
          {"configureBudget", "PUT", "/v1/budgets/outage", "{\"ratio\": 0.2}"}}) {
        long start = System.nanoTime();
        var r = api.write(w[0], w[1], w[2], w[3]);
        long ms = (System.nanoTime() - start) / 1_000_000;
        assertEquals(503, r.status(), r.body());
        assertTrue(ms < 1500, w[2] + " took " + ms + " ms");
        String error = r.json().getString("error");
        assertTrue(error.contains("127.0.0.1:" + redis.server().port()), "names where Redis is: " + error);
        assertTrue(error.contains("connection refused") || error.contains("not connected"), "names the cause: " + error);
      }
      assertEquals(503, api.get("getBudget", "/v1/budgets/outage").status());
      assertEquals(503, api.get("listBudgets", "/v1/budgets").status());

      redis.server().restart(); // empty data, empty script cache
      long back = Eventually.await("writes work again", Duration.ofSeconds(5),
          () -> call(() -> api.write("acquireRetries", "POST", "/v1/budgets/outage/retries", "{\"count\": 1}").status()) == 200);
      System.out.println("permits granted again " + back + " ms after Redis restarted");
      assertEquals(200, api.get("ready", "/health/ready").status());
      assertEquals(200, api.get("getBudget", "/v1/budgets/outage").status());
    }
  }

  /**
   * While Redis is down no per-budget gauge is exported as if it were current. The gauges are read
   * every 200 ms here, not every 5 s: the test waited for three refreshes (15 s), and what it checks
   * is what a refresh does, not how often one runs.
   */
  @Test
  void perBudgetGaugesAreDroppedWhileRedisIsDownAndComeBack() throws Exception {
    try (Coordinator c = Coordinator.start(CoordinatorConfig.fromEnvironment(Map.of(
            "REDIS_URL", redis.uri(), "COORDINATOR_PORT", "0", "COORDINATOR_TOKEN", "t",
            "COORDINATOR_METRICS_CACHE_MS", "0")), 200);
        ApiClient api = new ApiClient(c.port(), "t")) {
      assertEquals(200, api.write("configureBudget", "PUT", "/v1/budgets/r3", "{\"ratio\": 0.5}").status());
      Eventually.await("the budget's gauges appear", Duration.ofSeconds(12),
          () -> metrics(api).contains("retry_budget_remaining{budget=\"r3\"}"));
      redis.server().kill();
      Eventually.await("the budget's gauges are dropped", Duration.ofSeconds(12), () -> {
        String m = metrics(api);
        return m.contains("retry_budget_redis_up 0.0") && !m.contains("budget=\"r3\"")
            && m.contains("retry_budget_count NaN");
      });
      redis.server().restart(); // empty: the budget is written again once the connection is back
      Eventually.await("writes work again", Duration.ofSeconds(5),
          () -> call(() -> api.write("configureBudget", "PUT", "/v1/budgets/r3", "{\"ratio\": 0.5}").status()) == 200);
      Eventually.await("they come back with Redis", Duration.ofSeconds(12),
          () -> metrics(api).contains("retry_budget_remaining{budget=\"r3\"}"));
    }
  }

  private static String metrics(ApiClient api) {
    try {
      return api.get("metrics", "/metrics").body();
    } catch (Exception e) {
      return "";
    }
  }

  @Test
  void aRedisThatDoesNotAnswerIsNamedInThe503() throws Exception {
    try (Coordinator c = Coordinator.start(CoordinatorConfig.fromEnvironment(Map.of(
            "REDIS_URL", redis.uri(), "COORDINATOR_PORT", "0", "COORDINATOR_TOKEN", "t")));
        ApiClient api = new ApiClient(c.port(), "t")) {
      assertEquals(200, api.write("configureBudget", "PUT", "/v1/budgets/slow", "{\"ratio\": 0.5}").status());
      assertEquals(200, api.write("countRequests", "POST", "/v1/budgets/slow/requests", "{\"count\": 1}").status());
      redis.server().pause(); // SIGSTOP: connected, silent
      try {
        var r = api.write("countRequests", "POST", "/v1/budgets/slow/requests", "{\"count\": 1}");
        assertEquals(503, r.status(), r.body());
        assertTrue(r.json().getString("error").contains("did not answer within 1000 ms"), r.body());
        assertTrue(r.json().getString("error").contains("127.0.0.1:" + redis.server().port()), r.body());
      } finally {
        redis.server().resume();
      }
    }
  }

  @Test
  void aRedisOutOfMemoryIsNamedInThe503() throws Exception {
    try (Coordinator c = Coordinator.start(CoordinatorConfig.fromEnvironment(Map.of(
            "REDIS_URL", redis.uri(), "COORDINATOR_PORT", "0", "COORDINATOR_TOKEN", "t")));
        ApiClient api = new ApiClient(c.port(), "t")) {
      assertEquals(200, api.write("configureBudget", "PUT", "/v1/budgets/oom", "{\"ratio\": 0.5}").status());
      redis.server().call("CONFIG", "SET", "maxmemory", "1");
      try {
        var r = api.write("countRequests", "POST", "/v1/budgets/oom/requests", "{\"count\": 1}");
        assertEquals(503, r.status(), r.body());
        assertTrue(r.json().getString("error").contains("out of memory"), r.body());
      } finally {
        redis.server().call("CONFIG", "SET", "maxmemory", "0");
      }
    }
  }

  interface Call {
    int run() throws Exception;
  }

  private static int call(Call c) {
    try {
      return c.run();
    } catch (Exception e) {
      return -1;
    }
  }
}
