package io.retrybudget.coordinator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import io.retrybudget.testing.RedisServerProcess;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The README's run command in a real process: no Redis configured and no redis-server on PATH, so
 * the coordinator starts the Redis binary it carries, prints a token, serves, and on SIGTERM shuts
 * down cleanly, stopping its Redis.
 */
class MainProcessTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();
  /**
   * The child JVM compiles with C1 only: what these tests check is what Main prints, serves and
   * does on exit, not how fast its code runs, and C2's compiler threads doubled the CPU a start
   * took (a failed start: 3.2 s of CPU and 7 s at a load of 15, against 1.6 s and 3 s).
   */
  private static final String QUICK_START = "-XX:TieredStopAtLevel=1";

  @Test
  void runsOnItsOwnRedisAndStopsCleanlyOnSigterm(@TempDir Path dir) throws Exception {
    Path log = dir.resolve("coordinator.log");
    int port = RedisServerProcess.freePort();
    int management = RedisServerProcess.freePort();
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    ProcessBuilder pb = new ProcessBuilder(java, QUICK_START, "-cp", System.getProperty("java.class.path"),
        "io.retrybudget.coordinator.Main").redirectErrorStream(true).redirectOutput(log.toFile());
    pb.environment().clear();
    pb.environment().put("PATH", "/nonexistent"); // forces the bundled Redis binary
    pb.environment().put("COORDINATOR_PORT", Integer.toString(port));
    pb.environment().put("COORDINATOR_MANAGEMENT_PORT", Integer.toString(management));
    Process p = pb.start();
    try {
      HttpClient http = HttpClient.newHttpClient();
      URI ready = URI.create("http://127.0.0.1:" + port + "/health/ready");
      Eventually.await("ready; output so far: " + lines(log), Duration.ofSeconds(30), () -> {
        try {
          return http.send(HttpRequest.newBuilder(ready).build(), HttpResponse.BodyHandlers.ofString()).statusCode() == 200;
        } catch (Exception e) {
          return false;
        }
      });
      List<String> started = lines(log);
      String token = started.stream().filter(l -> l.contains("Authorization: Bearer ")).findFirst()
          .map(l -> l.substring(l.indexOf("Bearer ") + 7).trim()).orElseThrow(() -> new AssertionError("no token printed: " + started));
      assertTrue(started.stream().anyMatch(l -> l.contains("started a local Redis")), started.toString());
      HttpResponse<String> put = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/budgets/demo"))
          .header("Authorization", "Bearer " + token).header("Content-Type", "application/json").PUT(HttpRequest.BodyPublishers.ofString("{\"ratio\": 0.1}")).build(),
          HttpResponse.BodyHandlers.ofString());
      assertEquals(200, put.statusCode(), put.body());
      // a few connections and requests: Vert.x registers its connection and request gauges again for
      // each (Micrometer warned "This Gauge has been already registered" from the second one on)
      for (int i = 0; i < 3; i++) {
        assertTrue(HostileAttacks.live(port, 5_000), "live on a fresh connection");
        assertTrue(HostileAttacks.metricsLines(port) > 0, "metrics on a fresh connection");
        assertTrue(HostileAttacks.live(management, 5_000), "live on the management port");
        assertTrue(HostileAttacks.metricsLines(management) > 0, "metrics on the management port");
      }

      List<ProcessHandle> children = p.toHandle().descendants().toList();
      assertFalse(children.isEmpty(), "the local redis-server runs as a child");
      p.destroy(); // SIGTERM
      assertTrue(p.waitFor(20, TimeUnit.SECONDS), "exits after SIGTERM");
      List<String> lines = lines(log);
      assertEquals(143, p.exitValue(), "ended by SIGTERM after its shutdown hook ran");
      Eventually.await("the local Redis stopped too", Duration.ofSeconds(5),
          () -> children.stream().noneMatch(ProcessHandle::isAlive));
      assertTrue(lines.stream().anyMatch(l -> l.contains("coordinator listening on port " + port
          + ", health and metrics also on management port " + management)), lines.toString());
      assertTrue(lines.stream().anyMatch(l -> l.contains("shutting down")), lines.toString());
      assertTrue(lines.stream().anyMatch(l -> l.equals("stopped")), lines.toString());
      assertTrue(lines.stream().noneMatch(l -> l.contains("already registered")), "no Micrometer warning: " + lines);
    } finally {
      p.destroyForcibly();
      p.toHandle().descendants().forEach(ProcessHandle::destroyForcibly);
    }
  }

  @Test
  void aBusyPortIsOneLineNamingThePortAndTheVariable(@TempDir Path dir) throws Exception {
    try (java.net.ServerSocket taken = new java.net.ServerSocket(0)) {
      Path log = dir.resolve("busy.log");
      String error = failedStart(log, java.util.Map.of("REDIS_URL", redis.uri(),
          "COORDINATOR_PORT", Integer.toString(taken.getLocalPort()), "COORDINATOR_MANAGEMENT_PORT", "0",
          "COORDINATOR_TOKEN", "busy-port-token"));
      assertTrue(error.contains("port " + taken.getLocalPort()) && error.contains("COORDINATOR_PORT"), error);
    }
  }

  @Test
  void anUnreachableRedisIsOneLineNamingItTheVariableAndWhy(@TempDir Path dir) throws Exception {
    int closed;
    try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
      closed = s.getLocalPort(); // nothing listens there once closed
    }
    Path log = dir.resolve("unreachable.log");
    String line = failedStart(log, java.util.Map.of("REDIS_URL", "redis://:s3cret-password@127.0.0.1:" + closed,
        "COORDINATOR_PORT", "0", "COORDINATOR_TOKEN", "unreachable-redis-token"));
    assertTrue(line.contains("127.0.0.1:" + closed) && line.contains("REDIS_URL") && line.contains("refused"), line);
    assertTrue(!line.contains("<unresolved>") && !line.contains("s3cret"), line);
    assertTrue(lines(log).stream().noneMatch(l -> l.contains("s3cret")), "no password anywhere: " + lines(log));
  }

  /** Runs Main with {@code env}; asserts it exits 1 with one "did not start" line and no stack trace; returns that line. */
  private static String failedStart(Path log, java.util.Map<String, String> env) throws Exception {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    ProcessBuilder pb = new ProcessBuilder(java, QUICK_START, "-cp", System.getProperty("java.class.path"),
        "io.retrybudget.coordinator.Main").redirectErrorStream(true).redirectOutput(log.toFile());
    pb.environment().putAll(env);
    Process p = pb.start();
    try {
      assertTrue(p.waitFor(30, TimeUnit.SECONDS), "exits");
      assertEquals(1, p.exitValue());
      List<String> errors = lines(log).stream().filter(l -> l.startsWith("coordinator did not start")).toList();
      assertEquals(1, errors.size(), lines(log).toString());
      assertTrue(lines(log).stream().noneMatch(l -> l.startsWith("\tat ")), "no stack trace: " + lines(log));
      return errors.get(0);
    } finally {
      p.destroyForcibly();
    }
  }

  private static List<String> lines(Path log) {
    try {
      return Files.readAllLines(log);
    } catch (java.io.IOException e) {
      return List.of();
    }
  }
}
