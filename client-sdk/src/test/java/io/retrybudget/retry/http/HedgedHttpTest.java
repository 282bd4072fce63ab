package io.retrybudget.retry.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.retrybudget.retry.HedgePolicy;
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
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Hedged requests over real HTTP to two local replicas, one of them stalled. */
class HedgedHttpTest {
  private final CountDownLatch release = new CountDownLatch(1);
  private final AtomicInteger slowHits = new AtomicInteger();
  private final AtomicInteger fastHits = new AtomicInteger();
  private final List<String> fastAttemptHeaders = java.util.Collections.synchronizedList(new java.util.ArrayList<>());
  private HttpServer slow;
  private HttpServer fast;

  private HttpServer server(boolean stalled) throws IOException {
    HttpServer s = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    s.setExecutor(Executors.newCachedThreadPool()); // stalled requests must not starve the others
    s.createContext("/", ex -> {
      if (stalled) {
        slowHits.incrementAndGet();
        try {
          release.await(10, TimeUnit.SECONDS); // a replica in a long pause
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      } else {
        fastHits.incrementAndGet();
        fastAttemptHeaders.add(ex.getRequestHeaders().getFirst("X-Retry-Attempt"));
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

  @Test
  void aStalledReplicaIsHedgedOnTheOther() throws Exception {
    slow = server(true);
    fast = server(false);
    List<URI> replicas = List.of(URI.create("http://127.0.0.1:" + slow.getAddress().getPort()),
        URI.create("http://127.0.0.1:" + fast.getAddress().getPort()));
    RetryingHttpClient client = RetryingHttpClient.builder(HttpClient.newHttpClient())
        .policy(RetryPolicy.builder().maxAttempts(3).build())
        .hedging(HedgePolicy.fixedDelay(Duration.ofMillis(50)).build())
        .replicas(replicas)
        .build();
    int calls = 20;
    for (int i = 0; i < calls; i++) {
      long start = System.nanoTime();
      HttpResponse<String> r = client.send(HttpRequest.newBuilder(URI.create("http://placeholder/orders/" + i)).build(),
          HttpResponse.BodyHandlers.ofString());
      long ms = (System.nanoTime() - start) / 1_000_000;
      assertEquals("fast", r.body());
      assertTrue(ms < 2_000, "call " + i + " took " + ms + " ms");
    }
    assertEquals(calls, fastHits.get(), "every call got its answer from the healthy replica");
    assertTrue(slowHits.get() > 0 && slowHits.get() < calls, "calls start on a random replica: " + slowHits.get());
    // calls that started on the stalled replica were answered by a hedge (attempt 2) on the other;
    // a slow first request on the healthy one may also have been hedged, onto the stalled one
    long hedgeAnswers = fastAttemptHeaders.stream().filter("2"::equals).count();
    assertTrue(hedgeAnswers > 0 && hedgeAnswers <= slowHits.get(), hedgeAnswers + " hedge answers, " + slowHits + " stalled");
    assertTrue(fastAttemptHeaders.stream().allMatch(h -> h.equals("1") || h.equals("2")), fastAttemptHeaders.toString());
  }

  @Test
  void replicaUrisKeepThePathAndQuery() {
    assertEquals(URI.create("https://b:8443/v1/x?q=1"),
        RetryingHttpClient.onReplica(URI.create("http://a:80/v1/x?q=1"), URI.create("https://b:8443")));
  }
}
