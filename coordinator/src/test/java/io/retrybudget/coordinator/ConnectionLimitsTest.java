package io.retrybudget.coordinator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.testing.RedisExtension;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The connection guard on real sockets: header, body and idle deadlines (short ones, configured),
 * and the connection cap: at the cap a waiting connection gives way so health probes get in, and
 * when every connection carries a request the newcomer is closed at once.
 */
class ConnectionLimitsTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();
  static final String TOKEN = "limits-token";
  static final int TIMEOUT_MS = 600;
  static Coordinator timeouts;
  static Coordinator capped;
  static final int CAP = 20;

  @BeforeAll
  static void start() throws Exception {
    timeouts = Coordinator.start(CoordinatorConfig.fromEnvironment(Map.of(
        "REDIS_URL", redis.uri(), "COORDINATOR_PORT", "0", "COORDINATOR_TOKEN", TOKEN,
        "COORDINATOR_HEADER_TIMEOUT_MS", Integer.toString(TIMEOUT_MS),
        "COORDINATOR_BODY_TIMEOUT_MS", Integer.toString(TIMEOUT_MS),
        "COORDINATOR_IDLE_TIMEOUT_MS", Integer.toString(TIMEOUT_MS))));
    capped = Coordinator.start(CoordinatorConfig.fromEnvironment(Map.of(
        "REDIS_URL", redis.uri(), "COORDINATOR_PORT", "0", "COORDINATOR_TOKEN", TOKEN,
        "COORDINATOR_MAX_CONNECTIONS", Integer.toString(CAP))));
  }

  @AfterAll
  static void stop() {
    timeouts.close();
    capped.close();
  }

  /** How long until the server closes {@code c}, reading (and dropping) what it sends. */
  private static long millisUntilClosed(RawHttp c) throws IOException {
    long start = System.nanoTime();
    c.timeout(10_000);
    assertTrue(c.closedByServer(), "closed within 10 s");
    return (System.nanoTime() - start) / 1_000_000;
  }

  @Test
  void slowHeadersAreCutAtTheHeaderDeadline() throws Exception {
    ScheduledExecutorService drip = Executors.newSingleThreadScheduledExecutor();
    try (RawHttp c = new RawHttp(timeouts.port())) {
      c.send("GET /health/live HTTP/1.1\r\nX-Slow: ");
      // one byte every 50 ms: never idle, never done
      drip.scheduleAtFixedRate(() -> {
        try {
          c.send("a");
        } catch (IOException closed) {
          // the server hung up: what the test waits for
        }
      }, 50, 50, TimeUnit.MILLISECONDS);
      long ms = millisUntilClosed(c);
      assertTrue(ms >= TIMEOUT_MS - 100 && ms < TIMEOUT_MS + 1_000, "closed after " + ms + " ms");
    } finally {
      drip.shutdownNow();
    }
    assertTrue(closedFor(timeouts, "header_timeout") >= 1);
  }

  @Test
  void aSilentConnectionIsCutAtTheHeaderDeadline() throws Exception {
    try (RawHttp c = new RawHttp(timeouts.port())) {
      long ms = millisUntilClosed(c);
      assertTrue(ms >= TIMEOUT_MS - 100 && ms < TIMEOUT_MS + 1_000, "closed after " + ms + " ms");
    }
  }

  @Test
  void aBodyThatNeverEndsIsCutAtTheBodyDeadline() throws Exception {
    try (RawHttp c = new RawHttp(timeouts.port())) {
      c.send("PUT /v1/budgets/slow HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " + TOKEN
          + "\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"ratio\":");
      long ms = millisUntilClosed(c);
      assertTrue(ms >= TIMEOUT_MS - 100 && ms < TIMEOUT_MS + 1_000, "closed after " + ms + " ms");
    }
    assertTrue(closedFor(timeouts, "body_timeout") >= 1);
  }

  @Test
  void anIdleKeepAliveIsCutAtTheIdleDeadline() throws Exception {
    try (RawHttp c = new RawHttp(timeouts.port())) {
      for (int i = 0; i < 3; i++) {
        assertEquals(200, c.send("GET /health/live HTTP/1.1\r\nHost: t\r\n\r\n").read().status(), "keep-alive works");
      }
      long ms = millisUntilClosed(c);
      assertTrue(ms >= TIMEOUT_MS - 100 && ms < TIMEOUT_MS + 1_000, "closed after " + ms + " ms");
    }
    assertTrue(closedFor(timeouts, "idle_timeout") >= 1);
  }

  @Test
  void atTheCapTheLongestWaitingGivesWayAndYoungBusyOnesAreNotCut() throws Exception {
    List<RawHttp> waiting = new ArrayList<>();
    List<RawHttp> busy = new ArrayList<>();
    try {
      for (int i = 0; i < CAP; i++) {
        waiting.add(new RawHttp(capped.port()));
        // each is counted before the next is opened: an answer on a fresh connection proves it
      }
      awaitOpen(capped, CAP);
      // a probe over the cap: the oldest waiting connection is closed to let it in
      try (RawHttp probe = new RawHttp(capped.port())) {
        assertEquals(200, probe.send("GET /health/live HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").read().status());
      }
      waiting.get(0).timeout(2_000);
      assertTrue(waiting.get(0).closedByServer(), "the longest waiting connection was evicted");
      waiting.get(1).timeout(200);
      assertFalse(waiting.get(1).closedByServer(), "only it");
      assertTrue(closedFor(capped, "evicted") >= 1);
      for (RawHttp w : waiting) {
        w.close();
      }
      waiting.clear();
      awaitOpen(capped, 0);

      // every connection carries a request (an authenticated body in progress): nothing to evict
      double refusedBefore = closedFor(capped, "refused");
      awaitOpen(capped, 0); // the metrics connection gone too, else the 20th PUT would evict a 19th not yet under way
      for (int i = 0; i < CAP; i++) {
        RawHttp b = new RawHttp(capped.port());
        busy.add(b);
        b.send("PUT /v1/budgets/busy HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " + TOKEN
            + "\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{");
      }
      awaitOpen(capped, CAP);
      io.retrybudget.testing.Eventually.await("every request under way", java.time.Duration.ofSeconds(5),
          () -> capped.waitingConnections() == 0);
      try (RawHttp late = new RawHttp(capped.port())) {
        late.timeout(2_000);
        long start = System.nanoTime();
        assertTrue(late.closedByServer(), "refused");
        assertTrue((System.nanoTime() - start) / 1_000_000 < 1_000, "at once");
      }
      for (RawHttp b : busy) {
        b.timeout(100);
        assertFalse(b.closedByServer(), "requests under way for less than a second are not cut for a newcomer");
      }
      busy.remove(0).close();
      awaitOpen(capped, CAP - 1);
      assertEquals(refusedBefore + 1, closedFor(capped, "refused"));
    } finally {
      for (RawHttp c : waiting) {
        c.close();
      }
      for (RawHttp c : busy) {
        c.close();
      }
    }
    awaitOpen(capped, 0);
    try (RawHttp after = new RawHttp(capped.port())) {
      assertEquals(200, after.send("GET /health/live HTTP/1.1\r\nHost: t\r\n\r\n").read().status());
    }
  }

  /**
   * The cap filled with connections that all carry a request: unfinished bodies on GET /metrics and
   * GET /openapi.yaml (no token needed) and on authenticated PUTs. The answered ones end at once,
   * the busy ones give way once busy for a second, so a probe and an authenticated write get in.
   */
  @Test
  void atTheCapBusyConnectionsGiveWaySoProbesAndWritesGetIn() throws Exception {
    try (RawHttp setup = new RawHttp(capped.port())) {
      assertEquals(200, setup.send(put("capw", "{\"ratio\": 0.5}")).read().status());
    }
    awaitOpen(capped, 0);
    List<RawHttp> attack = new ArrayList<>();
    try {
      int puts = CAP / 4;
      for (int i = 0; i < puts; i++) {
        RawHttp a = new RawHttp(capped.port());
        attack.add(a);
        a.send("PUT /v1/budgets/busy HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " + TOKEN
            + "\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{");
      }
      awaitOpen(capped, puts);
      io.retrybudget.testing.Eventually.await("every PUT under way", java.time.Duration.ofSeconds(5),
          () -> capped.waitingConnections() == 0);
      for (int i = puts; i < CAP; i++) {
        RawHttp a = new RawHttp(capped.port());
        attack.add(a);
        String target = i % 2 == 0 ? "/metrics" : "/openapi.yaml";
        a.send("GET " + target + " HTTP/1.1\r\nHost: t\r\nContent-Length: 1000000\r\n\r\nx");
        RawHttp.Answer early = a.readHeadOnly();
        assertEquals(200, early.status(), "answered before its body ended");
        assertEquals("close", early.header("connection"), target + ": never kept alive with its body unread");
      }
      io.retrybudget.testing.Eventually.await("a live probe answered at the cap", java.time.Duration.ofSeconds(3),
          () -> answers(capped, "GET /health/live HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n") == 200);
      for (int i = 0; i < CAP; i++) {
        attack.add(new RawHttp(capped.port())); // the cap again, these busy too
        attack.get(attack.size() - 1).send("PUT /v1/budgets/busy HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer "
            + TOKEN + "\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{");
      }
      String body = "{\"count\": 1}";
      io.retrybudget.testing.Eventually.await("an authenticated write answered at the cap",
          java.time.Duration.ofSeconds(3), () -> answers(capped, "POST /v1/budgets/capw/requests HTTP/1.1\r\nHost: t\r\n"
              + "Authorization: Bearer " + TOKEN + "\r\nContent-Type: application/json\r\nConnection: close\r\n"
              + "Content-Length: " + body.length() + "\r\n\r\n" + body) == 200);
      assertTrue(capped.openConnections() <= CAP + 1, "the cap held: " + capped.openConnections());
    } finally {
      for (RawHttp c : attack) {
        c.close();
      }
    }
    awaitOpen(capped, 0);
  }

  /**
   * However slowly it reads, a connection answers at most {@link ConnectionGuard#MAX_REQUESTS_PER_CONNECTION}
   * requests (each answer refreshes its deadline), then it is closed: the answers of 400 pipelined
   * requests are read at about 3 MB/s and end after the limit.
   */
  @Test
  void aConnectionAnswersABoundedNumberOfRequests() throws Exception {
    int answer = (int) Coordinator.class.getResourceAsStream("/openapi.yaml").readAllBytes().length;
    try (java.net.Socket s = new java.net.Socket()) {
      s.setReceiveBufferSize(16 * 1024);
      s.connect(new java.net.InetSocketAddress("127.0.0.1", timeouts.port()), 2_000);
      s.setSoTimeout(10_000);
      s.getOutputStream().write("GET /openapi.yaml HTTP/1.1\r\nHost: t\r\n\r\n".repeat(400)
          .getBytes(java.nio.charset.StandardCharsets.US_ASCII));
      long read = 0;
      byte[] buf = new byte[64 * 1024];
      for (int n; (n = s.getInputStream().read(buf)) >= 0; ) {
        read += n;
      }
      assertTrue(read >= (long) ConnectionGuard.MAX_REQUESTS_PER_CONNECTION * answer, read + " bytes");
      assertTrue(read < (ConnectionGuard.MAX_REQUESTS_PER_CONNECTION + 1L) * (answer + 300), read + " bytes: "
          + read / answer + " answers");
    }
  }

  private static String put(String name, String body) {
    return "PUT /v1/budgets/" + name + " HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " + TOKEN
        + "\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " + body.length()
        + "\r\n\r\n" + body;
  }

  /** The status of {@code request} on a fresh connection, or -1 when the connection is refused. */
  private static int answers(Coordinator c, String request) {
    try (RawHttp r = new RawHttp(c.port())) {
      r.timeout(2_000);
      return r.send(request).read().status();
    } catch (IOException | RuntimeException refused) {
      return -1;
    }
  }

  private static void awaitOpen(Coordinator c, int n) throws Exception {
    io.retrybudget.testing.Eventually.await(n + " open connections, now " + c.openConnections(),
        java.time.Duration.ofSeconds(5), () -> c.openConnections() == n);
  }

  private static double closedFor(Coordinator c, String reason) throws Exception {
    String metrics;
    try (RawHttp m = new RawHttp(c.port())) {
      metrics = m.send("GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").read().body();
    }
    Matcher x = Pattern.compile("retry_budget_http_connections_closed_total\\{reason=\"" + reason + "\"} ([0-9.eE+]+)")
        .matcher(metrics);
    return x.find() ? Double.parseDouble(x.group(1)) : -1;
  }
}
