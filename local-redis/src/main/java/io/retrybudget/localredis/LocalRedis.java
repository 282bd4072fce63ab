package io.retrybudget.localredis;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * The Redis the coordinator and server-kit's examples start and own when no Redis is configured:
 * {@code redis-server} from PATH, else this platform's binary shipped in
 * com.github.codemonstur:embedded-redis ({@link EmbeddedRedis}), on a free loopback port, without persistence; stopped and
 * its folder deleted on {@link #close()}. For trying the product on one machine, not for
 * production. In its own module so that only the applications carry embedded-redis, never the SDK.
 */
public final class LocalRedis implements AutoCloseable {
  private final Process process;
  private final int port;
  private final Path dir;
  private final String binary;

  private LocalRedis(Process process, int port, Path dir, String binary) {
    this.process = process;
    this.port = port;
    this.dir = dir;
    this.binary = binary;
  }

  /** Starts one in a fresh temporary folder (deleted on {@link #close()}). */
  public static LocalRedis start() throws IOException {
    Path dir = Files.createTempDirectory("retry-budget-redis");
    Path binary = findOnPath();
    if (binary == null) {
      binary = EmbeddedRedis.extract(dir, "REDIS_URL");
    }
    int port;
    try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort();
    }
    Process p = new ProcessBuilder(binary.toString(), "--port", Integer.toString(port), "--bind", "127.0.0.1",
        "--save", "", "--appendonly", "no", "--dir", dir.toString(), "--loglevel", "warning")
        .redirectErrorStream(true).redirectOutput(dir.resolve("redis.log").toFile()).start();
    LocalRedis redis = new LocalRedis(p, port, dir, binary.toString());
    redis.awaitListening();
    return redis;
  }

  public String uri() {
    return "redis://127.0.0.1:" + port;
  }

  public int port() {
    return port;
  }

  /** Its temporary folder (tests). */
  Path folder() {
    return dir;
  }

  /** The redis-server that runs: the one from PATH, or the bundled one extracted. */
  public String binary() {
    return binary;
  }

  private void awaitListening() throws IOException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (System.nanoTime() < deadline) {
      if (!process.isAlive()) {
        throw new IOException("local redis-server exited: " + Files.readString(dir.resolve("redis.log")));
      }
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress("127.0.0.1", port), 200);
        return;
      } catch (IOException notYet) {
        try {
          TimeUnit.MILLISECONDS.sleep(20); // waiting for a process we started, not for a test
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IOException("interrupted while starting Redis", e);
        }
      }
    }
    close();
    throw new IOException("local redis-server did not listen on port " + port);
  }

  private static Path findOnPath() {
    for (String d : System.getenv().getOrDefault("PATH", "").split(java.io.File.pathSeparator)) {
      Path candidate = Path.of(d, "redis-server");
      if (Files.isExecutable(candidate)) {
        return candidate;
      }
    }
    return null;
  }

  @Override
  public void close() {
    process.destroy();
    try {
      if (!process.waitFor(5, TimeUnit.SECONDS)) {
        process.destroyForcibly();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      process.destroyForcibly();
    }
    try (var files = Files.list(dir)) {
      files.forEach(f -> f.toFile().delete());
      Files.deleteIfExists(dir);
    } catch (IOException | UncheckedIOException ignored) {
      // a temp folder left behind is harmless
    }
  }
}
