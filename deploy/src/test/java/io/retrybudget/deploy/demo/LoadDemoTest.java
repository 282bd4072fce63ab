package io.retrybudget.deploy.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.testing.RedisExtension;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The Compose load demo against a real Redis: its calls, through the SDK, and what its /metrics shows. */
class LoadDemoTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();
  final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

  @Test
  void healthyThenDownOverAndOver() {
    assertFalse(LoadDemo.inOutage(0, 240, 360));
    assertFalse(LoadDemo.inOutage(239_999, 240, 360));
    assertTrue(LoadDemo.inOutage(240_000, 240, 360));
    assertTrue(LoadDemo.inOutage(599_999, 240, 360));
    assertFalse(LoadDemo.inOutage(600_000, 240, 360), "the next cycle begins healthy");
    assertTrue(LoadDemo.inOutage(5_000, 0, 1), "no healthy phase: always down");
    assertFalse(LoadDemo.inOutage(5_000, 1, 0), "no outage: never down");
  }

  @Test
  void settingsNameTheWrongVariable() {
    LoadDemo.Settings d = LoadDemo.Settings.fromEnvironment(Map.of());
    assertEquals("redis://localhost:6379", d.redisUrl());
    assertEquals(9464, d.port());
    assertEquals(50, d.callsPerSecond());
    assertEquals("DEMO_PORT must be an integer, was 'x'", assertThrows(IllegalArgumentException.class,
        () -> LoadDemo.Settings.fromEnvironment(Map.of("DEMO_PORT", "x"))).getMessage());
    assertTrue(assertThrows(IllegalArgumentException.class,
        () -> LoadDemo.Settings.fromEnvironment(Map.of("DEMO_CALLS_PER_SECOND", "0"))).getMessage()
        .startsWith("DEMO_CALLS_PER_SECOND must be in [1, 1000]"));
    assertTrue(assertThrows(IllegalArgumentException.class,
        () -> LoadDemo.Settings.fromEnvironment(Map.of("DEMO_HEALTHY_SECONDS", "0", "DEMO_OUTAGE_SECONDS", "0"))).getMessage()
        .startsWith("DEMO_OUTAGE_SECONDS"));
  }

  @Test
  void itsCallsGoThroughTheSdkAndItsMetricsShowEveryKind() throws Exception {
    AtomicLong now = new AtomicLong(1_000_000);
    // healthy 10 s, then down 10 s; the calls are made here, one by one, on the clock above
    try (LoadDemo demo = new LoadDemo(new LoadDemo.Settings(redis.uri(), "127.0.0.1", 0, 50, 10, 10, "demo-api"), now::get)) {
      demo.start();
      assertThrows(IllegalStateException.class, demo::start);
    } // close() stops the calls and the server; the calls below are the test's own, one by one
    try (LoadDemo demo = new LoadDemo(new LoadDemo.Settings(redis.uri(), "127.0.0.1", 0, 50, 10, 10, "demo-api"), now::get)) {
      for (int i = 0; i < 50; i++) {
        demo.callPayments(); // healthy: 2 % failures
        demo.callSearch();
      }
      now.addAndGet(10_000); // the outage
      for (int i = 0; i < 300; i++) {
        demo.callPayments();
      }
      String metrics = scrape(demo.port());
      // every family the dashboard's SDK panels and the degraded alert query
      for (String family : new String[] {"retry_calls_total", "retry_attempts_total", "retry_budget_denials_total",
          "retry_budget_degraded", "retry_backoff_seconds_count"}) {
        assertTrue(metrics.contains(family + "{"), family + " in\n" + metrics);
      }
      assertTrue(value(metrics, "retry_calls_total", "budget=\"demo-api\"", "outcome=\"budget_exhausted\"") > 0,
          "the outage exhausted the fleet budget");
      assertTrue(value(metrics, "retry_attempts_total", "budget=\"demo-api\"", "kind=\"retry\"") > 0, "retries were made");
      assertEquals(350, value(metrics, "retry_attempts_total", "budget=\"demo-api\"", "kind=\"first\""), "one first attempt per call");
      assertTrue(value(metrics, "retry_calls_total", "budget=\"search\"", "outcome=\"success") > 0, "search answered");
      assertEquals(404, http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + demo.port() + "/other")).build(),
          HttpResponse.BodyHandlers.discarding()).statusCode());
      assertEquals(405, http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + demo.port() + "/metrics"))
          .POST(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.discarding()).statusCode());
    }
  }

  private String scrape(int port) throws Exception {
    HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics"))
        .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
    assertEquals(200, r.statusCode());
    assertTrue(r.headers().firstValue("Content-Type").orElse("").startsWith("text/plain"));
    return r.body();
  }

  /** The sum of the samples of {@code family} whose labels contain every one of {@code labels}. */
  private static double value(String metrics, String family, String... labels) {
    double sum = 0;
    Matcher m = Pattern.compile("(?m)^" + family + "\\{([^}]*)\\} (\\S+)").matcher(metrics);
    while (m.find()) {
      boolean all = true;
      for (String l : labels) {
        all &= m.group(1).contains(l);
      }
      if (all) {
        sum += Double.parseDouble(m.group(2));
      }
    }
    return sum;
  }
}
