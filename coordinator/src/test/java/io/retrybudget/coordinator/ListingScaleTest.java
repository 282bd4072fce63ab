package io.retrybudget.coordinator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisBinary;
import io.retrybudget.testing.RedisServerProcess;
import io.retrybudget.testing.RespClient;
import java.net.URI;
import java.net.http.HttpRequest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Listing cost does not grow with unrelated keys: 2,000,000 of them (DEBUG POPULATE) beside three
 * budgets, and GET /v1/budgets still answers within its normal time and the gauges appear (names come
 * from the index the scripts keep, not from scanning the key space).
 */
class ListingScaleTest {

  @Test
  void twoMillionUnrelatedKeysDoNotSlowTheListing() throws Exception {
    List<String> args = new ArrayList<>();
    if (!RedisBinary.version().startsWith("6.")) {
      args.addAll(List.of("--enable-debug-command", "yes")); // Redis 7 refuses DEBUG by default
    }
    RedisServerProcess redis = RedisServerProcess.startOnFreePort(args);
    try (Coordinator c = Coordinator.start(CoordinatorConfig.fromEnvironment(Map.of(
            "REDIS_URL", redis.uri(), "COORDINATOR_PORT", "0", "COORDINATOR_TOKEN", "t")));
        ApiClient api = new ApiClient(c.port(), "t")) {
      // a few seconds of work for Redis on a loaded machine: more than the harness's 5 s read timeout
      try (RespClient admin = new RespClient("127.0.0.1", redis.port(), 120_000)) {
        admin.call("DEBUG", "POPULATE", "2000000", "unrelated");
      }
      assertEquals(2_000_000L, redis.call("DBSIZE"));
      for (String name : List.of("alpha", "beta", "gamma")) {
        assertEquals(200, api.write("configureBudget", "PUT", "/v1/budgets/" + name, "{\"ratio\": 0.2}").status());
      }
      assertEquals(200, api.write("countRequests", "POST", "/v1/budgets/beta/requests", "{\"count\": 7}").status());
      long worst = 0;
      for (int i = 0; i < 5; i++) {
        long start = System.nanoTime();
        ApiClient.Response r = api.get("listBudgets", "/v1/budgets");
        worst = Math.max(worst, (System.nanoTime() - start) / 1_000_000);
        assertEquals(200, r.status(), r.body());
        assertEquals(3, r.json().getJsonArray("budgets").size());
      }
      System.out.println("listing beside 2,000,000 unrelated keys: slowest of 5 took " + worst + " ms");
      // the Redis timeout of a listing is 1 s; the SCAN it replaced needed 2,000 pages here
      assertTrue(worst < 1_000, "listing took " + worst + " ms");
      Eventually.await("gauges appear", Duration.ofSeconds(12), () -> {
        try {
          String metrics = api.raw(HttpRequest.newBuilder(URI.create(api.base() + "/metrics")).build()).body();
          return metrics.contains("retry_budget_window_requests{budget=\"beta\"} 7.0")
              && metrics.contains("retry_budget_count 3.0");
        } catch (Exception e) {
          return false;
        }
      });
    } finally {
      redis.close();
    }
  }
}
