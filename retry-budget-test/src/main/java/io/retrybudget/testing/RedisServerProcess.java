package io.retrybudget.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A real redis-server process on a loopback port, which tests can kill, pause (SIGSTOP), resume
 * (SIGCONT) and restart on the same port with an empty data set and script cache.
 */
public final class RedisServerProcess implements AutoCloseable {
  private final int port;
  private final Path dir;
  private final List<String> extraArgs;
  private Process process;

  private RedisServerProcess(int port, List<String> extraArgs) {
    this.port = port;
    this.extraArgs = extraArgs;
    try {
      this.dir = Files.createTempDirectory("redis-" + port + "-");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  public static RedisServerProcess start() {
    return startOnFreePort(List.of());
  }

  /**
   * Starts on a free port, trying another when the one picked was taken before redis-server bound
   * it (another build on the machine, such as a parallel module, may pick the same free port in
   * that moment).
   */
  public static RedisServerProcess startOnFreePort(List<String> extraArgs) {
    PortTakenException last = null;
    for (int attempt = 0; attempt < 5; attempt++) {
      try {
        return start(freePort(), extraArgs);
      } catch (PortTakenException e) {
        last = e;
      }
    }
    throw last;
  }

  /** The port was bound by another process (a different redis-server answered, or the bind failed). */
  public static final class PortTakenException extends IllegalStateException {
    PortTakenException(String message) {
      super(message);
    }
  }

  public static RedisServerProcess start(int port, List<String> extraArgs) {
    RedisServerProcess server = new RedisServerProcess(port, extraArgs);
    server.launch();
    return server;
  }

  public int port() {
    return port;
  }

  public String uri() {
    return "redis://127.0.0.1:" + port;
  }

  public long pid() {
    return process.pid();
  }

  public boolean isAlive() {
    return process != null && process.isAlive();
  }

  private synchronized void launch() {
    List<String> cmd = new ArrayList<>(List.of(RedisBinary.path().toString(),
        "--port", Integer.toString(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
        "--protected-mode", "no", "--dir", dir.toString(), "--loglevel", "warning",
        // a replica's full sync starts at once: Redis 7's default diskless sync first waits 5 s for
        // more replicas to join it, which made every Cluster or Sentinel with replicas 5 s slower to
        // form, and every replica restarted after a failover 5 s slower to catch up
        "--repl-diskless-sync-delay", "0"));
    cmd.addAll(extraArgs);
    try {
      process = new ProcessBuilder(cmd)
          .redirectErrorStream(true)
          .redirectOutput(dir.resolve("redis.log").toFile())
          .start();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start " + cmd, e);
    }
    awaitPing();
    checkItIsOurs();
  }

  /**
   * The server answering on the port is this process, not another one that took the port between
   * {@link #freePort()} and the bind: a test must never talk to someone else's Redis.
   */
  private void checkItIsOurs() {
    if (extraArgs.contains("--requirepass")) {
      return; // needs the password; the bind failure check below still applies
    }
    Object info = call("INFO", "server");
    String expected = "process_id:" + process.pid();
    if (!String.valueOf(info).contains(expected)) {
      process.destroyForcibly();
      throw new PortTakenException("port " + port + " is served by another redis-server (" + expected
          + " not in its INFO)");
    }
  }

  private void awaitPing() {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    IOException last = null;
    while (System.nanoTime() < deadline) {
      if (!process.isAlive()) {
        String log = log();
        if (log.contains("Address already in use")) {
          throw new PortTakenException("port " + port + " taken: " + log);
        }
        throw new IllegalStateException("redis-server exited: " + log);
      }
      try (RespClient c = new RespClient("127.0.0.1", port, 500)) {
        if ("PONG".equals(c.call("PING"))) {
          return;
        }
      } catch (IOException e) {
        if (String.valueOf(e.getMessage()).contains("NOAUTH")) {
          return; // up, and it wants a password (--requirepass)
        }
        last = e;
      }
      sleepQuietly(20);
    }
    throw new IllegalStateException("redis-server did not answer on port " + port + ": " + last + " " + log());
  }

  /** Sends one admin command with the harness's own client. */
  public Object call(String... args) {
    try (RespClient c = new RespClient("127.0.0.1", port, 5000)) {
      return c.call(args);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** SIGKILL: the process is gone, connections drop. */
  public synchronized void kill() {
    if (process != null && process.isAlive()) {
      process.destroyForcibly();
      try {
        process.waitFor(10, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** SIGSTOP: connections stay open, nothing is answered. */
  public void pause() {
    signal("-STOP");
  }

  /** SIGCONT after {@link #pause()}. */
  public void resume() {
    signal("-CONT");
  }

  /** Kills (if alive) and starts again on the same port: empty data, empty script cache. */
  public synchronized void restart() {
    kill();
    launch();
  }

  private void signal(String sig) {
    try {
      Process p = new ProcessBuilder("kill", sig, Long.toString(process.pid())).inheritIO().start();
      if (!p.waitFor(5, TimeUnit.SECONDS) || p.exitValue() != 0) {
        throw new IllegalStateException("kill " + sig + " failed");
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private String log() {
    try {
      return Files.readString(dir.resolve("redis.log"));
    } catch (IOException e) {
      return "(no log)";
    }
  }

  @Override
  public void close() {
    if (process != null) {
      resume0();
      kill();
    }
  }

  private void resume0() {
    try {
      if (process.isAlive()) {
        signal("-CONT");
      }
    } catch (RuntimeException ignored) {
      // best effort before the kill
    }
  }

  /** A free loopback port; below 55535 so a Cluster bus port (port + 10000) is valid too. */
  public static int freePort() {
    for (int i = 0; i < 100; i++) {
      try (ServerSocket s = new ServerSocket(0)) {
        int p = s.getLocalPort();
        if (p < 55535) {
          try (ServerSocket bus = new ServerSocket(p + 10000)) {
            return p;
          } catch (IOException busTaken) {
            // try another
          }
        }
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
    throw new IllegalStateException("no free port found");
  }

  static void sleepQuietly(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
