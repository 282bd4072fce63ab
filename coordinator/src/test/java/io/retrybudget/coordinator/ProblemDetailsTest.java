package io.retrybudget.coordinator;

import static io.retrybudget.coordinator.ProblemAssert.assertProblem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.redis.protocol.BudgetKeys;
import io.retrybudget.testing.RedisExtension;
import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.net.http.HttpRequest;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Every error path of the coordinator's HTTP API answers an RFC 9457 problem (content type, type,
 * title, status, detail, instance, and the extension members error and field), on the real server
 * and a real Redis: validation, authentication, not found, method, body size, media type, the
 * permit cap, a broken budget, Redis down, and what the connection guard refuses before any route
 * (its timeouts and connection cap are checked in ConnectionLimitsTest). Answers the contract
 * describes also go through {@link ApiClient}, which checks them against openapi.yaml.
 */
class ProblemDetailsTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();
  static final String TOKEN = "problem-test-token";
  static Coordinator coordinator;
  static ApiClient api;

  @BeforeAll
  static void start() throws Exception {
    coordinator = Coordinator.start(CoordinatorConfig.fromEnvironment(Map.of(
        "REDIS_URL", redis.uri(), "COORDINATOR_PORT", "0", "COORDINATOR_TOKEN", TOKEN)));
    api = new ApiClient(coordinator.port(), TOKEN);
  }

  @AfterAll
  static void stop() {
    if (api != null) {
      api.close();
    }
    if (coordinator != null) {
      coordinator.close();
    }
  }

  private static RawHttp.Answer raw(int port, String request) throws Exception {
    try (RawHttp c = new RawHttp(port)) {
      return c.send(request).read();
    }
  }

  @Test
  void validationAuthenticationNotFoundAndLimitsAreProblems() throws Exception {
    assertEquals(200, api.write("configureBudget", "PUT", "/v1/budgets/p", "{\"min_retries_per_second\": 10}").status());
    assertProblem(api.write("configureBudget", "PUT", "/v1/budgets/p", "{\"ratio\": 5}"),
        400, "invalid-request", "The request is not valid", "ratio", "/v1/budgets/p");
    assertProblem(api.write("configureBudget", "PUT", "/v1/budgets/p", "{\"ratio\": 0.1,}"),
        400, "invalid-request", "The request is not valid", "body", "/v1/budgets/p");
    assertProblem(api.get("listBudgets", "/v1/budgets?exhausted=maybe"),
        400, "invalid-request", "The request is not valid", "exhausted", "/v1/budgets");
    assertProblem(api.get("listBudgets", "/v1/budgets?verbose=1"),
        400, "invalid-request", "The request is not valid", "verbose", "/v1/budgets");

    ApiClient.Response wrongToken = api.write("configureBudget", "PUT", "/v1/budgets/p", "{\"ratio\": 0.2}", "wrong");
    assertProblem(wrongToken, 401, "unauthorized", "A valid bearer token is required", "Authorization", "/v1/budgets/p");
    assertEquals("Bearer", wrongToken.raw().headers().firstValue("www-authenticate").orElse(null));
    assertProblem(api.write("acquireRetries", "POST", "/v1/budgets/p/retries", "{\"count\": 1}", null),
        401, "unauthorized", "A valid bearer token is required", "Authorization", "/v1/budgets/p/retries");

    assertProblem(api.get("getBudget", "/v1/budgets/none"), 404, "not-found", "No such resource", "name", "/v1/budgets/none");
    assertProblem(api.write("countRequests", "POST", "/v1/budgets/none/requests", "{\"count\": 1}"),
        404, "not-found", "No such resource", "name", "/v1/budgets/none/requests");
    assertProblem(api.write("deleteBudget", "DELETE", "/v1/budgets/none", ""),
        404, "not-found", "No such resource", "name", "/v1/budgets/none");

    assertProblem(api.write("configureBudget", "PUT", "/v1/budgets/p", "{\"ratio\": \"" + "x".repeat(70_000) + "\"}"),
        413, "body-too-large", "The request body is too large", "body", "/v1/budgets/p");
    assertProblem(api.send("configureBudget", HttpRequest.newBuilder(URI.create(api.base() + "/v1/budgets/p"))
            .header("Authorization", "Bearer " + TOKEN).header("Content-Type", "text/plain")
            .PUT(HttpRequest.BodyPublishers.ofString("{\"ratio\": 0.2}"))),
        415, "unsupported-media-type", "The body must be JSON in UTF-8", "Content-Type", "/v1/budgets/p");

    // a floor of 10/s: the paced balance holds 5 permits at most
    JsonObject over = assertProblem(api.write("acquireRetries", "POST", "/v1/budgets/p/retries", "{\"count\": 100}"),
        422, "count-over-cap", "More permits than the budget can hold at once", "count", "/v1/budgets/p/retries");
    assertEquals(5, over.getInteger("max_count"), over.encode());
    assertTrue(over.getString("detail").contains("ask for at most 5"), over.encode());
  }

  @Test
  void aBudgetWithBadStateInRedisIsABrokenBudgetProblem() throws Exception {
    assertEquals(200, api.write("configureBudget", "PUT", "/v1/budgets/bad", "{\"mode\": \"enforce\"}").status());
    redis.server().call("HSET", new BudgetKeys("bad").config(), "ratio_ppm", "nan");
    JsonObject p = assertProblem(api.get("getBudget", "/v1/budgets/bad"), 409, "broken-budget",
        "The budget's keys in Redis hold bad state", "ratio_ppm", "/v1/budgets/bad");
    assertEquals("bad", p.getString("name"));
    assertEquals("bad", p.getString("budget"));
    assertEquals(new BudgetKeys("bad").config(), p.getString("key"));
    assertTrue(p.getString("detail").contains("fix it with PUT or DELETE /v1/budgets/bad"), p.encode());
    assertEquals(204, api.write("deleteBudget", "DELETE", "/v1/budgets/bad", "").status());
  }

  @Test
  void routesMethodsAndTheStatusPageAnswerProblems() throws Exception {
    int port = coordinator.port();
    assertProblem(raw(port, "GET /v1/budgets/%ZZ HTTP/1.1\r\nHost: t\r\n\r\n"),
        400, "invalid-request", "The request is not valid", "path", "/v1/budgets/%ZZ");
    assertProblem(raw(port, "GET /v1/budgets/a%20b HTTP/1.1\r\nHost: t\r\n\r\n"),
        400, "invalid-request", "The request is not valid", "name", "/v1/budgets/a%20b");
    assertProblem(raw(port, "DELETE /v1/budgets/x HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " + TOKEN
        + "\r\nAuthorization: Bearer " + TOKEN + "\r\n\r\n"),
        400, "invalid-request", "The request is not valid", "Authorization", "/v1/budgets/x");
    assertProblem(raw(port, "GET /nothing-here HTTP/1.1\r\nHost: t\r\n\r\n"),
        404, "not-found", "No such resource", "path", "/nothing-here");
    RawHttp.Answer method = raw(port, "DELETE /v1/budgets?x=1 HTTP/1.1\r\nHost: t\r\n\r\n");
    assertProblem(method, 405, "method-not-allowed", "Method not allowed here", "method", "/v1/budgets");
    assertEquals("GET, HEAD, OPTIONS", method.header("allow"));
    // the status page's own routes
    assertProblem(raw(port, "GET /budgets/a%20b HTTP/1.1\r\nHost: t\r\n\r\n"),
        400, "invalid-request", "The request is not valid", "name", "/budgets/a%20b");
    assertProblem(raw(port, "GET /status/nope.js HTTP/1.1\r\nHost: t\r\n\r\n"),
        404, "not-found", "No such resource", "path", "/status/nope.js");
    // the management listener's
    int management = coordinator.managementPort();
    assertProblem(raw(management, "GET /v1/budgets HTTP/1.1\r\nHost: t\r\n\r\n"),
        404, "not-found", "No such resource", "path", "/v1/budgets");
    assertProblem(raw(management, "POST /metrics HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n"),
        405, "method-not-allowed", "Method not allowed here", "method", "/metrics");
  }

  @Test
  void whatTheConnectionGuardRefusesBeforeAnyRouteIsAProblem() throws Exception {
    int port = coordinator.port();
    assertProblem(raw(port, "BREW /pot HTTP/1.1\r\nHost: t\r\n\r\n"),
        501, "unknown-method", "Unknown method", "method", "/pot");
    assertProblem(raw(port, "GET /health/live HTTP/1.2\r\nHost: t\r\n\r\n"),
        505, "http-version-not-supported", "HTTP version not supported", "version", "/health/live");
    assertProblem(raw(port, "PUT /v1/budgets/x HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n"
        + "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
        400, "invalid-request", "The request is not valid", "header", "/v1/budgets/x");
    assertProblem(raw(port, "GET /health/live HTTP/1.1\r\n\r\n"),
        400, "invalid-request", "The request is not valid", "header", "/health/live");
    // unreadable requests: no instance to name
    assertProblem(raw(port, "GET /" + "a".repeat(10_000) + " HTTP/1.1\r\nHost: t\r\n\r\n"),
        414, "uri-too-long", "The request line is too long", "path", null);
    assertProblem(raw(port, "GET /health/live HTTP/1.1\r\nHost: t\r\nX-Big: " + "a".repeat(20_000) + "\r\n\r\n"),
        431, "headers-too-large", "The request headers are too large", "header", null);
  }

  @Test
  void redisDownIsARedisUnavailableProblemNamingTheCause() throws Exception {
    assertEquals(200, api.write("configureBudget", "PUT", "/v1/budgets/down", "{\"mode\": \"enforce\"}").status());
    redis.server().kill();
    try {
      for (ApiClient.Response r : new ApiClient.Response[] {
          api.write("acquireRetries", "POST", "/v1/budgets/down/retries", "{\"count\": 1}"),
          api.get("getBudget", "/v1/budgets/down")}) {
        JsonObject p = assertProblem(r, 503, "redis-unavailable", "Redis is unavailable", null,
            r.raw().uri().getPath());
        assertTrue(p.getString("detail").contains("127.0.0.1:" + redis.server().port()), p.encode());
      }
    } finally {
      redis.server().restart();
      // the coordinator's connection comes back on Lettuce's reconnect backoff; the other tests of
      // this class need it back, whichever order they run in (30 s: a reconnect at load 16 is seconds)
      long until = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(30);
      while (api.get("getBudget", "/v1/budgets/down").status() == 503 && System.nanoTime() < until) {
        Thread.sleep(50);
      }
    }
  }
}
