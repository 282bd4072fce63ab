package io.retrybudget.reactor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.retry.RetryBudgetExhaustedException;
import io.retrybudget.retry.RetryPolicy;
import io.retrybudget.testing.CountingBudget;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.web.reactive.function.client.ClientResponse;
import org.springframework.web.reactive.function.client.WebClient;
import org.springframework.web.reactive.function.client.WebClientRequestException;
import reactor.core.publisher.Mono;
import reactor.netty.http.server.HttpServerResponse;

/**
 * The WebClient filter against a real Reactor Netty server and a real Redis budget: HTTP's shared
 * retry rules (statuses, pushback, Retry-After, the attempt, deadline and Idempotency-Key headers),
 * the last response when retries run out, a refusal, a refused connection.
 */
class BudgetRetryFilterTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();
  static final Duration WAIT = Duration.ofSeconds(30); // a loaded machine; nothing here waits on it
  static RedisBudgetClient budgets;
  final TestServer server = new TestServer();
  final RecordingListener events = new RecordingListener();
  CountingBudget budget;

  @BeforeAll
  static void connect() {
    // the subject is the filter, not Redis's speed: the longest timeouts the client takes (a timed-out
    // permit call is a refusal), and connected before the first test (build() gives up waiting after
    // 2 s, which a loaded machine misses; until the client connects, the fallback answers). At a load
    // of 16 it connects within seconds and a permit call to a local Redis answers well inside 5 s
    budgets = RedisBudgetClient.builder(redis.connectionOptions().commandTimeout(Duration.ofSeconds(5)).build())
        .callTimeout(Duration.ofSeconds(5)).build();
    Eventually.await("connected", Duration.ofSeconds(30), () -> !budgets.isDegraded());
  }

  @AfterAll
  static void disconnect() {
    budgets.close();
  }

  @AfterEach
  void stop() {
    server.close();
  }

  WebClient web(RetryPolicy policy, boolean makeKeys) {
    budget = new CountingBudget(budgets.budget(BudgetConfig.builder("webclient-" + System.nanoTime()).build()));
    return WebClient.builder().filter(BudgetRetryFilter.builder().policy(policy).budget(budget).listener(events)
        .idempotencyKeys(makeKeys).build()).build();
  }

  static RetryPolicy quick(int attempts) {
    return RetryPolicy.builder().maxAttempts(attempts).backoff(Duration.ofMillis(1), Duration.ofMillis(5)).build();
  }

  /** 503 for the first {@code failures} requests, then 200 "ok". */
  void failFirst(int failures, java.util.function.Consumer<HttpServerResponse> onFailure) {
    AtomicInteger n = new AtomicInteger();
    server.answer((req, res) -> {
      if (n.incrementAndGet() <= failures) {
        onFailure.accept(res.status(503));
        return res.sendString(Mono.just("down"));
      }
      return res.sendString(Mono.just("ok"));
    });
  }

  @Test
  void aGetIsRetriedOn503WithTheAttemptHeaderAndNoKey() {
    failFirst(2, res -> { });
    String body = web(quick(3), true).get().uri(server.url("/items/42")).retrieve().bodyToMono(String.class).block(WAIT);
    assertEquals("ok", body);
    assertEquals(List.of("1", "2", "3"), server.seen.stream().map(s -> s.header("X-Retry-Attempt")).toList());
    assertTrue(server.seen.stream().allMatch(s -> s.header("Idempotency-Key") == null), "GET carries no key");
    assertTrue(server.seen.stream().allMatch(s -> s.header("X-Request-Deadline-Ms") == null), "no deadline, no header");
    assertEquals(1, budget.firstAttempts.get());
    assertEquals(2, budget.acquires.get());
    assertEquals(List.of("outcome SUCCESS 3"), events.outcomes());
  }

  @Test
  void aPostCarriesOneKeyOnEveryAttemptAndItsBodyEachTime() {
    failFirst(1, res -> { });
    String body = web(quick(3), true).post().uri(server.url("/charges")).bodyValue("charge 10")
        .retrieve().bodyToMono(String.class).block(WAIT);
    assertEquals("ok", body);
    assertEquals(2, server.seen.size());
    String key = server.seen.get(0).header("Idempotency-Key");
    assertNotNull(key, "a key made for the call");
    assertEquals(key, server.seen.get(1).header("Idempotency-Key"));
    assertEquals(List.of("charge 10", "charge 10"), server.seen.stream().map(TestServer.Seen::body).toList());
  }

  @Test
  void aPostKeepsItsOwnKeyAndWithoutOneIsNotRetriedWhenKeysAreNotMade() {
    failFirst(1, res -> { });
    WebClient web = web(quick(3), false);
    assertEquals("ok", web.post().uri(server.url("/charges")).header("Idempotency-Key", "mine").bodyValue("x")
        .retrieve().bodyToMono(String.class).block(WAIT));
    assertEquals(List.of("mine", "mine"), server.seen.stream().map(s -> s.header("Idempotency-Key")).toList());

    server.seen.clear();
    failFirst(1, res -> { });
    int status = web.post().uri(server.url("/charges")).bodyValue("x")
        .exchangeToMono(r -> r.releaseBody().thenReturn(r.statusCode().value())).block(WAIT);
    assertEquals(503, status, "no key: not retried");
    assertEquals(1, server.seen.size());
    assertNull(server.seen.get(0).header("Idempotency-Key"));
    assertTrue(events.outcomes().contains("outcome NOT_IDEMPOTENT 1"), events.outcomes().toString());
  }

  @Test
  void otherClientErrorsAndADoNotRetryPushbackAreAnsweredAtOnce() {
    server.answer((req, res) -> res.status(404).send());
    WebClient web = web(quick(3), true);
    assertEquals(404, status(web));
    server.answer((req, res) -> res.status(503).header("X-Retry-Pushback-Ms", "-1").send());
    assertEquals(503, status(web));
    assertEquals(2, server.seen.size(), "one request each");
    assertEquals(0, budget.acquires.get());
    assertEquals(List.of("outcome SUCCESS 1", "outcome SERVER_SAYS_NO 1"), events.outcomes());
  }

  @Test
  void waitsAtLeastThePushbackTheServerAsked() {
    failFirst(1, res -> res.header("X-Retry-Pushback-Ms", "200"));
    RetryPolicy capOneSecond = RetryPolicy.builder().maxAttempts(3).backoff(Duration.ofMillis(1), Duration.ofSeconds(1)).build();
    assertEquals(200, status(web(capOneSecond, true)));
    long waitedMillis = (server.seen.get(1).atNanos() - server.seen.get(0).atNanos()) / 1_000_000;
    assertTrue(waitedMillis >= 200, "a lower bound, so it holds at any load: " + waitedMillis + " ms");
  }

  @Test
  void retryAfterBeyondTheCapEndsTheCallWithTheServersAnswer() {
    failFirst(1, res -> res.header("Retry-After", "120"));
    assertEquals(503, status(web(quick(3), true)));
    assertEquals(1, server.seen.size());
    assertEquals(List.of("outcome SERVER_DELAY_TOO_LONG 1"), events.outcomes());
  }

  @Test
  void boundedAttemptsTellTheServerHowLongTheyAreWaitedFor() {
    server.answer((req, res) -> res.sendString(Mono.just("ok")));
    RetryPolicy policy = quick(3).toBuilder().deadline(Duration.ofSeconds(5)).build();
    assertEquals(200, status(web(policy, true)));
    long ms = Long.parseLong(server.seen.get(0).header("X-Request-Deadline-Ms"));
    assertTrue(ms > 0 && ms <= 5000, "within the 5 s deadline: " + ms);
  }

  @Test
  void whenRetriesRunOutTheLastResponseIsTheAnswer() {
    server.answer((req, res) -> res.status(503).sendString(Mono.just("down " + req.requestHeaders().get("X-Retry-Attempt"))));
    String body = web(quick(3), true).get().uri(server.url("/x"))
        .exchangeToMono(r -> r.bodyToMono(String.class).map(b -> r.statusCode().value() + " " + b)).block(WAIT);
    assertEquals("503 down 3", body);
    assertEquals(List.of("outcome MAX_ATTEMPTS 3"), events.outcomes());
  }

  @Test
  void aRefusalEndsTheExchangeWithTheLastResponseInTheException() {
    server.answer((req, res) -> res.status(503).send());
    ScriptedBudget refusing = new ScriptedBudget().then(BudgetDecision.DENIED_EXHAUSTED);
    WebClient web = WebClient.builder().filter(BudgetRetryFilter.builder().policy(quick(3)).budget(refusing).build()).build();
    Exception e = assertThrows(Exception.class, () -> web.get().uri(server.url("/x")).retrieve().toBodilessEntity().block(WAIT));
    RetryBudgetExhaustedException denied = assertInstanceOf(RetryBudgetExhaustedException.class, e);
    assertEquals(503, ((ClientResponse) denied.lastResult()).statusCode().value());
    assertEquals(1, server.seen.size());
  }

  @Test
  void aRefusedConnectionIsRetriedThroughWebClientsWrapping() throws Exception {
    int closedPort;
    try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      closedPort = s.getLocalPort();
    }
    WebClient web = web(quick(3), true);
    Exception e = assertThrows(Exception.class,
        () -> web.get().uri("http://127.0.0.1:" + closedPort + "/x").retrieve().toBodilessEntity().block(WAIT));
    assertInstanceOf(WebClientRequestException.class, e);
    assertEquals(List.of("outcome MAX_ATTEMPTS 3"), events.outcomes(), "the ConnectException inside is retried");
    assertEquals(2, budget.acquires.get());
  }

  private int status(WebClient web) {
    return web.get().uri(server.url("/x")).exchangeToMono(r -> r.releaseBody().thenReturn(r.statusCode().value()))
        .block(WAIT);
  }
}
