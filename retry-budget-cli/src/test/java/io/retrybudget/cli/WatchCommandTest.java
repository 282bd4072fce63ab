package io.retrybudget.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.retrybudget.coordinator.Coordinator;
import io.retrybudget.coordinator.CoordinatorConfig;
import io.retrybudget.testing.RedisExtension;
import io.retrybudget.testing.RedisServerProcess;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import picocli.CommandLine;

/** {@code watch} against a real coordinator, paced by fake time: no test sleeps. */
class WatchCommandTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();
  static final String TOKEN = "watch-token";
  static Coordinator coordinator;
  static Map<String, String> env;

  @BeforeAll
  static void start() throws Exception {
    coordinator = Coordinator.start(CoordinatorConfig.fromEnvironment(Map.of(
        "REDIS_URL", redis.uri(), "COORDINATOR_PORT", "0", "COORDINATOR_TOKEN", TOKEN)));
    env = Map.of("RETRY_BUDGET_URL", "http://127.0.0.1:" + coordinator.port(), "RETRY_BUDGET_TOKEN", TOKEN);
    CliRunner cli = new CliRunner(env, false);
    // no floor and no first attempts: nothing to grant
    assertEquals(0, cli.run("set", "spent", "--floor", "0").exit());
    assertEquals(0, cli.run("set", "healthy", "--floor", "100").exit());
  }

  @AfterAll
  static void stop() {
    coordinator.close();
  }

  @Test
  void refreshesOnceASecondByTheClockAndStopsAfterCount() {
    CliRunner cli = new CliRunner(env, false);
    CliRunner.Result r = cli.run("watch", "--count", "3");
    assertEquals(0, r.exit(), r.toString());
    assertEquals(List.of(Duration.ofSeconds(1), Duration.ofSeconds(1)), cli.time.sleeps, "a second between refreshes");
    String[] frames = r.out().split("(?<=\n)\n(?=Every )");
    assertEquals(3, frames.length, r.out());
    for (int i = 0; i < 3; i++) {
      assertTrue(frames[i].startsWith("Every 1 s: retry-budget watch  http://127.0.0.1:" + coordinator.port()
          + "  2026-12-02 00:40:0" + i + " UTC\n\nNAME "), frames[i]);
      assertTrue(frames[i].lines().anyMatch(l -> l.startsWith("spent ") && l.endsWith("EXHAUSTED (no refill)")), frames[i]);
      assertTrue(frames[i].lines().anyMatch(l -> l.startsWith("healthy ") && l.endsWith(" ok")), frames[i]);
      assertTrue(frames[i].stripTrailing().endsWith("2 budgets, 1 exhausted"), frames[i]);
    }
    assertFalse(r.out().contains("\u001b"), "no ANSI when stdout is not a terminal");
  }

  @Test
  void onATerminalEachRefreshRedrawsTheScreenWithExhaustedBudgetsHighlighted() {
    CliRunner.Result r = new CliRunner(env, true).run("watch", "--count", "2", "--interval", "250");
    assertEquals(0, r.exit(), r.toString());
    String[] frames = r.out().split(java.util.regex.Pattern.quote(WatchCommand.CLEAR_SCREEN), -1);
    assertEquals(3, frames.length, "each frame starts by clearing the screen: " + r.out());
    assertEquals("", frames[0]);
    assertTrue(frames[2].startsWith("Every 250 ms: retry-budget watch ") && frames[2].contains("00:40:00 UTC"), frames[2]);
    assertTrue(frames[2].lines().anyMatch(l -> l.startsWith(Table.HIGHLIGHT + "spent ") && l.endsWith(Table.RESET)), frames[2]);
    assertFalse(frames[2].contains(Table.HIGHLIGHT + "healthy"), frames[2]);
  }

  @Test
  void jsonOutputIsOneListingALine() throws Exception {
    CliRunner.Result r = new CliRunner(env, true).run("watch", "--count", "2", "-o", "json");
    assertEquals(0, r.exit(), r.toString());
    List<String> lines = r.out().lines().toList();
    assertEquals(2, lines.size(), r.out());
    for (String line : lines) {
      JsonNode listing = new ObjectMapper().readTree(line);
      assertTrue(listing.get("budgets").findValuesAsText("name").containsAll(List.of("spent", "healthy")), line);
    }
    assertFalse(r.out().contains("\u001b"), "JSON is never coloured");
  }

  @Test
  void aCoordinatorThatIsDownIsShownAndTheLastRefreshDecidesTheExitCode() {
    int port = RedisServerProcess.freePort();
    CliRunner down = new CliRunner(Map.of("RETRY_BUDGET_URL", "http://127.0.0.1:" + port), false);
    CliRunner.Result table = down.run("watch", "--count", "2");
    assertEquals(1, table.exit(), table.toString());
    assertEquals(2, table.out().split("no answer: GET /v1/budgets: cannot reach the coordinator at http://127.0.0.1:"
        + port + ": connection refused\n", -1).length - 1, table.out());
    CliRunner.Result json = down.run("watch", "--count", "1", "--output", "json");
    assertEquals(1, json.exit(), json.toString());
    assertEquals("", json.out());
    assertTrue(json.err().contains("connection refused"), json.err());
  }

  @Test
  void aCoordinatorThatComesBackDuringTheWatchIsShownAgain() {
    int port = RedisServerProcess.freePort();
    List<Coordinator> started = new ArrayList<>();
    CliRunner.FakeTime time = new CliRunner.FakeTime();
    // while the watch waits for its second refresh, the coordinator starts on the port it watches
    Sleeper startsTheCoordinator = d -> {
      time.sleeper.sleep(d);
      if (started.isEmpty()) {
        try {
          started.add(Coordinator.start(CoordinatorConfig.fromEnvironment(Map.of("REDIS_URL", redis.uri(),
              "COORDINATOR_PORT", Integer.toString(port), "COORDINATOR_MANAGEMENT_PORT", Integer.toString(port),
              "COORDINATOR_TOKEN", TOKEN))));
        } catch (Exception e) {
          throw new IllegalStateException("the coordinator did not start on port " + port, e);
        }
      }
    };
    StringWriter out = new StringWriter();
    CommandLine cli = RetryBudgetCli.commandLine(new CliContext(Map.of("RETRY_BUDGET_URL", "http://127.0.0.1:" + port),
        false, time, startsTheCoordinator));
    cli.setOut(new PrintWriter(out, true));
    cli.setErr(new PrintWriter(new StringWriter(), true));
    try {
      assertEquals(0, cli.execute("watch", "--count", "2"), out.toString());
    } finally {
      started.forEach(Coordinator::close);
    }
    String[] frames = out.toString().split("(?<=\n)\n(?=Every )");
    assertTrue(frames[0].contains("connection refused"), frames[0]);
    assertTrue(frames[1].contains("EXHAUSTED") && frames[1].stripTrailing().endsWith("2 budgets, 1 exhausted"), frames[1]);
  }
}
