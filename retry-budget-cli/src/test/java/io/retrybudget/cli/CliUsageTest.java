package io.retrybudget.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import io.retrybudget.testing.RedisServerProcess;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * What needs no coordinator, or a broken one: usage errors (exit 2), help, completion, a
 * coordinator that is down, silent or answers too much (exit 1), and the text the CLI prints safely.
 */
class CliUsageTest {
  private final CliRunner cli = new CliRunner(Map.of(), false);

  @Test
  void wrongUsageIsExitCode2NamingTheOption() {
    Map<String[], String> wrong = Map.of(
        new String[] {}, "missing a command",
        new String[] {"frobnicate"}, "Unmatched argument at index 0: 'frobnicate'",
        new String[] {"get"}, "Missing required parameter: 'NAME'",
        new String[] {"set", "x"}, "set: give at least one of --ratio, --floor, --window, --mode, --max-calls",
        new String[] {"set", "x", "--ratio", "abc"}, "Invalid value for option '--ratio': 'abc' is not a decimal number",
        new String[] {"set", "x", "--floor", "1.5"}, "Invalid value for option '--floor'",
        new String[] {"--output", "yaml", "list"}, "Invalid value for option '--output'",
        new String[] {"--url", "ftp://host/", "list"}, "--url: expected http://host[:port][/path]",
        new String[] {"watch", "--count", "-1"}, "--count: expected 0 (never stop) or more, was -1",
        new String[] {"watch", "--interval", "10"}, "--interval: expected 100 to 3600000 ms, was 10");
    for (Map.Entry<String[], String> w : wrong.entrySet()) {
      CliRunner.Result r = cli.run(w.getKey());
      assertEquals(2, r.exit(), String.join(" ", w.getKey()) + ": " + r);
      assertTrue(r.err().startsWith("retry-budget: ") && r.err().contains(w.getValue()), String.join(" ", w.getKey()) + ": " + r);
      assertTrue(r.err().contains("--help' for more."), r.err());
      assertEquals("", r.out());
    }
    assertEquals(2, cli.run("--timeout", "0", "list").exit());
    assertEquals(2, cli.run("--token", "two words", "list").exit());
  }

  @Test
  void helpVersionAndCompletion() throws Exception {
    CliRunner.Result help = cli.run("--help");
    assertEquals(0, help.exit(), help.toString());
    for (String command : List.of("list", "get", "set", "delete", "watch", "completion", "RETRY_BUDGET_TOKEN", "Exit codes:")) {
      assertTrue(help.out().contains(command), command + " in " + help.out());
    }
    CliRunner.Result setHelp = cli.run("set", "--help");
    assertEquals(0, setHelp.exit());
    assertTrue(setHelp.out().contains("--floor=N") && setHelp.out().contains("min_retries_per_second")
        && setHelp.out().contains("--url=URL"), "the global options are inherited: " + setHelp.out());
    assertEquals(0, cli.run("--version").exit());

    CliRunner.Result completion = cli.run("completion");
    assertEquals(0, completion.exit(), completion.toString());
    String script = completion.out();
    assertTrue(script.startsWith("#!/usr/bin/env bash"), script.substring(0, 80));
    for (String option : List.of("--floor", "--ratio", "--window", "--count", "--output")) {
      assertTrue(script.contains(option), option + " is completed");
    }
    // the script completes in a real bash: commands, and the modes after --mode
    assertEquals("watch", complete(script, "retry-budget", "wa"));
    assertEquals("enforce shadow", complete(script, "retry-budget", "set", "x", "--mode", ""));
  }

  /** What the completion script offers for the last word, in a real bash. */
  private static String complete(String script, String... words) throws Exception {
    Path file = Files.createTempFile("retry-budget-completion", ".bash");
    try {
      Files.writeString(file, script);
      String line = String.join(" ", words);
      String array = String.join(" ", Arrays.stream(words).map(w -> "'" + w + "'").toList());
      Process bash = new ProcessBuilder("bash", "-c", "source '" + file + "'; COMP_WORDS=(" + array + "); COMP_CWORD="
          + (words.length - 1) + "; COMP_LINE='" + line + "'; COMP_POINT=${#COMP_LINE}; _complete_retry-budget 2>/dev/null;"
          + " echo \"${COMPREPLY[*]}\"").redirectErrorStream(true).start();
      String out = new String(bash.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
      assertTrue(bash.waitFor(30, TimeUnit.SECONDS));
      return out;
    } finally {
      Files.delete(file);
    }
  }

  @Test
  void aCoordinatorThatIsDownIsExitCode1() {
    int port = RedisServerProcess.freePort();
    CliRunner down = new CliRunner(Map.of("RETRY_BUDGET_URL", "http://127.0.0.1:" + port), false);
    for (String[] args : List.of(new String[] {"list"}, new String[] {"get", "a"}, new String[] {"set", "a", "--ratio", "0.1"},
        new String[] {"delete", "a"})) {
      CliRunner.Result r = down.run(args);
      assertEquals(1, r.exit(), r.toString());
      assertTrue(r.err().contains("cannot reach the coordinator at http://127.0.0.1:" + port + ": connection refused"), r.err());
    }
  }

  @Test
  void aCoordinatorThatNeverAnswersIsExitCode1AfterTheTimeout() throws Exception {
    // accepts connections and reads nothing: only the CLI's own timeout ends the call
    try (ServerSocket silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
      List<Socket> held = new ArrayList<>();
      Thread acceptor = new Thread(() -> {
        try {
          while (true) {
            held.add(silent.accept());
          }
        } catch (Exception closed) {
          // the test is over
        }
      });
      acceptor.setDaemon(true);
      acceptor.start();
      CliRunner r = new CliRunner(Map.of("RETRY_BUDGET_URL", "http://127.0.0.1:" + silent.getLocalPort()), false);
      CliRunner.Result list = r.run("--timeout", "300", "list");
      assertEquals(1, list.exit(), list.toString());
      assertEquals("retry-budget: GET /v1/budgets: the coordinator at http://127.0.0.1:" + silent.getLocalPort()
          + " did not answer within 300 ms\n", list.err());
    }
  }

  @Test
  void aBodyThatStallsAfterTheHeadersIsBoundedByTheTimeoutToo() throws Exception {
    java.util.concurrent.CountDownLatch testOver = new java.util.concurrent.CountDownLatch(1);
    HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.setExecutor(java.util.concurrent.Executors.newCachedThreadPool());
    server.createContext("/v1/budgets", exchange -> {
      exchange.sendResponseHeaders(200, 0);
      exchange.getResponseBody().write("{\"budgets\": [".getBytes(StandardCharsets.UTF_8));
      exchange.getResponseBody().flush();
      try {
        testOver.await(); // the rest of the body never comes while the CLI waits
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      exchange.close();
    });
    server.start();
    try {
      String url = "http://127.0.0.1:" + server.getAddress().getPort();
      CliRunner.Result list = new CliRunner(Map.of("RETRY_BUDGET_URL", url), false).run("--timeout", "300", "list");
      assertEquals(1, list.exit(), list.toString());
      assertEquals("retry-budget: GET /v1/budgets: the coordinator at " + url + " did not answer within 300 ms\n", list.err());
    } finally {
      testOver.countDown();
      server.stop(0);
    }
  }

  @Test
  void aStreamedBodyOverTheCapIsCutOffAndANonJsonErrorIsShownCleaned() throws Exception {
    HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext("/v1/budgets", exchange -> {
      exchange.sendResponseHeaders(200, 0); // chunked: no Content-Length to refuse up front
      try (OutputStream body = exchange.getResponseBody()) {
        byte[] chunk = new byte[8192];
        for (int i = 0; i < 64; i++) {
          body.write(chunk);
        }
      } catch (java.io.IOException cutOff) {
        // the client stopped reading
      }
    });
    server.createContext("/v1/budgets/x", exchange -> {
      byte[] body = "<html>\u001b]0;owned\u0007 bad gateway</html>".getBytes(StandardCharsets.UTF_8);
      exchange.sendResponseHeaders(502, body.length);
      exchange.getResponseBody().write(body);
      exchange.close();
    });
    server.start();
    try {
      URI base = URI.create("http://127.0.0.1:" + server.getAddress().getPort());
      CoordinatorClient small = new CoordinatorClient(base, null, Duration.ofSeconds(10), 100_000);
      CliFailure f = assertThrows(CliFailure.class, small::list);
      assertEquals("GET /v1/budgets: response body larger than 100000 bytes", f.getMessage());
      CliFailure gateway = assertThrows(CliFailure.class, () -> small.get("x"));
      assertEquals("GET /v1/budgets/x: HTTP 502: <html>?]0;owned? bad gateway</html>", gateway.getMessage());
    } finally {
      server.stop(0);
    }
  }

  /**
   * The coordinator's errors are RFC 9457 problems: the message comes from {@code detail} and names
   * {@code field}, also once the deprecated {@code error} member is gone; an older coordinator's
   * {@code {"error", "field"}} still reads the same.
   */
  @Test
  void refusalsReadTheProblemsDetailAndFieldAndTheOlderErrorBody() {
    byte[] problem = ("{\"type\":\"urn:retrybudget:problem:invalid-request\",\"title\":\"The request is not valid\","
        + "\"status\":400,\"detail\":\"ratio must be in (0, 1]\",\"instance\":\"/v1/budgets/x\",\"field\":\"ratio\"}")
        .getBytes(StandardCharsets.UTF_8);
    assertEquals("PUT /v1/budgets/x: HTTP 400, field ratio (--ratio): ratio must be in (0, 1]",
        CoordinatorClient.refusal("PUT /v1/budgets/x", 400, problem));
    byte[] older = "{\"error\":\"ratio must be in (0, 1]\",\"field\":\"ratio\"}".getBytes(StandardCharsets.UTF_8);
    assertEquals("PUT /v1/budgets/x: HTTP 400, field ratio (--ratio): ratio must be in (0, 1]",
        CoordinatorClient.refusal("PUT /v1/budgets/x", 400, older));
    byte[] broken = ("{\"type\":\"urn:retrybudget:problem:broken-budget\",\"status\":409,\"detail\":\"bad ratio_ppm\","
        + "\"error\":\"bad ratio_ppm\",\"field\":\"ratio_ppm\",\"key\":\"rb:v2:{x}:cfg\"}").getBytes(StandardCharsets.UTF_8);
    assertEquals("GET /v1/budgets/x: HTTP 409, field ratio_ppm, key rb:v2:{x}:cfg: bad ratio_ppm",
        CoordinatorClient.refusal("GET /v1/budgets/x", 409, broken));
  }

  @Test
  void namesArePercentEncodedSoNoNameReachesAnotherResource() {
    assertEquals("/v1/budgets/payments-api.v2_x", CoordinatorClient.budgetPath("payments-api.v2_x"));
    assertEquals("/v1/budgets/..%2Fmetrics", CoordinatorClient.budgetPath("../metrics"));
    assertEquals("/v1/budgets/%2E%2E", CoordinatorClient.budgetPath(".."));
    assertEquals("/v1/budgets/a%3Fexhausted%3Dtrue%20%C3%A9", CoordinatorClient.budgetPath("a?exhausted=true é"));
  }

  @Test
  void controlCharactersNeverReachTheTerminal() {
    assertEquals("a?[31mred?", Text.clean("a\u001b[31mred\u009b"));
    assertEquals("plain", Text.clean("plain"));
    String table = new Table(List.of("NAME", "STATUS")).row(List.of("x\u001b[2J", "ok"), true).render(true);
    assertEquals("NAME   STATUS\n" + Table.HIGHLIGHT + "x?[2J  ok" + Table.RESET + "\n", table);
  }
}
