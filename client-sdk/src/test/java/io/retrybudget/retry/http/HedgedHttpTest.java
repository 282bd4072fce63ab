package io.retrybudget.retry.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.retrybudget.retry.FakeTime;
import io.retrybudget.retry.HedgePolicy;
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
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Hedged requests over real HTTP to two local replicas, one of them stalled until the test ends. The
 * hedge delay runs on fake time: the test moves it on once it has seen where a call's first attempt
 * went, so which calls are hedged depends on the replica each call started on, not on how fast this
 * machine answers a request.
 */
class HedgedHttpTest {
  private static final Duration HEDGE_DELAY = Duration.ofMillis(50);
  /**
   * The longest wait for a loopback request to arrive or be answered. Nothing is measured against
   * it: that takes milliseconds, and at a load of 16 on 2 cores (an eighth of a core for this
   * process) still well under a second. The stalled replica answers only when the test ends, so a
   * call that waited for it would not answer within this at all.
   */
  private static final long WAIT_SECONDS = 30;
  private final CountDownLatch release = new CountDownLatch(1);
  private final AtomicInteger slowHits = new AtomicInteger();
  private final AtomicInteger fastHits = new AtomicInteger();
  private final List<String> fastAttemptHeaders = java.util.Collections.synchronizedList(new java.util.ArrayList<>());
  /** Where each request arrived, in order: "slow" or "fast", and its X-Retry-Attempt. */
  private final BlockingQueue<String> arrivals = new LinkedBlockingQueue<>();
  private HttpServer slow;
  private HttpServer fast;

  private HttpServer server(boolean stalled) throws IOException {
    HttpServer s = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    s.setExecutor(Executors.newCachedThreadPool()); // stalled requests must not starve the others
    s.createContext("/", ex -> {
      String attempt = ex.getRequestHeaders().getFirst("X-Retry-Attempt");
      if (stalled) {
        slowHits.incrementAndGet();
        arrivals.add("slow " + attempt);
        try {
          release.await(5, TimeUnit.MINUTES); // a replica in a pause that outlasts the test
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      } else {
        fastHits.incrementAndGet();
        fastAttemptHeaders.add(attempt);
        arrivals.add("fast " + attempt);
      }
      respond(ex, stalled ? "slow" : "fast");
    });
    s.start();
    return s;
  }

  private static void respond(HttpExchange ex, String body) throws IOException {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    ex.sendResponseHeaders(200, bytes.length);
    ex.getResponseBody().write(bytes);
    ex.close();
  }

  @AfterEach
  void stop() {
    release.countDown();
    if (slow != null) {
      slow.stop(0);
      fast.stop(0);
    }
  }

  private String nextArrival() throws InterruptedException {
    String a = arrivals.poll(WAIT_SECONDS, TimeUnit.SECONDS);
    assertTrue(a != null, "no request arrived within " + WAIT_SECONDS + " s");
    return a;
  }

  @Test
  void aStalledReplicaIsHedgedOnTheOther() throws Exception {
    slow = server(true);
    fast = server(false);
    List<URI> replicas = List.of(URI.create("http://127.0.0.1:" + slow.getAddress().getPort()),
        URI.create("http://127.0.0.1:" + fast.getAddress().getPort()));
    FakeTime time = new FakeTime();
    AtomicInteger hedges = new AtomicInteger();
    RetryingHttpClient client = RetryingHttpClient.builder(HttpClient.newHttpClient())
        .policy(RetryPolicy.builder().maxAttempts(3).build())
        .hedging(HedgePolicy.fixedDelay(HEDGE_DELAY).build())
        .replicas(replicas)
        .listener(new RetryListener() {
          @Override
          public void onHedge(int attempt) {
            hedges.incrementAndGet();
          }
        })
        .executor(e -> e.scheduler(time).nanoClock(time::nanos))
        .build();
    // calls start on a random replica: enough calls that each replica got the first attempt of a few
    int calls = 0;
    int startedStalled = 0;
    int startedHealthy = 0;
    while ((startedStalled < 3 || startedHealthy < 3) && calls < 200) {
      int hedgesBefore = hedges.get();
      CompletableFuture<HttpResponse<String>> call = client.sendAsync(
          HttpRequest.newBuilder(URI.create("http://placeholder/orders/" + calls)).build(),
          HttpResponse.BodyHandlers.ofString());
      calls++;
      String first = nextArrival();
      if (first.equals("slow 1")) {
        startedStalled++;
        time.advance(HEDGE_DELAY.toNanos() - 1);
        assertEquals(hedgesBefore, hedges.get(), "hedged before the hedge delay");
        time.advance(1);
        assertEquals(hedgesBefore + 1, hedges.get(), "hedged at the hedge delay");
        assertEquals("fast 2", nextArrival(), "the hedge goes to the other replica");
      } else {
        assertEquals("fast 1", first);
        startedHealthy++;
      }
      // the stalled replica answers only after the test: an answer now is the healthy one's
      HttpResponse<String> r = call.get(WAIT_SECONDS, TimeUnit.SECONDS);
      assertEquals("fast", r.body(), "call " + calls);
      if (first.equals("fast 1")) {
        assertEquals(hedgesBefore, hedges.get(), "no hedge while no time passed");
      }
    }
    assertTrue(startedStalled >= 3 && startedHealthy >= 3,
        "calls start on a random replica: " + startedStalled + " on the stalled one of " + calls);
    assertEquals(calls, fastHits.get(), "every call got its answer from the healthy replica, once");
    assertEquals(startedStalled, slowHits.get(), "only first attempts went to the stalled replica");
    // every call that started on the stalled replica was answered by its hedge (attempt 2) on the other
    assertEquals(startedStalled, fastAttemptHeaders.stream().filter("2"::equals).count(), fastAttemptHeaders.toString());
    assertTrue(fastAttemptHeaders.stream().allMatch(h -> h.equals("1") || h.equals("2")), fastAttemptHeaders.toString());
    client.close();
  }

  @Test
  void replicaUrisKeepThePathAndQuery() {
    assertEquals(URI.create("https://b:8443/v1/x?q=1"),
        RetryingHttpClient.onReplica(URI.create("http://a:80/v1/x?q=1"), URI.create("https://b:8443")));
  }
}
