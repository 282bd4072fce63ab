package io.retrybudget.coordinator;

import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisServerProcess;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A relay as an operator runs it: a child JVM running the coordinator's {@link Main} with
 * {@code COORDINATOR_MODE=relay}, its output in a log file. {@link #kill()} is SIGKILL
 * ({@link Process#destroyForcibly()}), {@link #terminate()} SIGTERM.
 */
final class RelayProcess implements AutoCloseable {
  private final Process process;
  private final Path log;
  private final int port;

  private RelayProcess(Process process, Path log, int port) {
    this.process = process;
    this.log = log;
    this.port = port;
  }

  /**
   * Starts a relay on {@code port} (0: a free one) drawing from {@code redisUri}, with {@code extra}
   * variables; returns once it logged that it listens (a JVM start: seconds, 60 s at most).
   */
  static RelayProcess start(Path dir, String name, String redisUri, int port, Map<String, String> extra)
      throws IOException {
    int chosen = port == 0 ? RedisServerProcess.freePort() : port;
    Path log = dir.resolve(name + ".log");
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    // a small heap and one compiler thread: a relay needs little, and the test machine has 2 cores
    ProcessBuilder pb = new ProcessBuilder(java, "-Xmx128m", "-XX:TieredStopAtLevel=1", "-XX:CICompilerCount=1",
        "-XX:+UseSerialGC", "-cp", System.getProperty("java.class.path"), "io.retrybudget.coordinator.Main")
        .redirectErrorStream(true).redirectOutput(log.toFile());
    pb.environment().keySet().removeIf(k -> k.startsWith("COORDINATOR_") || k.startsWith("REDIS_"));
    pb.environment().put("COORDINATOR_MODE", "relay");
    pb.environment().put("REDIS_URL", redisUri);
    pb.environment().put("COORDINATOR_RELAY_HOST", "127.0.0.1");
    pb.environment().put("COORDINATOR_RELAY_PORT", Integer.toString(chosen));
    pb.environment().putAll(extra);
    RelayProcess relay = new RelayProcess(pb.start(), log, chosen);
    try {
      Eventually.await("relay " + name + " listening; its output: " + relay.lines(), Duration.ofSeconds(60),
          () -> relay.lines().stream().anyMatch(l -> l.contains("relay listening on"))
              || !relay.process.isAlive());
      if (!relay.process.isAlive()) {
        throw new IOException("relay " + name + " exited " + relay.process.exitValue() + ": " + relay.lines());
      }
    } catch (IOException | RuntimeException | Error e) {
      relay.close();
      throw e;
    }
    return relay;
  }

  int port() {
    return port;
  }

  String uri() {
    return "redis://127.0.0.1:" + port;
  }

  Process process() {
    return process;
  }

  /** The id it calls Redis with, from its start line. */
  String clientId() {
    return lines().stream().filter(l -> l.contains("relay listening on")).findFirst()
        .map(l -> l.substring(l.lastIndexOf(" as ") + 4).trim()).orElseThrow();
  }

  /** SIGKILL: no shutdown hook runs, nothing is flushed. */
  void kill() throws InterruptedException {
    process.destroyForcibly();
    process.waitFor(30, TimeUnit.SECONDS);
  }

  /** SIGTERM; the exit code once it exited (-1 if it did not within 30 s). */
  int terminate() throws InterruptedException {
    process.destroy();
    return process.waitFor(30, TimeUnit.SECONDS) ? process.exitValue() : -1;
  }

  List<String> lines() {
    try {
      return Files.readAllLines(log);
    } catch (IOException e) {
      return List.of();
    }
  }

  @Override
  public void close() {
    process.destroyForcibly();
  }
}
