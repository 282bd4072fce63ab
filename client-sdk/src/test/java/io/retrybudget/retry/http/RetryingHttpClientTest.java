package io.retrybudget.retry.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.LocalRetryBudget;
import io.retrybudget.retry.RetryBudgetExhaustedException;
import io.retrybudget.retry.RetryListener;
import io.retrybudget.retry.RetryPolicy;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Against a real local HTTP server that answers as a struggling backend would. */
class RetryingHttpClientTest {
  private HttpServer server;
  private final AtomicInteger hits = new AtomicInteger();
  private final List<String> attemptHeaders = Collections.synchronizedList(new ArrayList<>());
  private final List<String> keyHeaders = Collections.synchronizedList(new ArrayList<>());
  private final List<String> deadlineHeaders = Collections.synchronizedList(new ArrayList<>());
  private final CountDownLatch release = new CountDownLatch(1);
  private final ConcurrentLinkedQueue<Long> delays = new ConcurrentLinkedQueue<>();
  private HttpClient http;

  @BeforeEach
  void start() throws IOException {
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.setExecutor(Executors.newFixedThreadPool(4));
    // answers the Nth hit with the Nth comma-separated status of the path's last segment
    server.createContext("/script/", ex -> {
      int n = hits.getAndIncrement();
      attemptHeaders.add(ex.getRequestHeaders().getFirst("X-Retry-Attempt"));
      keyHeaders.add(ex.getRequestHeaders().getFirst("Idempotency-Key"));
      deadlineHeaders.add(String.valueOf(ex.getRequestHeaders().get("X-Request-Deadline-Ms")));
      String[] plan = ex.getRequestURI().getPath().substring("/script/".length()).split(",");
      String step = plan[Math.min(n, plan.length - 1)];
      answer(ex, step);
    });
    server.start();
    http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
  }

  private void answer(HttpExchange ex, String step) throws IOException {
    ex.getRequestBody().readAllBytes();
    switch (step) {
      case "drop" -> ex.close(); // connection closed without a response
      case "slow" -> {
        try {
          release.await(5, TimeUnit.SECONDS); // hangs until the test ends
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        respond(ex, 200, "late");
      }
      case "503ra1" -> {
        ex.getResponseHeaders().add("Retry-After", "1");
        respond(ex, 503, "busy");
      }
      case "429date" -> {
        ex.getResponseHeaders().add("Retry-After", "Thu, 01 Jan 2099 00:00:00 GMT");
        respond(ex, 429, "slow down");
      }
      case "push50" -> {
        ex.getResponseHeaders().add("X-Retry-Pushback-Ms", "50");
        respond(ex, 503, "pushback");
      }
      case "ra-huge" -> {
        ex.getResponseHeaders().add("Retry-After", "99999999999999999999");
        respond(ex, 503, "busy for ever");
      }
      case "push-huge" -> {
        ex.getResponseHeaders().add("X-Retry-Pushback-Ms", "99999999999999999999");
        respond(ex, 503, "pushback for ever");
      }
      case "pushno-huge" -> {
        ex.getResponseHeaders().add("X-Retry-Pushback-Ms", "-99999999999999999999");
        respond(ex, 503, "do not retry, loudly");
      }
      case "pushno" -> {
        ex.getResponseHeaders().add("X-Retry-Pushback-Ms", "-1");
        respond(ex, 503, "do not retry");
      }
      default -> respond(ex, Integer.parseInt(step), "status " + step);
    }
  }

  private static void respond(HttpExchange ex, int status, String body) throws IOException {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    ex.sendResponseHeaders(status, bytes.length);
    ex.getResponseBody().write(bytes);
    ex.close();
  }

  @AfterEach
  void stop() {
    release.countDown();
    server.stop(0);
  }

  private URI uri(String script) {
    return URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/script/" + script);
  }

  private RetryingHttpClient.Builder client(RetryPolicy policy) {
    return RetryingHttpClient.builder(http).policy(policy).listener(new RetryListener() {
      @Override
      public void onRetryScheduled(int nextAttempt, long delayNanos, Throwable failure) {
        delays.add(delayNanos);
      }
    });
  }

  private static RetryPolicy fast(int attempts) {
    return RetryPolicy.builder().maxAttempts(attempts).backoff(Duration.ofMillis(1), Duration.ofSeconds(2)).build();
  }

  private HttpResponse<String> get(RetryingHttpClient c, String script) throws Exception {
    return c.send(HttpRequest.newBuilder(uri(script)).GET().build(), HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void retries5xxAndCountsAttemptsInAHeader() throws Exception {
    HttpResponse<String> r = get(client(fast(3)).build(), "500,502,200");
    assertEquals(200, r.statusCode());
    assertEquals(List.of("1", "2", "3"), attemptHeaders);
  }

  @Test
  void everyAttemptCarriesTheTimeItIsWaitedForAndOnlyOneDeadlineHeader() throws Exception {
    RetryPolicy timed = fast(3).toBuilder().attemptTimeout(Duration.ofSeconds(4)).deadline(Duration.ofSeconds(8)).build();
    HttpRequest own = HttpRequest.newBuilder(uri("500,502,200")).header("X-Request-Deadline-Ms", "999999").GET().build();
    HttpResponse<String> r = client(timed).build().send(own, HttpResponse.BodyHandlers.ofString());
    assertEquals(200, r.statusCode());
    assertEquals(3, deadlineHeaders.size());
    for (String h : deadlineHeaders) {
      assertTrue(h.matches("\\[\\d+\\]"), "one value per attempt, the caller's replaced: " + deadlineHeaders);
      long ms = Long.parseLong(h.substring(1, h.length() - 1));
      assertTrue(ms > 0 && ms <= 4_000, "the attempt timeout cut to the deadline: " + deadlineHeaders);
    }
  }

  @Test
  void anUnboundedCallSendsNoDeadlineAndAPerCallDeadlineIsSent() throws Exception {
    assertEquals(200, get(client(fast(3)).build(), "200").statusCode());
    assertEquals(List.of("null"), deadlineHeaders);
    deadlineHeaders.clear();
    hits.set(0);
    RetryingHttpClient c = client(fast(3).toBuilder().deadline(Duration.ofSeconds(30)).build()).build();
    HttpResponse<String> r = c.sendAsync(HttpRequest.newBuilder(uri("503,200")).GET().build(),
        HttpResponse.BodyHandlers.ofString(), Duration.ofMillis(5_000)).get(10, TimeUnit.SECONDS);
    assertEquals(200, r.statusCode());
    assertEquals(2, deadlineHeaders.size());
    for (String h : deadlineHeaders) {
      long ms = Long.parseLong(h.substring(1, h.length() - 1));
      assertTrue(ms > 0 && ms <= 5_000, "the call's 5 s, not the policy's 30 s: " + deadlineHeaders);
    }
    hits.set(0);
    java.util.concurrent.ExecutionException spent = assertThrows(java.util.concurrent.ExecutionException.class,
        () -> c.sendAsync(HttpRequest.newBuilder(uri("200")).GET().build(), HttpResponse.BodyHandlers.ofString(),
            Duration.ZERO).get(10, TimeUnit.SECONDS));
    assertTrue(spent.getCause() instanceof io.retrybudget.retry.AttemptTimeoutException, spent.toString());
    assertEquals(0, hits.get(), "nothing is sent once the deadline is spent");
  }

  @Test
  void closesTheBodiesOfRetriedResponsesAndKeepsTheAnswersOpen() throws Exception {
    List<java.io.InputStream> bodies = Collections.synchronizedList(new ArrayList<>());
    HttpResponse.BodyHandler<java.io.InputStream> streams = info -> HttpResponse.BodySubscribers.mapping(
        HttpResponse.BodyHandlers.ofInputStream().apply(info), in -> {
          bodies.add(in);
          return in;
        });
    HttpResponse<java.io.InputStream> r = client(fast(3)).build()
        .send(HttpRequest.newBuilder(uri("503,500,200")).GET().build(), streams);
    assertEquals(200, r.statusCode());
    assertEquals(3, bodies.size());
    assertEquals("status 200", new String(r.body().readAllBytes(), StandardCharsets.UTF_8));
    // closed before send() returned (DiscardedBodiesTest covers every other way a call ends)
    for (int i = 0; i < 2; i++) {
      assertTrue(closed(bodies.get(i)), "body of retried response " + i + " closed");
    }
    assertEquals("", new String(r.body().readAllBytes(), StandardCharsets.UTF_8), "the answer's body, read, stays open");
  }

  /** True once {@code in} is closed: reading an open body returns its bytes or -1, a closed one throws. */
  private static boolean closed(java.io.InputStream in) {
    try {
      in.read();
      return false;
    } catch (IOException e) {
      return true;
    }
  }

  @Test
  void neverRetriesOther4xx() throws Exception {
    HttpResponse<String> r = get(client(fast(3)).build(), "400,200");
    assertEquals(400, r.statusCode());
    assertEquals(1, hits.get());
  }

  @Test
  void whenRetriesRunOutTheServersLastAnswerIsReturned() throws Exception {
    HttpResponse<String> r = get(client(fast(3)).build(), "503");
    assertEquals(503, r.statusCode());
    assertEquals("status 503", r.body());
    assertEquals(3, hits.get());
  }

  @Test
  void obeysRetryAfterSeconds() throws Exception {
    long start = System.nanoTime();
    HttpResponse<String> r = get(client(fast(2)).build(), "503ra1,200");
    assertEquals(200, r.statusCode());
    assertTrue(delays.peek() >= Duration.ofSeconds(1).toNanos(), "planned delay " + delays.peek());
    assertTrue(System.nanoTime() - start >= Duration.ofSeconds(1).toNanos());
  }

  @Test
  void aRetryAfterDateBeyondTheCapEndsTheCallWithTheServersAnswer() throws Exception {
    HttpResponse<String> r = get(client(fast(3)).build(), "429date,200");
    assertEquals(429, r.statusCode());
    assertEquals(1, hits.get());
  }

  @Test
  void obeysPushbackAndItsDoNotRetry() throws Exception {
    HttpResponse<String> r = get(client(fast(3)).build(), "push50,200");
    assertEquals(200, r.statusCode());
    assertTrue(delays.peek() >= Duration.ofMillis(50).toNanos());
    hits.set(0);
    HttpResponse<String> no = get(client(fast(3)).build(), "pushno,200");
    assertEquals(503, no.statusCode());
    assertEquals(1, hits.get());
  }

  @Test
  void aServerDelayTooLargeForALongStillEndsTheCall() throws Exception {
    // read as absent before: each was retried as if the server had asked for nothing
    for (String step : new String[] {"ra-huge", "push-huge", "pushno-huge"}) {
      hits.set(0);
      HttpResponse<String> r = get(client(fast(3)).build(), step + ",200");
      assertEquals(503, r.statusCode(), step);
      assertEquals(1, hits.get(), step + ": one attempt");
    }
  }

  @Test
  void retriesADroppedConnection() throws Exception {
    HttpResponse<String> r = get(client(fast(3)).build(), "drop,200");
    assertEquals(200, r.statusCode());
    assertEquals(2, hits.get());
  }

  @Test
  void aSlowAttemptIsCutByTheAttemptTimeoutAndRetried() throws Exception {
    RetryPolicy p = fast(2).toBuilder().attemptTimeout(Duration.ofMillis(300)).build();
    long start = System.nanoTime();
    HttpResponse<String> r = get(client(p).build(), "slow,200");
    assertEquals(200, r.statusCode());
    assertTrue(System.nanoTime() - start < Duration.ofSeconds(3).toNanos());
  }

  @Test
  void theDeadlineBoundsTheWholeCall() {
    RetryPolicy p = fast(5).toBuilder().deadline(Duration.ofMillis(400)).build();
    long start = System.nanoTime();
    assertThrows(IOException.class, () -> get(client(p).build(), "slow"));
    long took = System.nanoTime() - start;
    assertTrue(took < Duration.ofSeconds(2).toNanos(), "took " + took / 1_000_000 + " ms");
  }

  @Test
  void postIsRetriedWithOneIdempotencyKey() throws Exception {
    HttpRequest post = HttpRequest.newBuilder(uri("503,503,201")).POST(HttpRequest.BodyPublishers.ofString("{}")).build();
    HttpResponse<String> r = client(fast(3)).build().send(post, HttpResponse.BodyHandlers.ofString());
    assertEquals(201, r.statusCode());
    assertEquals(3, keyHeaders.size());
    assertTrue(keyHeaders.get(0) != null && keyHeaders.stream().allMatch(keyHeaders.get(0)::equals), keyHeaders.toString());
  }

  @Test
  void postKeepsTheCallersOwnKey() throws Exception {
    HttpRequest post = HttpRequest.newBuilder(uri("503,201")).header("Idempotency-Key", "order-7")
        .POST(HttpRequest.BodyPublishers.ofString("{}")).build();
    HttpResponse<String> r = client(fast(3)).idempotencyKeys(false).build().send(post, HttpResponse.BodyHandlers.ofString());
    assertEquals(201, r.statusCode());
    assertEquals(List.of("order-7", "order-7"), keyHeaders);
  }

  @Test
  void postWithoutAKeyIsNotRetriedWhenKeysAreOff() throws Exception {
    HttpRequest post = HttpRequest.newBuilder(uri("503,201")).POST(HttpRequest.BodyPublishers.ofString("{}")).build();
    HttpResponse<String> r = client(fast(3)).idempotencyKeys(false).build().send(post, HttpResponse.BodyHandlers.ofString());
    assertEquals(503, r.statusCode());
    assertEquals(1, hits.get());
    assertEquals(Collections.singletonList((String) null), keyHeaders);
  }

  @Test
  void getCarriesNoIdempotencyKey() throws Exception {
    get(client(fast(2)).build(), "500,200");
    assertEquals(java.util.Arrays.asList(null, null), keyHeaders);
  }

  @Test
  void aSpentBudgetEndsTheCallWithTheLastResponse() {
    LocalRetryBudget spent = new LocalRetryBudget(BudgetConfig.builder("backend").minRetriesPerSecond(0).build());
    RetryBudgetExhaustedException e = assertThrows(RetryBudgetExhaustedException.class,
        () -> get(client(fast(3)).budget(spent).build(), "503,200"));
    assertEquals(503, ((HttpResponse<?>) e.lastResult()).statusCode());
    assertEquals(1, hits.get());
  }
}
