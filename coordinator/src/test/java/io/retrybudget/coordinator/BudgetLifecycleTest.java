package io.retrybudget.coordinator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.redis.protocol.BudgetKeys;
import io.retrybudget.testing.RedisExtension;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A budget's life over HTTP against a real Redis: no write creates a budget by typo (404, nothing
 * stored) unless COORDINATOR_AUTO_CREATE=true; DELETE removes it atomically; a budget whose keys hold
 * bad state answers 409 naming budget and field and is flagged, not fatal, in the listing;
 * {@code truncated} only when budgets were left out. Responses are checked against openapi.yaml.
 */
class BudgetLifecycleTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();

  @BeforeEach
  void clean() {
    redis.flushAll();
  }

  private static Coordinator start(String... more) throws Exception {
    Map<String, String> env = new java.util.HashMap<>(Map.of(
        "REDIS_URL", redis.uri(), "COORDINATOR_PORT", "0", "COORDINATOR_TOKEN", "t"));
    for (int i = 0; i < more.length; i += 2) {
      env.put(more[i], more[i + 1]);
    }
    return Coordinator.start(CoordinatorConfig.fromEnvironment(env));
  }

  @Test
  void aWriteToABudgetWithNoConfigurationIs404AndCreatesNothing() throws Exception {
    try (Coordinator c = start(); ApiClient api = new ApiClient(c.port(), "t")) {
      var requests = api.write("countRequests", "POST", "/v1/budgets/nope/requests", "{\"count\": 5}");
      assertEquals(404, requests.status());
      assertTrue(requests.json().getString("error").contains("PUT /v1/budgets/nope"), requests.body());
      var retries = api.write("acquireRetries", "POST", "/v1/budgets/nope/retries", "{\"count\": 1}");
      assertEquals(404, retries.status());
      assertEquals(0L, redis.server().call("DBSIZE"), "nothing created");
      assertEquals(404, api.get("getBudget", "/v1/budgets/nope").status());

      assertEquals(200, api.write("configureBudget", "PUT", "/v1/budgets/nope", "{\"ratio\": 0.5}").status());
      assertEquals(200, api.write("countRequests", "POST", "/v1/budgets/nope/requests", "{\"count\": 5}").status());
      assertEquals(200, api.write("acquireRetries", "POST", "/v1/budgets/nope/retries", "{\"count\": 1}").status());
    }
  }

  @Test
  void autoCreateKeepsTheOldBehaviour() throws Exception {
    try (Coordinator c = start("COORDINATOR_AUTO_CREATE", "true"); ApiClient api = new ApiClient(c.port(), "t")) {
      assertEquals(200, api.write("countRequests", "POST", "/v1/budgets/made/requests", "{\"count\": 5}").status());
      JsonObject made = api.get("getBudget", "/v1/budgets/made").json();
      assertEquals(0.1, made.getDouble("ratio"));
      assertEquals(5, made.getLong("requests"));
    }
  }

  @Test
  void autoCreateMustBeTrueOrFalse() {
    IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
        () -> CoordinatorConfig.fromEnvironment(Map.of("COORDINATOR_AUTO_CREATE", "yes")));
    assertTrue(e.getMessage().contains("COORDINATOR_AUTO_CREATE"), e.getMessage());
    assertFalse(CoordinatorConfig.fromEnvironment(Map.of()).autoCreate(), "off by default");
  }

  @Test
  void deleteRemovesConfigurationWindowAndIndexEntry() throws Exception {
    try (Coordinator c = start(); ApiClient api = new ApiClient(c.port(), "t")) {
      api.write("configureBudget", "PUT", "/v1/budgets/gone", "{\"ratio\": 0.5}");
      api.write("countRequests", "POST", "/v1/budgets/gone/requests", "{\"count\": 5}");
      api.write("configureBudget", "PUT", "/v1/budgets/stays", "{\"mode\": \"enforce\"}");
      assertEquals(401, api.write("deleteBudget", "DELETE", "/v1/budgets/gone", "", "wrong").status());
      assertEquals(204, api.write("deleteBudget", "DELETE", "/v1/budgets/gone", "").status());
      BudgetKeys k = new BudgetKeys("gone");
      assertEquals(0L, redis.server().call("EXISTS", k.config(), k.window(), k.clients()));
      assertEquals(null, redis.server().call("ZSCORE", k.index(), "gone"), "index entry removed");
      assertEquals(404, api.get("getBudget", "/v1/budgets/gone").status());
      assertEquals(404, api.write("deleteBudget", "DELETE", "/v1/budgets/gone", "").status());
      assertEquals(404, api.write("countRequests", "POST", "/v1/budgets/gone/requests", "{\"count\": 1}").status(),
          "deleted means unconfigured");
      JsonArray listed = api.get("listBudgets", "/v1/budgets").json().getJsonArray("budgets");
      assertEquals(1, listed.size());
      assertEquals("stays", listed.getJsonObject(0).getString("name"));
    }
  }

  @Test
  void aBrokenBudgetIs409NamingBudgetAndFieldAndIsFlaggedInTheListing() throws Exception {
    try (Coordinator c = start(); ApiClient api = new ApiClient(c.port(), "t")) {
      api.write("configureBudget", "PUT", "/v1/budgets/healthy", "{\"mode\": \"enforce\"}");
      api.write("configureBudget", "PUT", "/v1/budgets/nan", "{\"mode\": \"enforce\"}");
      api.write("configureBudget", "PUT", "/v1/budgets/typed", "{\"mode\": \"enforce\"}");
      redis.server().call("HSET", new BudgetKeys("nan").config(), "ratio_ppm", "nan");
      redis.server().call("DEL", new BudgetKeys("typed").config());
      redis.server().call("SET", new BudgetKeys("typed").config(), "hello");

      var get = api.get("getBudget", "/v1/budgets/nan");
      assertEquals(409, get.status());
      assertEquals("nan", get.json().getString("budget"));
      assertEquals("ratio_ppm", get.json().getString("field"));
      var post = api.write("acquireRetries", "POST", "/v1/budgets/typed/retries", "{\"count\": 1}");
      assertEquals(409, post.status());
      assertEquals("type", post.json().getString("field"));
      assertEquals(new BudgetKeys("typed").config(), post.json().getString("key"));

      JsonObject listing = api.get("listBudgets", "/v1/budgets").json();
      assertEquals(1, listing.getJsonArray("budgets").size());
      assertEquals("healthy", listing.getJsonArray("budgets").getJsonObject(0).getString("name"));
      JsonArray broken = listing.getJsonArray("broken");
      assertEquals(2, broken.size(), listing.encode());
      assertEquals("nan", broken.getJsonObject(0).getString("name"));
      assertEquals("ratio_ppm", broken.getJsonObject(0).getString("field"));
      assertEquals("typed", broken.getJsonObject(1).getString("name"));

      // a PUT of every field repairs a bad value; DELETE removes a key of the wrong type
      assertEquals(200, api.write("configureBudget", "PUT", "/v1/budgets/nan",
          "{\"ratio\": 0.1, \"window_seconds\": 10, \"min_retries_per_second\": 10, \"mode\": \"enforce\"}").status());
      assertEquals(204, api.write("deleteBudget", "DELETE", "/v1/budgets/typed", "").status());
      assertEquals(0, api.get("listBudgets", "/v1/budgets").json().getJsonArray("broken").size());
    }
  }

  @Test
  void truncatedOnlyWhenBudgetsWereLeftOut() throws Exception {
    try (Coordinator c = start("COORDINATOR_MAX_BUDGETS", "3"); ApiClient api = new ApiClient(c.port(), "t")) {
      for (String n : new String[] {"b1", "b2", "b3"}) {
        api.write("configureBudget", "PUT", "/v1/budgets/" + n, "{\"mode\": \"enforce\"}");
      }
      JsonObject exactly = api.get("listBudgets", "/v1/budgets").json();
      assertEquals(3, exactly.getJsonArray("budgets").size());
      assertFalse(exactly.getBoolean("truncated"), "exactly the cap: nothing left out");
      api.write("configureBudget", "PUT", "/v1/budgets/b4", "{\"mode\": \"enforce\"}");
      JsonObject over = api.get("listBudgets", "/v1/budgets").json();
      assertEquals(3, over.getJsonArray("budgets").size());
      assertTrue(over.getBoolean("truncated"));
    }
  }
}
