package io.retrybudget.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.retrybudget.coordinator.Coordinator;
import io.retrybudget.coordinator.CoordinatorConfig;
import io.retrybudget.testing.RedisExtension;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Every command against a real coordinator on a real redis-server: tables, JSON, exit codes, errors. */
class CliCommandsTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();
  static final String TOKEN = "operator-token";
  static final ObjectMapper JSON = new ObjectMapper();
  static Coordinator coordinator;
  static CliRunner cli;

  @BeforeAll
  static void start() throws Exception {
    coordinator = Coordinator.start(CoordinatorConfig.fromEnvironment(Map.of(
        "REDIS_URL", redis.uri(), "COORDINATOR_PORT", "0", "COORDINATOR_TOKEN", TOKEN)));
    cli = new CliRunner(Map.of("RETRY_BUDGET_URL", url(), "RETRY_BUDGET_TOKEN", TOKEN), false);
  }

  @AfterAll
  static void stop() {
    coordinator.close();
  }

  static String url() {
    return "http://127.0.0.1:" + coordinator.port();
  }

  static JsonNode json(String text) throws Exception {
    return JSON.readTree(text);
  }

  @Test
  void setCreatesThenGetListAndDeleteSeeIt() throws Exception {
    CliRunner.Result set = cli.run("set", "orders-api", "--ratio", "0.2", "--floor", "5", "--window", "20", "--mode", "shadow");
    assertEquals(0, set.exit(), set.toString());
    assertTrue(set.out().contains("name                    orders-api\n"), set.out());
    assertTrue(set.out().contains("min_retries_per_second  5\n"), set.out());

    CliRunner.Result get = cli.run("get", "orders-api");
    assertEquals(0, get.exit(), get.toString());
    assertTrue(get.out().contains("ratio                   0.2\n") && get.out().contains("window_seconds          20\n")
        && get.out().contains("mode                    shadow\n"), get.out());
    assertTrue(get.out().contains("BUCKET  AGE"), "the window bucket by bucket: " + get.out());
    assertEquals("", get.err());

    CliRunner.Result list = cli.run("list");
    assertEquals(0, list.exit(), list.toString());
    assertTrue(list.out().startsWith("NAME "), list.out());
    assertTrue(list.out().lines().anyMatch(l -> l.matches("orders-api +shadow +0\\.2 +5 +20s +0 +0 .*")), list.out());

    // fields left out keep their values
    CliRunner.Result again = cli.run("set", "orders-api", "--floor", "7");
    assertEquals(0, again.exit(), again.toString());
    JsonNode after = json(cli.run("get", "orders-api", "--output", "json").out());
    assertEquals(0.2, after.get("ratio").asDouble());
    assertEquals(7, after.get("min_retries_per_second").asInt());
    assertEquals("shadow", after.get("mode").asText());

    CliRunner.Result delete = cli.run("delete", "orders-api");
    assertEquals(0, delete.exit(), delete.toString());
    assertEquals("deleted orders-api\n", delete.out());
    CliRunner.Result gone = cli.run("get", "orders-api");
    assertEquals(1, gone.exit(), gone.toString());
    assertEquals("", gone.out());
    assertEquals("retry-budget: GET /v1/budgets/orders-api: HTTP 404, field name: no budget named orders-api\n", gone.err());
  }

  @Test
  void jsonOutputIsTheCoordinatorsJsonOneDocumentPerLine() throws Exception {
    assertEquals(0, cli.run("set", "json-api", "--ratio", "0.3").exit());
    CliRunner.Result list = cli.run("--output", "json", "list");
    assertEquals(0, list.exit(), list.toString());
    assertEquals(1, list.out().lines().count(), list.out());
    JsonNode listing = json(list.out());
    assertFalse(listing.get("truncated").asBoolean());
    assertTrue(listing.get("budgets").findValuesAsText("name").contains("json-api"), list.out());

    // the option is inherited: after the command as well as before it
    JsonNode one = json(cli.run("get", "json-api", "-o", "json").out());
    assertEquals("json-api", one.get("name").asText());
    assertEquals(0.3, one.get("ratio").asDouble());
    assertEquals(10, one.get("buckets").size());

    JsonNode set = json(cli.run("set", "json-api", "--mode", "enforce", "--output", "json").out());
    assertEquals("enforce", set.get("mode").asText());
    JsonNode deleted = json(cli.run("delete", "json-api", "--output", "json").out());
    assertEquals("{\"name\":\"json-api\",\"deleted\":true}", CoordinatorClient.compact(deleted));
  }

  @Test
  void aWrongOrMissingTokenIsRefusedWithExitCode1AndNothingChanges() throws Exception {
    assertEquals(0, cli.run("set", "guarded", "--ratio", "0.1").exit());
    CliRunner.Result wrong = cli.run("set", "guarded", "--ratio", "0.5", "--token", "not-the-token");
    assertEquals(1, wrong.exit(), wrong.toString());
    assertEquals("retry-budget: PUT /v1/budgets/guarded: HTTP 401, field Authorization (--token or RETRY_BUDGET_TOKEN): "
        + "a valid bearer token is required for writes\n", wrong.err());

    CliRunner noToken = new CliRunner(Map.of("RETRY_BUDGET_URL", url()), false);
    CliRunner.Result missing = noToken.run("delete", "guarded");
    assertEquals(1, missing.exit(), missing.toString());
    assertTrue(missing.err().contains("HTTP 401, field Authorization"), missing.err());
    // the flag works where the variable is missing
    assertEquals(0, noToken.run("set", "guarded", "--floor", "3", "--token", TOKEN).exit());

    JsonNode after = json(cli.run("get", "guarded", "-o", "json").out());
    assertEquals(0.1, after.get("ratio").asDouble(), "the refused writes changed nothing");
    assertEquals(3, after.get("min_retries_per_second").asInt());
  }

  @Test
  void aMissingBudgetIsExitCode1ForGetAndDelete() {
    CliRunner.Result get = cli.run("get", "no-such-budget");
    assertEquals(1, get.exit(), get.toString());
    assertTrue(get.err().contains("HTTP 404, field name: no budget named no-such-budget"), get.err());
    CliRunner.Result delete = cli.run("delete", "no-such-budget");
    assertEquals(1, delete.exit(), delete.toString());
    assertTrue(delete.err().contains("DELETE /v1/budgets/no-such-budget: HTTP 404"), delete.err());
  }

  @Test
  void aBadValueIsRefusedByTheCoordinatorNamingTheFieldAndTheOption() throws Exception {
    assertEquals(0, cli.run("set", "validated", "--ratio", "0.1", "--floor", "4").exit());
    Map<String, String[]> bad = Map.of(
        "field ratio (--ratio)", new String[] {"--ratio", "5"},
        "field min_retries_per_second (--floor)", new String[] {"--floor", "-1"},
        "field window_seconds (--window)", new String[] {"--window", "0"},
        "field mode (--mode)", new String[] {"--mode", "loud"},
        "field max_calls_per_second (--max-calls)", new String[] {"--max-calls", "0"});
    for (Map.Entry<String, String[]> b : bad.entrySet()) {
      // with a good value beside it: nothing of the write is applied
      String[] good = b.getValue()[0].equals("--mode") ? new String[] {"--floor", "9"} : new String[] {"--mode", "shadow"};
      CliRunner.Result r = cli.run("set", "validated", good[0], good[1], b.getValue()[0], b.getValue()[1]);
      assertEquals(1, r.exit(), r.toString());
      assertTrue(r.err().startsWith("retry-budget: PUT /v1/budgets/validated: HTTP 400, " + b.getKey() + ": "), r.err());
    }
    JsonNode after = json(cli.run("get", "validated", "-o", "json").out());
    assertEquals(4, after.get("min_retries_per_second").asInt(), "nothing of a refused write is applied");
    assertEquals("enforce", after.get("mode").asText(), "nothing of a refused write is applied");
    CliRunner.Result badName = cli.run("set", "bad/name", "--ratio", "0.1");
    assertEquals(1, badName.exit(), badName.toString());
    assertTrue(badName.err().contains("PUT /v1/budgets/bad%2Fname: HTTP 4"), badName.err());
  }

  @Test
  void exhaustedBudgetsAreMarkedAndHighlightedOnATerminalOnly() {
    // no floor and no first attempts: nothing to grant
    assertEquals(0, cli.run("set", "spent", "--floor", "0").exit());
    assertEquals(0, cli.run("set", "healthy", "--floor", "100").exit());
    CliRunner.Result plain = cli.run("list");
    String spentRow = plain.out().lines().filter(l -> l.startsWith("spent ")).findFirst().orElseThrow(() -> new AssertionError(plain.toString()));
    assertTrue(spentRow.endsWith("EXHAUSTED (no refill)"), spentRow);
    assertTrue(plain.out().lines().anyMatch(l -> l.startsWith("healthy ") && l.endsWith("  ok")), plain.out());
    assertFalse(plain.out().contains("\u001b"), "no ANSI when stdout is not a terminal");

    CliRunner terminal = new CliRunner(Map.of("RETRY_BUDGET_URL", url()), true);
    String coloured = terminal.run("list").out();
    assertTrue(coloured.contains(Table.HIGHLIGHT + "spent ") && coloured.lines()
        .anyMatch(l -> l.startsWith(Table.HIGHLIGHT + "spent ") && l.endsWith(Table.RESET)), coloured);
    assertFalse(coloured.contains(Table.HIGHLIGHT + "healthy"), coloured);
    CliRunner noColour = new CliRunner(Map.of("RETRY_BUDGET_URL", url(), "NO_COLOR", "1"), true);
    assertFalse(noColour.run("list").out().contains("\u001b"), "NO_COLOR turns colour off");
  }

  @Test
  void theUrlFlagBeatsTheVariable() {
    CliRunner elsewhere = new CliRunner(Map.of("RETRY_BUDGET_URL", "http://127.0.0.1:1"), false);
    assertEquals(0, elsewhere.run("list", "--url", url()).exit());
    assertEquals(0, elsewhere.run("--url", url() + "/", "list").exit(), "a trailing slash is fine");
  }

  @Test
  void aBodyOverTheCapIsRefused() {
    cli.run("set", "capped", "--ratio", "0.1");
    CoordinatorClient small = new CoordinatorClient(java.net.URI.create(url()), null, java.time.Duration.ofSeconds(5), 100);
    CliFailure f = org.junit.jupiter.api.Assertions.assertThrows(CliFailure.class, small::list);
    assertEquals("GET /v1/budgets: response body larger than 100 bytes", f.getMessage());
  }
}
