package io.retrybudget.coordinator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.testing.RedisExtension;
import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.net.http.HttpRequest;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The HTTP API against a real Redis, every response checked against openapi.yaml. */
class CoordinatorApiTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();
  static final String TOKEN = "test-token";
  static Coordinator coordinator;
  static ApiClient api;

  @BeforeAll
  static void start() throws Exception {
    coordinator = Coordinator.start(CoordinatorConfig.fromEnvironment(Map.of(
        "REDIS_URL", redis.uri(), "COORDINATOR_PORT", "0", "COORDINATOR_TOKEN", TOKEN,
        "COORDINATOR_AUTO_CREATE", "true"))); // budget lifecycle without auto-create: BudgetLifecycleTest
    api = new ApiClient(coordinator.port(), TOKEN);
  }

  @AfterAll
  static void stop() {
    api.close();
    coordinator.close();
  }

  @BeforeEach
  void clean() {
    redis.flushAll();
  }

  /** Review finding 3: a count the paced balance can never hold is 422 with the cap, not a false Retry-After. */
  @Test
  void aCountAboveWhatTheBalanceCanHoldIs422WithTheCapAndNotCounted() throws Exception {
    assertEquals(200, api.write("configureBudget", "PUT", "/v1/budgets/capdemo",
        "{\"ratio\": 0.1, \"min_retries_per_second\": 10, \"window_seconds\": 10}").status());
    // no traffic: the floor of 10 a second refills the balance, which holds half a second of it, 5
    var over = api.write("acquireRetries", "POST", "/v1/budgets/capdemo/retries", "{\"count\": 6}");
    assertEquals(422, over.status(), over.body());
    assertEquals(5, over.json().getLong("max_count"));
    assertEquals("count", over.json().getString("field"));
    assertTrue(over.json().getString("error").contains("ask for at most 5"), over.body());
    assertTrue(over.raw().headers().firstValue("Retry-After").isEmpty(), "no promise that waiting helps");
    assertEquals(0, api.get("getBudget", "/v1/budgets/capdemo").json().getLong("denied"), "nothing counted");
    // created by the call itself (auto-create, default floor 10/s): refused by the script, then 422
    var seeded = api.write("acquireRetries", "POST", "/v1/budgets/capnew/retries", "{\"count\": 6}");
    assertEquals(422, seeded.status(), seeded.body());
    assertEquals(5, seeded.json().getLong("max_count"));
    // shadow mode refuses nothing
    assertEquals(200, api.write("configureBudget", "PUT", "/v1/budgets/capdemo", "{\"mode\": \"shadow\"}").status());
    var shadow = api.write("acquireRetries", "POST", "/v1/budgets/capdemo/retries", "{\"count\": 6}");
    assertEquals(200, shadow.status(), shadow.body());
    assertTrue(shadow.json().getBoolean("shadow"));
    assertEquals(200, api.write("configureBudget", "PUT", "/v1/budgets/capdemo", "{\"mode\": \"enforce\"}").status());
    assertEquals(200, api.write("acquireRetries", "POST", "/v1/budgets/capdemo/retries", "{\"count\": 5}").status(),
        "the cap itself is granted");
  }

  @Test
  void configureCountAndAskForPermits() throws Exception {
    var put = api.write("configureBudget", "PUT", "/v1/budgets/payments-api",
        "{\"ratio\": 0.2, \"window_seconds\": 3600, \"min_retries_per_second\": 0}");
    assertEquals(200, put.status());
    assertEquals(0.2, put.json().getDouble("ratio"));
    assertEquals("enforce", put.json().getString("mode"), "fields left out keep their (default) values");

    assertEquals(2000, put.json().getInteger("max_calls_per_second"), "the default ceiling");

    // 36,000 first attempts in a new budget with a one-hour window span its first bucket, 360 s: 100
    // a second at ratio 0.2 refill 20 permits a second; the paced balance holds half a second of that,
    // 10 (the window's allowance, 7,200, is shown)
    var counted = api.write("countRequests", "POST", "/v1/budgets/payments-api/requests", "{\"count\": 36000}");
    assertEquals(200, counted.status());
    assertEquals(7200, counted.json().getLong("allowance"));
    assertEquals(10, counted.json().getLong("remaining"));

    var granted = api.write("acquireRetries", "POST", "/v1/budgets/payments-api/retries", "{\"count\": 7}");
    assertEquals(200, granted.status());
    assertTrue(granted.json().getBoolean("granted"));
    var refused = api.write("acquireRetries", "POST", "/v1/budgets/payments-api/retries", "{\"count\": 4}");
    assertEquals(429, refused.status());
    assertFalse(refused.json().getBoolean("granted"));
    assertEquals(3, refused.json().getLong("remaining"));
    assertEquals("1", refused.raw().headers().firstValue("Retry-After").orElseThrow(),
        "one more permit at 20 a second: 50 ms, at least 1 s");
    var lastThree = api.write("acquireRetries", "POST", "/v1/budgets/payments-api/retries", "{\"count\": 3}");
    assertEquals(200, lastThree.status(), "all or none: the refused 4 took nothing");

    JsonObject status = api.get("getBudget", "/v1/budgets/payments-api").json();
    assertEquals(36000, status.getLong("requests"));
    assertEquals(10, status.getLong("retries"));
    assertEquals(4, status.getLong("denied"));
    assertEquals(10.0 / 36000, status.getDouble("retry_ratio"), 1e-9);
    assertEquals(0, status.getLong("remaining"));
    assertTrue(status.getBoolean("exhausted"));
    assertEquals(50, status.getLong("next_grant_ms"), "20 permits a second: the next in 50 ms");

    var ceiling = api.write("configureBudget", "PUT", "/v1/budgets/payments-api", "{\"max_calls_per_second\": 500}");
    assertEquals(200, ceiling.status());
    assertEquals(500, ceiling.json().getInteger("max_calls_per_second"));
    var badCeiling = api.write("configureBudget", "PUT", "/v1/budgets/payments-api", "{\"max_calls_per_second\": 0}");
    assertEquals(400, badCeiling.status());
    assertTrue(badCeiling.body().contains("max_calls_per_second"), badCeiling.body());

    var second = api.write("configureBudget", "PUT", "/v1/budgets/payments-api", "{\"mode\": \"shadow\"}");
    assertEquals(0.2, second.json().getDouble("ratio"), "ratio kept");
    assertEquals("shadow", second.json().getString("mode"));
    var shadow = api.write("acquireRetries", "POST", "/v1/budgets/payments-api/retries", "{\"count\": 1}");
    assertEquals(200, shadow.status());
    assertTrue(shadow.json().getBoolean("shadow"));
  }

  @Test
  void oneBudgetShowsItsWindowBucketByBucket() throws Exception {
    api.write("configureBudget", "PUT", "/v1/budgets/chart", "{\"ratio\": 0.1, \"window_seconds\": 20, \"min_retries_per_second\": 0}");
    api.write("countRequests", "POST", "/v1/budgets/chart/requests", "{\"count\": 100}");
    // paced: 100 first attempts at 10 % leave a balance of at most 10, capped at half a second of
    // the budget's rate; single permits until one is refused (no floor: nothing refills it)
    long granted = 0;
    while (api.write("acquireRetries", "POST", "/v1/budgets/chart/retries", "{\"count\": 1}").status() == 200) {
      granted++;
      assertTrue(granted <= 10, "more than the ratio allows");
    }
    assertTrue(granted >= 1, "the balance held a permit");
    assertEquals(429, api.write("acquireRetries", "POST", "/v1/budgets/chart/retries", "{\"count\": 1}").status());
    // more than the balance can hold at this rate: 422, not counted
    assertEquals(422, api.write("acquireRetries", "POST", "/v1/budgets/chart/retries", "{\"count\": 40}").status());

    JsonObject status = api.get("getBudget", "/v1/budgets/chart").json();
    assertEquals(2000, status.getLong("bucket_ms"), "a tenth of the window");
    var buckets = status.getJsonArray("buckets");
    assertEquals(10, buckets.size());
    long requests = 0;
    long retries = 0;
    long denied = 0;
    for (int i = 0; i < buckets.size(); i++) {
      JsonObject b = buckets.getJsonObject(i);
      if (i > 0) {
        assertEquals(buckets.getJsonObject(i - 1).getLong("start_ms") + 2000, b.getLong("start_ms"), "oldest first, consecutive");
      }
      requests += b.getLong("requests");
      retries += b.getLong("retries");
      denied += b.getLong("denied");
    }
    long lastStart = buckets.getJsonObject(9).getLong("start_ms");
    long now = status.getLong("now_ms");
    assertTrue(lastStart <= now && now < lastStart + 2000, "the last bucket is the one filling now: " + lastStart + " " + now);
    assertEquals(100, requests);
    assertEquals(granted, retries);
    assertEquals(1 + 1, denied, "the two refused single permits are counted as denied, the 422 is not");
    assertEquals(status.getLong("requests"), requests, "the totals are the buckets' sums while none is leaving");

    var listed = api.get("listBudgets", "/v1/budgets").json().getJsonArray("budgets").getJsonObject(0);
    assertFalse(listed.containsKey("buckets"), "the listing stays compact");
  }

  /**
   * A budget with only a floor of 4/s: its paced balance refills 4 permits a second and holds at most
   * 2 (half a second), whatever its window's allowance (40): what the status page shows as "0 of 2
   * available now, refills 4/s". The listing with buckets=true carries each budget's window as GET
   * /v1/budgets/{name} does.
   */
  @Test
  void theStatusGivesThePacedBalancesCapAndRefillRateAndTheListingItsBuckets() throws Exception {
    assertEquals(200, api.write("configureBudget", "PUT", "/v1/budgets/paced", "{\"min_retries_per_second\": 4}").status());
    int granted = 0;
    while (api.write("acquireRetries", "POST", "/v1/budgets/paced/retries", "{\"count\": 1}").status() == 200) {
      granted++;
      assertTrue(granted <= 40, "paced: never the window's allowance at once");
    }
    JsonObject paced = api.get("getBudget", "/v1/budgets/paced").json();
    assertEquals(2, paced.getLong("balance_cap"), paced.encode());
    assertEquals(4.0, paced.getDouble("refill_per_second"), paced.encode());
    assertEquals(40, paced.getLong("allowance"), "the window's allowance, a figure of its own");
    assertTrue(paced.getLong("remaining") <= 2, paced.encode());

    JsonObject listing = api.get("listBudgets", "/v1/budgets?buckets=true").json();
    JsonObject listed = listing.getJsonArray("budgets").stream().map(JsonObject.class::cast)
        .filter(b -> b.getString("name").equals("paced")).findFirst().orElseThrow();
    assertEquals(2, listed.getLong("balance_cap"));
    assertEquals(4.0, listed.getDouble("refill_per_second"));
    assertEquals(1000, listed.getLong("bucket_ms"));
    assertEquals(10, listed.getJsonArray("buckets").size());
    assertEquals(granted, listed.getJsonArray("buckets").stream().mapToLong(b -> ((JsonObject) b).getLong("retries")).sum());
    assertFalse(api.get("listBudgets", "/v1/budgets?buckets=false").json().getJsonArray("budgets").getJsonObject(0)
        .containsKey("buckets"));
    var bad = api.get("listBudgets", "/v1/budgets?buckets=1");
    assertEquals(400, bad.status());
    assertEquals("buckets", bad.json().getString("field"));
  }

  @Test
  void listsEveryBudget() throws Exception {
    for (String name : new String[] {"a", "b.c", "d-e_f"}) {
      api.write("countRequests", "POST", "/v1/budgets/" + name + "/requests", "{\"count\": 1}");
    }
    var list = api.get("listBudgets", "/v1/budgets");
    assertEquals(200, list.status());
    assertEquals(3, list.json().getJsonArray("budgets").size());
    assertFalse(list.json().getBoolean("truncated"));
  }

  @Test
  void listsOnlyExhaustedOrOnlyNotExhaustedBudgets() throws Exception {
    api.write("configureBudget", "PUT", "/v1/budgets/spent", "{\"ratio\": 0.1, \"min_retries_per_second\": 0}");
    api.write("countRequests", "POST", "/v1/budgets/spent/requests", "{\"count\": 10}");
    api.write("acquireRetries", "POST", "/v1/budgets/spent/retries", "{\"count\": 1}");
    api.write("countRequests", "POST", "/v1/budgets/fresh/requests", "{\"count\": 10}");
    var exhausted = api.get("listBudgets", "/v1/budgets?exhausted=true").json().getJsonArray("budgets");
    assertEquals(1, exhausted.size());
    assertEquals("spent", exhausted.getJsonObject(0).getString("name"));
    var notExhausted = api.get("listBudgets", "/v1/budgets?exhausted=false").json().getJsonArray("budgets");
    assertEquals(1, notExhausted.size());
    assertEquals("fresh", notExhausted.getJsonObject(0).getString("name"));
    assertEquals(2, api.get("listBudgets", "/v1/budgets").json().getJsonArray("budgets").size());
    var bad = api.get("listBudgets", "/v1/budgets?exhausted=yes");
    assertEquals(400, bad.status());
    assertEquals("exhausted", bad.json().getString("field"));
    var unknown = api.get("listBudgets", "/v1/budgets?limit=5");
    assertEquals(400, unknown.status());
    assertEquals("limit", unknown.json().getString("field"));
  }

  @Test
  void servesItsOpenApiDocument() throws Exception {
    var doc = api.get("openApi", "/openapi.yaml");
    assertEquals(200, doc.status());
    assertEquals(java.nio.file.Files.readString(java.nio.file.Path.of("openapi.yaml")), doc.body(),
        "the document in the repository, byte for byte");
  }

  @Test
  void optionsNamesTheMethodsOfEachPath() throws Exception {
    for (String[] p : new String[][] {{"optionsBudgets", "/v1/budgets", "GET, HEAD, OPTIONS"},
        {"optionsBudget", "/v1/budgets/x", "GET, HEAD, OPTIONS, PUT"},
        {"optionsRetries", "/v1/budgets/x/retries", "POST, OPTIONS"},
        {"optionsOpenApi", "/openapi.yaml", "GET, HEAD, OPTIONS"}}) {
      var r = api.send(p[0], HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + coordinator.port() + p[1]))
          .method("OPTIONS", HttpRequest.BodyPublishers.noBody()));
      assertEquals(204, r.status(), p[1]);
      assertTrue(r.raw().headers().firstValue("Allow").orElseThrow().startsWith(p[2]), p[1]);
    }
  }

  @Test
  void aBodyThatIsNotJsonIs415() throws Exception {
    var r = api.send("configureBudget", HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + coordinator.port()
            + "/v1/budgets/x")).header("Authorization", "Bearer " + TOKEN).header("Content-Type", "text/plain")
        .PUT(HttpRequest.BodyPublishers.ofString("{\"ratio\": 0.1}")));
    assertEquals(415, r.status());
    assertEquals("Content-Type", r.json().getString("field"));
    assertEquals(0L, redis.server().call("DBSIZE"));
  }

  @Test
  void unknownBudgetIs404AndCreatesNothing() throws Exception {
    var r = api.get("getBudget", "/v1/budgets/nobody");
    assertEquals(404, r.status());
    assertEquals(0L, redis.server().call("DBSIZE"));
  }

  @ParameterizedTest(name = "{0} {1} {2} -> {3} naming {4}")
  @CsvSource(delimiter = '|', value = {
      "configureBudget|PUT|/v1/budgets/x|{\"ratio\": 0}|ratio",
      "configureBudget|PUT|/v1/budgets/x|{\"ratio\": 1.5}|ratio",
      "configureBudget|PUT|/v1/budgets/x|{\"ratio\": \"0.1\"}|ratio",
      "configureBudget|PUT|/v1/budgets/x|{\"ratio\": 1e-9}|ratio",
      "configureBudget|PUT|/v1/budgets/x|{\"window_seconds\": 0}|window_seconds",
      "configureBudget|PUT|/v1/budgets/x|{\"window_seconds\": 2.5}|window_seconds",
      "configureBudget|PUT|/v1/budgets/x|{\"window_seconds\": 99999999999999999999}|window_seconds",
      "configureBudget|PUT|/v1/budgets/x|{\"min_retries_per_second\": -1}|min_retries_per_second",
      "configureBudget|PUT|/v1/budgets/x|{\"mode\": \"loud\"}|mode",
      "configureBudget|PUT|/v1/budgets/x|{\"mode\": 1}|mode",
      "configureBudget|PUT|/v1/budgets/x|{\"colour\": \"red\"}|colour",
      "configureBudget|PUT|/v1/budgets/x|{}|body",
      "configureBudget|PUT|/v1/budgets/x|[1, 2]|body",
      "configureBudget|PUT|/v1/budgets/x|{\"ratio\": |body",
      "configureBudget|PUT|/v1/budgets/x||body",
      "configureBudget|PUT|/v1/budgets/x|null|body",
      "countRequests|POST|/v1/budgets/x/requests|{}|count",
      "countRequests|POST|/v1/budgets/x/requests|{\"count\": 0}|count",
      "countRequests|POST|/v1/budgets/x/requests|{\"count\": -3}|count",
      "countRequests|POST|/v1/budgets/x/requests|{\"count\": 1000001}|count",
      "countRequests|POST|/v1/budgets/x/requests|{\"count\": 1e300}|count",
      "countRequests|POST|/v1/budgets/x/requests|{\"count\": \"5\"}|count",
      "countRequests|POST|/v1/budgets/x/requests|{\"count\": true}|count",
      "countRequests|POST|/v1/budgets/x/requests|{\"count\": 1, \"extra\": 2}|extra",
      "acquireRetries|POST|/v1/budgets/x/retries|{\"count\": 1001}|count",
      "acquireRetries|POST|/v1/budgets/x/retries|{\"count\": 1.5}|count",
      "acquireRetries|POST|/v1/budgets/x/retries|{\"count\": null}|count",
      "acquireRetries|POST|/v1/budgets/bad%20name/retries|{\"count\": 1}|name",
      "acquireRetries|POST|/v1/budgets/%7Bx%7D/retries|{\"count\": 1}|name",
  })
  void badInputIs400NamingTheField(String op, String method, String path, String body, String field) throws Exception {
    var r = api.write(op, method, path, body == null ? "" : body);
    assertEquals(400, r.status(), r.body());
    assertEquals(field, r.json().getString("field"), r.body());
    assertEquals(0L, redis.server().call("DBSIZE"), "nothing written");
  }

  @Test
  void writesNeedTheToken() throws Exception {
    var none = api.write("configureBudget", "PUT", "/v1/budgets/x", "{\"ratio\": 0.1}", null);
    assertEquals(401, none.status());
    var wrong = api.write("acquireRetries", "POST", "/v1/budgets/x/retries", "{\"count\": 1}", "guess");
    assertEquals(401, wrong.status());
    var wrongRequests = api.write("countRequests", "POST", "/v1/budgets/x/requests", "{\"count\": 1}", TOKEN + "x");
    assertEquals(401, wrongRequests.status());
    assertEquals(0L, redis.server().call("DBSIZE"));
  }

  @Test
  void oversizedBodyIs413() throws Exception {
    String big = "{\"count\": 1, \"pad\": \"" + "x".repeat(70 * 1024) + "\"}";
    var r = api.write("countRequests", "POST", "/v1/budgets/x/requests", big);
    assertEquals(413, r.status());
    assertEquals(0L, redis.server().call("DBSIZE"));
  }

  @Test
  void healthAndMetrics() throws Exception {
    assertEquals(200, api.get("live", "/health/live").status());
    assertEquals(200, api.get("ready", "/health/ready").status());
    api.write("countRequests", "POST", "/v1/budgets/metered/requests", "{\"count\": 10}");
    var metrics = api.get("metrics", "/metrics");
    assertEquals(200, metrics.status());
    assertTrue(metrics.body().contains("vertx_http_server_requests_total"), "Vert.x HTTP server metrics");
    assertTrue(metrics.body().contains("retry_budget_redis_up"));
  }

  @Test
  void unknownPathsAndMethodsAreNot500() throws Exception {
    var missing = api.raw(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + coordinator.port() + "/v2/nothing")).build());
    assertEquals(404, missing.statusCode());
    var patch = api.raw(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + coordinator.port() + "/v1/budgets/x"))
        .method("PATCH", HttpRequest.BodyPublishers.noBody()).header("Authorization", "Bearer " + TOKEN).build());
    assertEquals(405, patch.statusCode());
  }
}
