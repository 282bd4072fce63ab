package io.retrybudget.testing;

import io.retrybudget.localredis.EmbeddedRedis;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * Finds a redis-server binary: {@code REDIS_SERVER_BINARY} (a path, or {@code embedded}), else
 * {@code redis-server} on PATH, else this platform's Redis 6.2 binary shipped in
 * com.github.codemonstur:embedded-redis ({@link EmbeddedRedis}: Linux x86-64, arm64 and x86, macOS
 * x86-64 and arm64), so tests pass with only a JDK and Maven.
 */
public final class RedisBinary {
  private static volatile Path resolved;

  private RedisBinary() {}

  public static synchronized Path path() {
    if (resolved == null) {
      resolved = resolve();
    }
    return resolved;
  }

  /** The version the binary reports, e.g. "7.0.15". */
  public static String version() {
    try {
      Process p = new ProcessBuilder(path().toString(), "--version").redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes());
      p.waitFor(5, TimeUnit.SECONDS);
      int v = out.indexOf("v=");
      return v < 0 ? out.trim() : out.substring(v + 2).split("\\s")[0];
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /**
   * Whether a binary can be had without Docker: an override, one on PATH, or the embedded one for
   * this platform. {@code REDIS_TEST_BACKEND=docker} says no, to force Testcontainers.
   */
  public static boolean available() {
    if ("docker".equals(System.getenv("REDIS_TEST_BACKEND"))) {
      return false;
    }
    try {
      path();
      return true;
    } catch (IllegalStateException noBinary) {
      return false;
    }
  }

  private static Path resolve() {
    String override = System.getenv("REDIS_SERVER_BINARY");
    if (override != null && !override.isBlank()) {
      return "embedded".equals(override) ? extractEmbedded() : Path.of(override);
    }
    String pathEnv = System.getenv().getOrDefault("PATH", "");
    for (String dir : pathEnv.split(java.io.File.pathSeparator)) {
      Path candidate = Path.of(dir, "redis-server");
      if (Files.isExecutable(candidate)) {
        return candidate;
      }
    }
    return extractEmbedded();
  }

  private static Path extractEmbedded() {
    try {
      Path dir = Files.createTempDirectory("embedded-redis");
      Path binary = EmbeddedRedis.extract(dir, "TEST_REDIS_URL");
      binary.toFile().deleteOnExit();
      dir.toFile().deleteOnExit();
      return binary;
    } catch (IOException e) {
      throw new IllegalStateException(e.getMessage(), e);
    }
  }
}
