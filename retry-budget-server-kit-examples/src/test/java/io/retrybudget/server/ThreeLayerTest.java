package io.retrybudget.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.retry.RetryPolicy;
import io.retrybudget.retry.SuccessAwareBudget;
import io.retrybudget.retry.http.RetryingHttpClient;
import io.retrybudget.server.example.LayerDemo;
import io.retrybudget.server.example.LayerDemo.Mode;
import io.retrybudget.server.example.LayerDemo.Service;
import io.retrybudget.testing.RedisExtension;
import io.vertx.core.Vertx;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A -> B -> C on real loopback HTTP servers, C failing every call, three attempts in every layer:
 * naive is 27 calls at C per user request; budgets with middle-layer suppression bring it to <= 1.2.
 */
class ThreeLayerTest {
  @RegisterExtension
  static final RedisExtension redis = RedisExtension.standalone();

  static final RetryPolicy THREE = RetryPolicy.builder().maxAttempts(3)
      .backoff(Duration.ofMillis(1), Duration.ofMillis(4)).build();

  private Vertx vertx;
  private RedisBudgetClient budgets;
  private final List<AutoCloseable> closing = new ArrayList<>();
  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  @BeforeEach
  void start() {
    vertx = Vertx.vertx();
    // the machine is shared: a generous bound, so a slow first script load is not read as Redis down
    budgets = RedisBudgetClient.builder(redis.connectionOptions().build()).callTimeout(Duration.ofSeconds(5)).build();
  }

  @AfterEach
  void stop() throws Exception {
    for (AutoCloseable c : closing) {
      c.close();
    }
    budgets.close();
    vertx.close().await();
  }

  /** Budget of one dependency: 10 % of first attempts, no floor (so short runs show the ratio). */
  private io.retrybudget.budget.RetryBudget budget(String dependency) {
    return budgets.budget(BudgetConfig.builder(dependency + "-" + UUID.randomUUID().toString().substring(0, 8))
        .ratio(0.1).minRetriesPerSecond(0).build());
  }

  private <T extends AutoCloseable> T closing(T c) {
    closing.add(c);
    return c;
  }

  record Run(double cPerUser, double bPerUser, double aPerUser, int ok, Map<String, Long> cAttempts) {}

  private Run run(Mode mode, int users) {
    return run(mode, users, 1.0, THREE, mode == Mode.NAIVE ? d -> null : this::budget);
  }

  /** Ratio {@code ratio}, floor {@code floor}/s, behind a success-aware throttle (default: K 2, 10 s) when {@code aware}. */
  private java.util.function.Function<String, io.retrybudget.budget.RetryBudget> budgets(double ratio, int floor,
      boolean aware) {
    return budgets(ratio, floor, aware, io.retrybudget.budget.AdaptiveThrottle.Config.defaults());
  }

  private java.util.function.Function<String, io.retrybudget.budget.RetryBudget> budgets(double ratio, int floor,
      boolean aware, io.retrybudget.budget.AdaptiveThrottle.Config throttle) {
    return dependency -> {
      io.retrybudget.budget.RetryBudget fleet = budgets.budget(BudgetConfig.builder(dependency + "-"
          + UUID.randomUUID().toString().substring(0, 8)).ratio(ratio).minRetriesPerSecond(floor).build());
      return aware ? SuccessAwareBudget.builder(fleet).throttle(throttle).build() : fleet;
    };
  }

  private Run run(Mode mode, int users, double failure, RetryPolicy policy,
      java.util.function.Function<String, io.retrybudget.budget.RetryBudget> budget) {
    Service c = closing(LayerDemo.backend(vertx, failure, 0, 1));
    Service b = closing(LayerDemo.layer(vertx, c.uri(), mode, policy, budget.apply("c")));
    Service a = closing(LayerDemo.layer(vertx, b.uri(), mode, policy, budget.apply("b")));
    RetryingHttpClient user = closing(LayerDemo.client(http, policy, budget.apply("a")).build());
    HttpRequest request = HttpRequest.newBuilder(a.uri().resolve("/work")).timeout(Duration.ofSeconds(20)).GET().build();
    int ok = 0;
    for (int wave = 0; wave < users / 10; wave++) {
      List<CompletableFuture<HttpResponse<String>>> calls = new ArrayList<>();
      for (int i = 0; i < 10; i++) {
        calls.add(user.sendAsync(request, HttpResponse.BodyHandlers.ofString()));
      }
      for (CompletableFuture<HttpResponse<String>> f : calls) {
        try {
          ok += f.join().statusCode() == 200 ? 1 : 0;
        } catch (RuntimeException refusedByTheEdgeBudget) {
          // the user's call failed: counted as not ok
        }
      }
    }
    return new Run(c.calls() / (double) users, b.calls() / (double) users, a.calls() / (double) users, ok, c.attemptHeaders());
  }

  @Test
  void naiveRetriesInEveryLayerMultiplyTo27() {
    Run naive = run(Mode.NAIVE, 40);
    // 3 x 3 x 3; java.net.http may resend a GET whose pooled connection closed, so a hair more
    assertTrue(naive.cPerUser() >= 27.0 && naive.cPerUser() <= 27.5, "calls at C per user request: " + naive.cPerUser());
    assertTrue(naive.bPerUser() >= 9.0 && naive.bPerUser() <= 9.2, "at B: " + naive.bPerUser());
    assertTrue(naive.aPerUser() >= 3.0 && naive.aPerUser() <= 3.1, "at A: " + naive.aPerUser());
    assertEquals(0, naive.ok());
  }

  @Test
  void suppressionInTheMiddleTurns27IntoAtMost1point2() {
    Run suppressed = run(Mode.SUPPRESSED, 200);
    System.out.println("three layers, C down, suppressed: " + suppressed);
    assertTrue(suppressed.cPerUser() <= 1.2, "calls at C per user request: " + suppressed.cPerUser());
    assertTrue(suppressed.cPerUser() >= 1.0, "every user request reached C once: " + suppressed.cPerUser());
    assertEquals(1.0, suppressed.bPerUser(), 0.0001, "do-not-retry stopped A from retrying B");
    assertEquals(1.0, suppressed.aPerUser(), 0.0001, "and the edge from retrying A");
  }

  @Test
  void successAwareBudgetsStopRetriesInAnOutageThatARatioOfHalfAloneWouldLetThrough() {
    Run aware = run(Mode.SUPPRESSED, 200, 1.0, THREE, budgets(0.5, 0, true));
    System.out.println("three layers, C down, suppressed, success-aware 0.5: " + aware);
    assertTrue(aware.cPerUser() <= 1.2, "calls at C per user request: " + aware.cPerUser());
    assertEquals(1.0, aware.bPerUser(), 0.0001);
    assertEquals(1.0, aware.aPerUser(), 0.0001);
  }

  @Test
  void aFixedRatioOfHalfAloneCostsHalfARetryPerRequestInAnOutage() {
    // the control for the test above: the same budgets without the throttle
    Run fixed = run(Mode.SUPPRESSED, 200, 1.0, THREE, budgets(0.5, 0, false));
    assertTrue(fixed.cPerUser() >= 1.3, "calls at C per user request: " + fixed.cPerUser());
  }

  @Test
  void inAPartialOutageSuccessAwareSuppressionServesUsersAsWellAsNaive() {
    RetryPolicy eight = THREE.toBuilder().maxAttempts(8).build();
    Run naive = run(Mode.NAIVE, 200, 0.3, THREE, d -> null);
    // a floor of 1,000 retries/s: admission is paced, and a budget whose traffic began a moment ago
    // holds only half a second of its young rate; this one-second run is all cold start, and a floor of
    // 100/s still refused up to 3 of its 60 retries (197 of 200 served once in CI). The fleet budget is
    // the worst-case cap here: what is compared with naive is the success-aware throttle
    // and a throttle that refuses nothing before 20 retries have ended: with the default 5, three of
    // the first five retries failing (one run in six at 30 %) closes it, its refusals count as
    // requests and keep it mostly closed for the whole one-second run (166, 197 and 200 of 200 users
    // served in three runs on a quiet machine); the claim here is about the throttle past its first
    // handful of retries
    Run aware = run(Mode.SUPPRESSED, 200, 0.3, eight, budgets(0.5, 1_000, true,
        io.retrybudget.budget.AdaptiveThrottle.Config.builder().minRequests(20).build()));
    System.out.println("three layers, C fails 30 %: naive " + naive + ", success-aware " + aware);
    // naive: up to 27 attempts; suppressed: up to 8, all at B (1 - 0.3^8 = 0.99993)
    assertTrue(aware.ok() >= naive.ok() - 2, "users served: naive " + naive.ok() + ", success-aware " + aware.ok());
    assertEquals(1.0, aware.bPerUser(), 0.0001, "only B retried");
    assertTrue(aware.cPerUser() <= naive.cPerUser() + 0.15, "at the cost of about naive's calls at C: naive "
        + naive.cPerUser() + ", success-aware " + aware.cPerUser());
  }

  /**
   * C answers after 1 s; every caller (the user's client, A, B) gives each attempt 200 ms and has
   * 3 attempts, budgets that would allow every retry (ratio 1, floor 100/s): only what the layers
   * tell each other limits the calls. {@code margin} null: inbound deadlines ignored.
   */
  private Run slowWithEqualTimeouts(Duration margin, int users) {
    RetryPolicy flat = THREE.toBuilder().attemptTimeout(Duration.ofMillis(200)).build();
    java.util.function.Function<String, io.retrybudget.budget.RetryBudget> roomy = budgets(1.0, 100, false);
    java.util.concurrent.atomic.AtomicLong slowness = new java.util.concurrent.atomic.AtomicLong(0);
    Service c = closing(LayerDemo.backend(vertx, () -> 0.0, slowness::get, 1));
    Service b = closing(LayerDemo.layer(vertx, c.uri(), Mode.SUPPRESSED, flat, roomy.apply("c"), margin));
    Service a = closing(LayerDemo.layer(vertx, b.uri(), Mode.SUPPRESSED, flat, roomy.apply("b"), margin));
    RetryingHttpClient user = closing(LayerDemo.client(http, flat, roomy.apply("a")).build());
    HttpRequest request = HttpRequest.newBuilder(a.uri().resolve("/work")).timeout(Duration.ofSeconds(20)).GET().build();
    // warm-up with C healthy: connections, classes and budget scripts loaded before C turns slow
    List<CompletableFuture<HttpResponse<String>>> warm = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      warm.add(user.sendAsync(request, HttpResponse.BodyHandlers.ofString()));
    }
    warm.forEach(f -> f.handle((r, e) -> null).join());
    long c0 = c.calls();
    long b0 = b.calls();
    long a0 = a.calls();
    slowness.set(1_000);
    for (int wave = 0; wave < users / 10; wave++) {
      List<CompletableFuture<HttpResponse<String>>> calls = new ArrayList<>();
      for (int i = 0; i < 10; i++) {
        calls.add(user.sendAsync(request, HttpResponse.BodyHandlers.ofString()));
      }
      calls.forEach(f -> f.handle((r, e) -> null).join());
    }
    // a user that gave up may leave A's or B's call below still running: count once they ended
    a.idle().join();
    b.idle().join();
    return new Run((c.calls() - c0) / (double) users, (b.calls() - b0) / (double) users, (a.calls() - a0) / (double) users, 0,
        c.attemptHeaders());
  }

  @Test
  void withEqualTimeoutsNoLayerRetriesPastItsCallersDeadlineWhenDeadlinesPropagate() {
    // the user's 200 ms reach A as X-Request-Deadline-Ms; A gives B what is left less 50 ms, B gives C
    // less again: B's attempt is cut with no time left for a retry, and so is A's. That holds however
    // late the machine runs (the deadline, not a race, decides). Whether B's do-not-retry then reaches
    // the user before the user's own 200 ms run out is timing: on this shared machine (load 13-20) a
    // hop took 30-100 ms there and back, and calls at C per user request were 1.00-1.46
    // (bench/layers measures it: LayersBench, "slow-flat").
    Run propagated = slowWithEqualTimeouts(Duration.ofMillis(50), 50);
    System.out.println("three layers, C slow, equal 200 ms timeouts, deadlines propagated: " + propagated);
    assertTrue(propagated.cPerUser() >= 1.0, "every user request reached C: " + propagated.cPerUser());
    assertEquals(propagated.aPerUser(), propagated.bPerUser(), 0.0001, "A made one call to B per inbound request");
    assertEquals(propagated.bPerUser(), propagated.cPerUser(), 0.0001, "B made one call to C per inbound request");
  }

  @Test
  void withEqualTimeoutsAndDeadlinesIgnoredTheMiddleRetriesForCallersWhoStoppedWaiting() {
    // the control for the test above: the same services reading no inbound deadline; B retries C
    // while A and the user have given up (seen: 2.8-13.8 calls at C per user request, 2.1-6.1 at B)
    Run ignored = slowWithEqualTimeouts(null, 30);
    System.out.println("three layers, C slow, equal 200 ms timeouts, deadlines ignored: " + ignored);
    assertTrue(ignored.cPerUser() >= ignored.bPerUser() + 0.2, "B retried C: " + ignored);
  }

  @Test
  void aLayerPassesOnWhatIsLeftOfTheInboundDeadlineAndCallsNothingOnceItIsSpent() throws Exception {
    Service c = closing(LayerDemo.backend(vertx, 0.0, 0, 1));
    Service b = closing(LayerDemo.layer(vertx, c.uri(), Mode.SUPPRESSED, THREE, budget("c"), Duration.ofMillis(10)));
    java.util.function.Function<String, HttpResponse<String>> get = deadline -> {
      HttpRequest.Builder r = HttpRequest.newBuilder(b.uri().resolve("/work")).GET();
      if (deadline != null) {
        r.header("X-Request-Deadline-Ms", deadline);
      }
      try {
        return http.send(r.build(), HttpResponse.BodyHandlers.ofString());
      } catch (Exception e) {
        throw new AssertionError(e);
      }
    };
    assertEquals(200, get.apply("5000").statusCode());
    long passed = Long.parseLong(c.deadlineHeaders().get(0));
    assertTrue(passed > 0 && passed <= 4_990, "what is left less the 10 ms margin: " + passed);
    HttpResponse<String> spent = get.apply("0");
    assertEquals(504, spent.statusCode());
    assertEquals("-1", spent.headers().firstValue("X-Retry-Pushback-Ms").orElse(null));
    assertTrue(spent.body().contains("deadline-exceeded"), spent.body());
    assertEquals(1, c.calls(), "nothing is sent downstream for a caller who stopped waiting");
    // hostile values read as no deadline (B's policy has none: nothing passed on); a huge one is capped
    for (String garbage : List.of("-5", "abc", "1.5", "0x10", "")) {
      assertEquals(200, get.apply(garbage).statusCode(), garbage);
    }
    assertEquals(200, get.apply("99999999999999999999999999").statusCode());
    List<String> seen = c.deadlineHeaders();
    assertEquals(List.of("", "", "", "", ""), seen.subList(1, 6), "garbage is not passed on: " + seen);
    long capped = Long.parseLong(seen.get(6));
    assertTrue(capped > 3_000_000 && capped <= 3_600_000, "capped at an hour: " + capped);
    // several values (DeadlineHeaderLinesTest): the tightest binds, 10 ms less the 10 ms margin is spent
    assertEquals(504, get.apply("10, 5000").statusCode());
    HttpResponse<String> twoLines = http.send(HttpRequest.newBuilder(b.uri().resolve("/work"))
        .header("X-Request-Deadline-Ms", "5000").header("X-Request-Deadline-Ms", "0").GET().build(),
        HttpResponse.BodyHandlers.ofString());
    assertEquals(504, twoLines.statusCode(), "a second line that says the caller gave up is heard");
    assertEquals(7, c.calls(), "neither was sent downstream");
  }

  @Test
  void aSlowDownstreamIsNotRetriedPastTheInboundDeadline() throws Exception {
    // B would give C 3 attempts of 1 s; the caller waits 300 ms: one attempt, cut at 290 ms, no retry
    RetryPolicy patient = THREE.toBuilder().attemptTimeout(Duration.ofSeconds(1)).build();
    io.retrybudget.budget.RetryBudget roomy = budgets(1.0, 100, false).apply("c");
    Service c = closing(LayerDemo.backend(vertx, 0.0, 2_000, 1));
    Service b = closing(LayerDemo.layer(vertx, c.uri(), Mode.SUPPRESSED, patient, roomy, Duration.ofMillis(10)));
    long start = System.nanoTime();
    HttpResponse<String> r = http.send(HttpRequest.newBuilder(b.uri().resolve("/work"))
        .header("X-Request-Deadline-Ms", "300").GET().build(), HttpResponse.BodyHandlers.ofString());
    long tookMs = (System.nanoTime() - start) / 1_000_000;
    assertEquals(502, r.statusCode());
    assertEquals("-1", r.headers().firstValue("X-Retry-Pushback-Ms").orElse(null));
    assertEquals(1, c.calls(), "no attempt starts that the inbound deadline cannot hold");
    assertTrue(tookMs < 1_000, "answered when the caller's time ran out, not after B's 1 s attempt: " + tookMs + " ms");
  }

  @Test
  void anInboundRetryCallsDownstreamOnceAndItsRetryHeaderIsNotForwarded() throws Exception {
    Service c = closing(LayerDemo.backend(vertx, 1.0, 0, 1));
    // a budget with room (a floor of 100 retries): only the inbound-retry rule keeps B to one attempt
    io.retrybudget.budget.RetryBudget roomy = budgets.budget(BudgetConfig.builder("roomy-" + UUID.randomUUID().toString()
        .substring(0, 8)).minRetriesPerSecond(10).build());
    Service b = closing(LayerDemo.layer(vertx, c.uri(), Mode.SUPPRESSED, THREE, roomy));
    HttpResponse<String> first = http.send(HttpRequest.newBuilder(b.uri().resolve("/work")).GET().build(),
        HttpResponse.BodyHandlers.ofString());
    assertEquals(502, first.statusCode());
    assertEquals(3, c.calls(), "an inbound first attempt is retried by B within its budget");
    HttpResponse<String> r = http.send(HttpRequest.newBuilder(b.uri().resolve("/work"))
        .header("X-Retry-Attempt", "2").GET().build(), HttpResponse.BodyHandlers.ofString());
    assertEquals(4, c.calls(), "one attempt for a request that is itself a retry");
    assertEquals(Map.of("1", 2L, "2", 1L, "3", 1L), c.attemptHeaders(), "C sees B's own attempt numbers, not the inbound 2");
    assertEquals(502, r.statusCode());
    assertEquals("-1", r.headers().firstValue("X-Retry-Pushback-Ms").orElse(null));
    assertTrue(r.body().contains("downstream-failed"), r.body());
  }

  @Test
  void aDownstreamAnswerIsPassedOnAndHealthyCallsCostNothingExtra() throws Exception {
    Service c = closing(LayerDemo.backend(vertx, 0.0, 0, 1));
    Service b = closing(LayerDemo.layer(vertx, c.uri(), Mode.SUPPRESSED, THREE, budget("c")));
    for (int i = 0; i < 5; i++) {
      HttpResponse<String> r = http.send(HttpRequest.newBuilder(b.uri().resolve("/work")).GET().build(),
          HttpResponse.BodyHandlers.ofString());
      assertEquals(200, r.statusCode());
      assertEquals("ok", r.body());
    }
    assertEquals(5, c.calls());
  }
}
