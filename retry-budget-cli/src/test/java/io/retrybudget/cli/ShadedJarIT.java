package io.retrybudget.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.coordinator.Coordinator;
import io.retrybudget.coordinator.CoordinatorConfig;
import io.retrybudget.testing.RedisExtension;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * target/retry-budget.jar as a real process ({@code java -jar}) against a real coordinator: the
 * shaded jar runs on its own and its exit codes reach the shell. Runs after package
 * (surefire's integration-test execution in this module's pom).
 */
class ShadedJarIT {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();

  record Run(int exit, String out, String err) {}

  static Run run(Map<String, String> env, String... args) throws Exception {
    Path jar = Path.of("target", "retry-budget.jar");
    assertTrue(Files.isRegularFile(jar), "the shaded jar exists: " + jar.toAbsolutePath());
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    List<String> command = new java.util.ArrayList<>(List.of(java, "-jar", jar.toString()));
    command.addAll(List.of(args));
    ProcessBuilder pb = new ProcessBuilder(command);
    pb.environment().clear();
    pb.environment().putAll(env);
    Process p = pb.start();
    p.getOutputStream().close();
    // the answers are a few KB: reading one stream to its end cannot block on the other
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(60, TimeUnit.SECONDS), "the CLI exits");
    return new Run(p.exitValue(), out, err);
  }

  @Test
  void theShadedJarRunsOnItsOwnWithItsExitCodes() throws Exception {
    try (Coordinator c = Coordinator.start(CoordinatorConfig.fromEnvironment(Map.of(
        "REDIS_URL", redis.uri(), "COORDINATOR_PORT", "0", "COORDINATOR_TOKEN", "jar-token")))) {
      Map<String, String> env = Map.of("RETRY_BUDGET_URL", "http://127.0.0.1:" + c.port(), "RETRY_BUDGET_TOKEN", "jar-token");
      Run set = run(env, "set", "jar-api", "--ratio", "0.25", "--output", "json");
      assertEquals(0, set.exit(), set.toString());
      assertTrue(set.out().startsWith("{\"name\":\"jar-api\",\"mode\":\"enforce\",\"ratio\":0.25,"), set.out());

      Run missing = run(env, "get", "no-such-budget");
      assertEquals(1, missing.exit(), missing.toString());
      assertEquals("retry-budget: GET /v1/budgets/no-such-budget: HTTP 404, field name: no budget named no-such-budget\n",
          missing.err());

      Run usage = run(env, "set", "jar-api", "--ratio");
      assertEquals(2, usage.exit(), usage.toString());
      assertTrue(usage.err().contains("Missing required parameter for option '--ratio'"), usage.err());
    }
  }
}
