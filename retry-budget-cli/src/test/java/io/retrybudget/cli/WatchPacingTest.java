package io.retrybudget.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.sun.net.httpserver.HttpServer;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * How {@code watch} paces refreshes that take time: each starts one interval after the previous one
 * started, at once after a refresh longer than the interval, never in a burst. A listing stub moves
 * the fake clock by the time each refresh "takes".
 */
class WatchPacingTest {
  /** The sleeps of {@code watch --count 4} when its refreshes take these ms, one after another. */
  private static List<Duration> sleepsWhenRefreshesTake(long... refreshMillis) throws Exception {
    java.util.concurrent.atomic.AtomicInteger refresh = new java.util.concurrent.atomic.AtomicInteger();
    CliRunner cli;
    HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    CliRunner.FakeTime[] time = new CliRunner.FakeTime[1];
    server.createContext("/v1/budgets", exchange -> {
      time[0].millis.addAndGet(refreshMillis[refresh.getAndIncrement()]);
      byte[] body = "{\"budgets\": [], \"broken\": [], \"truncated\": false}".getBytes(StandardCharsets.UTF_8);
      exchange.getResponseHeaders().add("Content-Type", "application/json");
      exchange.sendResponseHeaders(200, body.length);
      exchange.getResponseBody().write(body);
      exchange.close();
    });
    server.start();
    try {
      cli = new CliRunner(Map.of("RETRY_BUDGET_URL", "http://127.0.0.1:" + server.getAddress().getPort()), false);
      time[0] = cli.time;
      CliRunner.Result r = cli.run("watch", "--count", "4");
      assertEquals(0, r.exit(), r.toString());
      assertEquals(4, r.out().split("no budgets\n", -1).length - 1, r.out());
      return cli.time.sleeps;
    } finally {
      server.stop(0);
    }
  }

  @Test
  void aRefreshShorterThanTheIntervalWaitsOnlyForTheRest() throws Exception {
    assertEquals(List.of(Duration.ofMillis(600), Duration.ofMillis(600), Duration.ofMillis(600)), sleepsWhenRefreshesTake(400, 400, 400, 400));
  }

  @Test
  void aRefreshLongerThanTheIntervalIsFollowedAtOnceWithoutCatchingUp() throws Exception {
    // the first refresh takes 2.5 s: the second starts at once, and the third a second after the
    // second started (pacing by the first start would skip the wait to make up for the lost seconds)
    assertEquals(List.of(Duration.ofMillis(900), Duration.ofMillis(900)), sleepsWhenRefreshesTake(2_500, 100, 100, 100));
  }
}
