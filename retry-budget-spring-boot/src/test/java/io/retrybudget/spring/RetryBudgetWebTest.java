package io.retrybudget.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.retry.RetryBudgetExhaustedException;
import io.retrybudget.retry.RetryExecutor;
import io.retrybudget.testing.RedisExtension;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.http.ResponseEntity;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.client.RestClient;

/**
 * One real application (embedded Tomcat on a random port, actuator) against a real Redis: the
 * RestClient interceptor against the application's own endpoints, and the actuator endpoint and
 * health over HTTP. The backoff is recorded by a {@link RetryExecutor.Sleeper} bean, not slept.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, classes = RetryBudgetWebTest.App.class,
    properties = {
        "retrybudget.call-timeout=500ms",
        "retrybudget.budgets.backend.ratio=0.1",
        "retrybudget.budgets.backend.min-retries-per-second=100",
        "retrybudget.budgets.strict.ratio=0.1",
        "retrybudget.budgets.strict.min-retries-per-second=0",
        "retrybudget.clients.backend.budget=backend",
        "retrybudget.clients.backend.max-attempts=3",
        "retrybudget.clients.backend.backoff-base=100ms",
        "retrybudget.clients.backend.backoff-cap=5s",
        "retrybudget.clients.timed.budget=backend",
        "retrybudget.clients.timed.max-attempts=3",
        "retrybudget.clients.timed.backoff-base=100ms",
        "retrybudget.clients.timed.backoff-cap=5s",
        "retrybudget.clients.timed.deadline=8s",
        "retrybudget.clients.strict.budget=strict",
        "retrybudget.clients.strict.max-attempts=3",
        "management.endpoints.web.exposure.include=health,retrybudgets",
        "management.endpoint.health.show-details=always"})
class RetryBudgetWebTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();

  @DynamicPropertySource
  static void redisUri(DynamicPropertyRegistry registry) {
    registry.add("retrybudget.redis.uri", redis::uri);
  }

  /** Waits the executors asked for, in nanoseconds; nothing sleeps. */
  static final List<Long> WAITS = new CopyOnWriteArrayList<>();

  @SpringBootConfiguration
  @EnableAutoConfiguration
  static class App {
    @Bean
    RetryExecutor.Sleeper recordingSleeper() {
      return WAITS::add;
    }

    @Bean
    Backend backend() {
      return new Backend();
    }
  }

  /** Answers 503 (with Retry-After: 1) to the first {@code failures} calls of each id, then 200. */
  @RestController
  static class Backend {
    final Map<String, AtomicInteger> calls = new ConcurrentHashMap<>();
    final List<String> attemptHeaders = new CopyOnWriteArrayList<>();
    final List<String> deadlineHeaders = new CopyOnWriteArrayList<>();
    final List<String> keys = new CopyOnWriteArrayList<>();

    @GetMapping("/flaky/{id}/{failures}")
    ResponseEntity<String> flaky(@PathVariable String id, @PathVariable int failures,
        @RequestHeader("X-Retry-Attempt") String attempt,
        @RequestHeader(name = "X-Request-Deadline-Ms", required = false) List<String> deadline) {
      attemptHeaders.add(attempt);
      deadlineHeaders.add(String.valueOf(deadline));
      if (calls.computeIfAbsent(id, k -> new AtomicInteger()).incrementAndGet() <= failures) {
        return ResponseEntity.status(503).header("Retry-After", "1").body("busy");
      }
      return ResponseEntity.ok("ok " + id);
    }

    @PostMapping("/orders/{id}")
    ResponseEntity<String> order(@PathVariable String id,
        @RequestHeader(name = "Idempotency-Key", required = false) String key) {
      keys.add(String.valueOf(key));
      if (calls.computeIfAbsent(id, k -> new AtomicInteger()).incrementAndGet() == 1) {
        return ResponseEntity.status(503).body("busy");
      }
      return ResponseEntity.ok("created " + id);
    }

    @GetMapping("/bad/{id}")
    ResponseEntity<String> bad(@PathVariable String id) {
      calls.computeIfAbsent(id, k -> new AtomicInteger()).incrementAndGet();
      return ResponseEntity.status(400).body("no");
    }
  }

  @LocalServerPort int port;
  @Autowired RetryBudgetInterceptors interceptors;
  @Autowired Backend backend;

  private RestClient client(String name) {
    return RestClient.builder().baseUrl("http://localhost:" + port).requestInterceptor(interceptors.forClient(name)).build();
  }

  @BeforeEach
  void clear() {
    WAITS.clear();
    backend.attemptHeaders.clear();
    backend.deadlineHeaders.clear();
    backend.keys.clear();
  }

  @Test
  void retries503HonouringRetryAfter() {
    String body = client("backend").get().uri("/flaky/a/1").retrieve().body(String.class);

    assertEquals("ok a", body);
    assertEquals(List.of("1", "2"), backend.attemptHeaders);
    assertEquals(List.of("null", "null"), backend.deadlineHeaders, "no deadline, no attempt timeout: none sent");
    assertEquals(1, WAITS.size());
    assertTrue(WAITS.get(0) >= 1_000_000_000L, "waited at least Retry-After: " + WAITS);
  }

  @Test
  void everyAttemptCarriesTheTimeLeftOfTheCallsDeadline() {
    String body = client("timed").get().uri("/flaky/d1/1").header("X-Request-Deadline-Ms", "999999")
        .retrieve().body(String.class);

    assertEquals("ok d1", body);
    assertEquals(List.of("1", "2"), backend.attemptHeaders);
    assertEquals(2, backend.deadlineHeaders.size());
    for (String h : backend.deadlineHeaders) {
      assertTrue(h.matches("\\[\\d+\\]"), "one value per attempt, the caller's replaced: " + backend.deadlineHeaders);
      long ms = Long.parseLong(h.substring(1, h.length() - 1));
      assertTrue(ms > 0 && ms <= 8_000, "what the 8 s deadline leaves: " + backend.deadlineHeaders);
    }
  }

  @Test
  void restTemplateTakesTheSameInterceptor() {
    org.springframework.web.client.RestTemplate template = new org.springframework.web.client.RestTemplate();
    template.getInterceptors().add(interceptors.forClient("backend"));

    assertEquals("ok t1", template.getForObject("http://localhost:" + port + "/flaky/t1/2", String.class));
    assertEquals(List.of("1", "2", "3"), backend.attemptHeaders);
    assertEquals(2, WAITS.size());
  }

  @Test
  void retriedPostCarriesOneIdempotencyKey() {
    String body = client("backend").post().uri("/orders/o1").retrieve().body(String.class);

    assertEquals("created o1", body);
    assertEquals(2, backend.keys.size());
    assertNotNull(backend.keys.get(0));
    assertTrue(!"null".equals(backend.keys.get(0)), backend.keys.toString());
    assertEquals(backend.keys.get(0), backend.keys.get(1));
  }

  @Test
  void otherClientErrorsAreNotRetried() {
    assertThrows(org.springframework.web.client.HttpClientErrorException.class,
        () -> client("backend").get().uri("/bad/b1").retrieve().body(String.class));
    assertEquals(1, backend.calls.get("b1").get());
    assertTrue(WAITS.isEmpty());
  }

  @Test
  void anExhaustedBudgetFailsFast() {
    // "strict" has no floor: 10 % of the one first attempt is no retry at all
    RetryBudgetExhaustedException e = assertThrows(RetryBudgetExhaustedException.class,
        () -> client("strict").get().uri("/flaky/s1/5").retrieve().body(String.class));

    assertEquals(BudgetDecision.Reason.DENIED_EXHAUSTED, e.decision().reason());
    assertInstanceOf(org.springframework.http.client.ClientHttpResponse.class, e.lastResult());
    assertEquals(1, backend.calls.get("s1").get());
    assertTrue(WAITS.isEmpty(), "no wait before failing: " + WAITS);
  }

  @Test
  void actuatorEndpointAndHealthAnswer() {
    RestClient plain = RestClient.builder().baseUrl("http://localhost:" + port).build();

    @SuppressWarnings("unchecked")
    Map<String, Object> all = plain.get().uri("/actuator/retrybudgets").retrieve().body(Map.class);
    assertEquals(false, all.get("degraded"));
    assertEquals(java.util.Set.of("backend", "strict"), ((Map<?, ?>) all.get("budgets")).keySet());

    @SuppressWarnings("unchecked")
    Map<String, Object> one = plain.get().uri("/actuator/retrybudgets/backend").retrieve().body(Map.class);
    assertEquals("backend", one.get("name"));
    assertEquals(0.1, one.get("ratio"));
    assertEquals(100, one.get("min_retries_per_second"));

    Integer missing = plain.get().uri("/actuator/retrybudgets/unknown").exchange((req, res) -> res.getStatusCode().value());
    assertEquals(404, missing);

    @SuppressWarnings("unchecked")
    Map<String, Object> health = plain.get().uri("/actuator/health/retryBudget").retrieve().body(Map.class);
    assertEquals("UP", health.get("status"));
  }
}
