package io.retrybudget.retry.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.LocalRetryBudget;
import io.retrybudget.retry.HedgePolicy;
import io.retrybudget.retry.RetryBudgetExhaustedException;
import io.retrybudget.retry.RetryListener;
import io.retrybudget.retry.RetryOutcome;
import io.retrybudget.retry.RetryPolicy;
import io.retrybudget.testing.Eventually;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
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
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Against real local HTTP servers: every response of a call but its answer has its body closed by the
 * time the caller can see the call ended — when {@code send()} returns or throws, and in any stage put
 * on {@code sendAsync}'s future — on every path (retries, a budget refusal, cancellation, an attempt
 * timeout, a hedge that lost). The last answer is held by the server until the test has put its stage
 * on the future, so the stage runs when the call ends, not at once; it records which bodies were open,
 * and the test reads that record from the stage itself (the thread waiting in {@code get()} may wake
 * before the stage has run). The bounded waits (30 s) only stop a hang: each waits for a local
 * server's answer or a stage that runs when it comes.
 */
class DiscardedBodiesTest {
  private final CountDownLatch release = new CountDownLatch(1);
  private final AtomicInteger hits = new AtomicInteger();
  private final List<Tracked> bodies = Collections.synchronizedList(new ArrayList<>());
  private final List<HttpServer> servers = new ArrayList<>();
  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

  /** A response body that says whether it was closed. */
  static final class Tracked extends FilterInputStream {
    final int status;
    volatile boolean closed;

    Tracked(InputStream in, int status) {
      super(in);
      this.status = status;
    }

    @Override
    public void close() throws IOException {
      closed = true;
      super.close();
    }

    @Override
    public String toString() {
      return status + (closed ? " closed" : " open");
    }
  }

  private final HttpResponse.BodyHandler<Tracked> tracked = info -> HttpResponse.BodySubscribers.mapping(
      HttpResponse.BodyHandlers.ofInputStream().apply(info), in -> {
        Tracked t = new Tracked(in, info.statusCode());
        bodies.add(t);
        return t;
      });

  /** Answers the Nth hit with the Nth comma-separated step of the path's last segment; "hold200" waits for the test. */
  private HttpServer server() throws IOException {
    HttpServer s = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    s.setExecutor(Executors.newCachedThreadPool()); // a held answer must not stall the others
    s.createContext("/script/", ex -> {
      int n = hits.getAndIncrement();
      String[] plan = ex.getRequestURI().getPath().substring("/script/".length()).split(",");
      String step = plan[Math.min(n, plan.length - 1)];
      ex.getRequestBody().readAllBytes();
      if (step.startsWith("hold")) {
        try {
          release.await(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        step = step.substring("hold".length());
      }
      respond(ex, Integer.parseInt(step));
    });
    s.start();
    servers.add(s);
    return s;
  }

  private static void respond(HttpExchange ex, int status) throws IOException {
    // 66 KB: more than one buffer of the JDK's, so an unread body holds its connection until it is closed
    byte[] bytes = ("status " + status + " ").repeat(6_000).getBytes(StandardCharsets.UTF_8);
    ex.sendResponseHeaders(status, bytes.length);
    try (var out = ex.getResponseBody()) {
      out.write(bytes);
    } catch (IOException closedByTheClient) {
      // a discarded body the client closed before reading it
    }
    ex.close();
  }

  @BeforeEach
  void start() throws IOException {
    server();
  }

  @AfterEach
  void stop() {
    release.countDown();
    servers.forEach(s -> s.stop(0));
  }

  private URI uri(HttpServer s, String script) {
    return URI.create("http://127.0.0.1:" + s.getAddress().getPort() + "/script/" + script);
  }

  private HttpRequest get(String script) {
    return HttpRequest.newBuilder(uri(servers.get(0), script)).GET().build();
  }

  private List<String> states() {
    synchronized (bodies) {
      return bodies.stream().map(Tracked::toString).toList();
    }
  }

  private static RetryPolicy fast(int attempts) {
    return RetryPolicy.builder().maxAttempts(attempts).backoff(Duration.ofMillis(1), Duration.ofMillis(5)).build();
  }

  /** Puts a stage on the call's future that records its bodies as they are when it runs, then lets the last answer go. */
  private CompletableFuture<String> seenWhenEnded(CompletableFuture<HttpResponse<Tracked>> call) {
    CompletableFuture<String> seen = new CompletableFuture<>();
    call.whenComplete((answer, failure) -> seen.complete(bodies.toString()));
    release.countDown();
    return seen;
  }

  @Test
  void aStageOnTheFutureSeesTheRetriedBodiesClosedAndTheAnswerOpen() throws Exception {
    RetryingHttpClient client = RetryingHttpClient.builder(http).policy(fast(3)).build();
    CompletableFuture<HttpResponse<Tracked>> call = client.sendAsync(get("503,500,hold200"), tracked);
    CompletableFuture<String> seen = seenWhenEnded(call);
    HttpResponse<Tracked> answer = call.get(30, TimeUnit.SECONDS);
    assertEquals(200, answer.statusCode());
    assertEquals("[503 closed, 500 closed, 200 open]", seen.get(30, TimeUnit.SECONDS));
    assertTrue(new String(answer.body().readAllBytes(), StandardCharsets.UTF_8).startsWith("status 200"));
  }

  @Test
  void whenSendReturnsTheRetriedBodiesAreClosed() throws Exception {
    release.countDown();
    HttpResponse<Tracked> answer = RetryingHttpClient.builder(http).policy(fast(3)).build().send(get("503,500,200"), tracked);
    assertEquals("[503 closed, 500 closed, 200 open]", bodies.toString(), "as send() returned");
    answer.body().close();
  }

  @Test
  void theResponseABudgetRefusalCarriesIsClosedBeforeTheCallEnds() throws Exception {
    LocalRetryBudget spent = new LocalRetryBudget(BudgetConfig.builder("backend").minRetriesPerSecond(0).build());
    RetryingHttpClient client = RetryingHttpClient.builder(http).policy(fast(3)).budget(spent).build();
    CompletableFuture<HttpResponse<Tracked>> call = client.sendAsync(get("hold503,200"), tracked);
    CompletableFuture<String> seen = seenWhenEnded(call);
    ExecutionException e = assertThrows(ExecutionException.class, () -> call.get(30, TimeUnit.SECONDS));
    RetryBudgetExhaustedException refused = (RetryBudgetExhaustedException) e.getCause();
    assertEquals(503, ((HttpResponse<?>) refused.lastResult()).statusCode(), "status and headers stay readable");
    assertEquals("[503 closed]", seen.get(30, TimeUnit.SECONDS));
  }

  @Test
  void cancellingTheCallClosesTheRetriedBodiesFirst() throws Exception {
    RetryingHttpClient client = RetryingHttpClient.builder(http).policy(fast(3)).build();
    CompletableFuture<HttpResponse<Tracked>> call = client.sendAsync(get("503,hold200"), tracked);
    CompletableFuture<String> seen = new CompletableFuture<>();
    call.whenComplete((answer, failure) -> seen.complete(bodies.toString()));
    Eventually.await("the retry reached the server", Duration.ofSeconds(30), () -> hits.get() == 2);
    assertTrue(call.cancel(true));
    assertEquals("[503 closed]", seen.get(30, TimeUnit.SECONDS), "as the call's future was cancelled");
    assertThrows(CancellationException.class, call::join);
  }

  @Test
  void completingTheFutureStopsTheCallAsTheExecutorsOwnWouldAndClosesTheRetriedBodies() throws Exception {
    CompletableFuture<RetryOutcome> outcome = new CompletableFuture<>();
    RetryingHttpClient client = RetryingHttpClient.builder(http).policy(fast(3)).listener(new RetryListener() {
      @Override
      public void onOutcome(RetryOutcome o, int attempts) {
        outcome.complete(o);
      }
    }).build();
    CompletableFuture<HttpResponse<Tracked>> call = client.sendAsync(get("503,hold200"), tracked);
    Eventually.await("the retry reached the server", Duration.ofSeconds(30), () -> hits.get() == 2);
    assertTrue(call.completeExceptionally(new IllegalStateException("the caller gave up")));
    assertEquals("[503 closed]", bodies.toString(), "as the caller completed the future");
    assertEquals(RetryOutcome.CANCELLED, outcome.get(30, TimeUnit.SECONDS), "the executor's call stopped");
    assertTrue(!call.complete(null) && call.isCompletedExceptionally(), "the caller's completion stands");
  }

  @Test
  void anAttemptCutByItsTimeoutEndsTheCallWithTheRetriedBodiesClosed() throws Exception {
    // 2 s for a local 503 is far more than it takes at a load of 16; the held answer never comes in time
    RetryPolicy timed = fast(2).toBuilder().attemptTimeout(Duration.ofSeconds(2)).build();
    RetryingHttpClient client = RetryingHttpClient.builder(http).policy(timed).build();
    CompletableFuture<HttpResponse<Tracked>> call = client.sendAsync(get("503,hold200"), tracked);
    CompletableFuture<String> seen = new CompletableFuture<>();
    call.whenComplete((answer, failure) -> seen.complete(bodies.toString()));
    ExecutionException e = assertThrows(ExecutionException.class, () -> call.get(30, TimeUnit.SECONDS));
    assertTrue(e.getCause() instanceof io.retrybudget.retry.AttemptTimeoutException, e.toString());
    assertEquals("[503 closed]", seen.get(30, TimeUnit.SECONDS));
  }

  @Test
  void aHedgeThatLostHasItsBodyClosedBeforeTheCallEnds() throws Exception {
    HttpServer failing = servers.get(0);
    HttpServer held = server();
    // whichever replica the call starts on, the 500 comes first (retried, or the hedge that failed)
    // and the held replica's 200 answers the call
    AtomicInteger judged500 = new AtomicInteger();
    RetryingHttpClient client = RetryingHttpClient.builder(http).policy(fast(3))
        .listener(new RetryListener() {
          @Override
          public void onAttemptEnded(int attempt, Object result, Throwable failure) {
            if (result instanceof HttpResponse<?> r && r.statusCode() == 500) {
              judged500.incrementAndGet();
            }
          }
        })
        .hedging(HedgePolicy.fixedDelay(Duration.ofMillis(20)).build())
        .replicas(List.of(URI.create("http://127.0.0.1:" + failing.getAddress().getPort()),
            URI.create("http://127.0.0.1:" + held.getAddress().getPort())))
        .build();
    String script = "hold200"; // the held replica's; the failing one answers 500 to any path, uncounted
    failing.removeContext("/script/");
    failing.createContext("/script/", ex -> {
      ex.getRequestBody().readAllBytes();
      respond(ex, 500);
    });
    CompletableFuture<HttpResponse<Tracked>> call = client.sendAsync(get(script), tracked);
    CompletableFuture<List<String>> seen = new CompletableFuture<>();
    call.whenComplete((answer, failure) -> seen.complete(states()));
    // the 500 delivered to the call (not only its headers read: its body exists a little before that)
    Eventually.await("a 500 judged and the held replica asked", Duration.ofSeconds(30),
        () -> judged500.get() > 0 && hits.get() == 1);
    release.countDown();
    assertEquals(200, call.get(30, TimeUnit.SECONDS).statusCode());
    List<String> ended = seen.get(30, TimeUnit.SECONDS);
    assertEquals(1, ended.stream().filter("200 open"::equals).count(), ended.toString());
    assertTrue(ended.size() >= 2 && ended.stream().allMatch(b -> b.equals("200 open") || b.equals("500 closed")),
        ended.toString());
  }
}
