package io.retrybudget.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A real Sentinel deployment of separate processes: a master, replicas of it, and Sentinels
 * (quorum 1) watching it under the name {@link #MASTER}, with a failure noticed after
 * {@link #DOWN_AFTER_MS}. Tests kill the master (or ask for a failover) and watch clients follow.
 */
public final class RedisSentinelProcesses implements AutoCloseable {
  public static final String MASTER = "budgets";
  public static final int DOWN_AFTER_MS = 1_000;
  /**
   * Redis's default 5 s before a full sync, kept here (RedisServerProcess starts one at once): with
   * it at once, SentinelBudgetTest's operator failover came 0.1 s after the failover of the test
   * before, and then the new master's client connections were closed (a harness call to it reset,
   * the demoted master's PSYNC to it unanswered) in 2 of 3 module runs at a load of 30.
   */
  private static final List<String> SYNC_DELAY = List.of("--repl-diskless-sync-delay", "5");

  private final RedisServerProcess master;
  private final List<RedisServerProcess> replicas = new ArrayList<>();
  private final List<Sentinel> sentinels = new ArrayList<>();

  private RedisSentinelProcesses(RedisServerProcess master) {
    this.master = master;
  }

  /** A master, one replica and {@code sentinels} Sentinels, the replica in sync before this returns. */
  public static RedisSentinelProcesses start(int sentinels) {
    return start(sentinels, 1);
  }

  /** A master, {@code replicas} replicas and {@code sentinels} Sentinels, every replica in sync and known to every Sentinel. */
  public static RedisSentinelProcesses start(int sentinels, int replicas) {
    RedisServerProcess master = RedisServerProcess.startOnFreePort(SYNC_DELAY);
    RedisSentinelProcesses d = new RedisSentinelProcesses(master);
    try {
      for (int i = 0; i < replicas; i++) {
        List<String> args = new ArrayList<>(SYNC_DELAY);
        args.addAll(List.of("--replicaof", "127.0.0.1", Integer.toString(master.port())));
        d.replicas.add(RedisServerProcess.startOnFreePort(args));
      }
      Eventually.await("the replicas in sync", java.time.Duration.ofSeconds(20), () -> d.replicas.stream()
          .allMatch(r -> String.valueOf(r.call("INFO", "replication")).contains("master_link_status:up")));
      for (int i = 0; i < sentinels; i++) {
        d.sentinels.add(Sentinel.start(master.port()));
      }
      Eventually.await("every Sentinel sees every replica", java.time.Duration.ofSeconds(30),
          () -> d.sentinels.stream().allMatch(s -> {
            String known = String.valueOf(s.call("SENTINEL", "REPLICAS", MASTER));
            return d.replicas.stream().allMatch(r -> known.contains(Integer.toString(r.port())));
          }));
      return d;
    } catch (RuntimeException e) {
      d.close();
      throw e;
    }
  }

  public RedisServerProcess master() {
    return master;
  }

  /** The first replica. */
  public RedisServerProcess replica() {
    return replicas.get(0);
  }

  public List<RedisServerProcess> replicas() {
    return List.copyOf(replicas);
  }

  /** The process serving {@code port}: the master or one of the replicas. */
  public RedisServerProcess byPort(int port) {
    if (master.port() == port) {
      return master;
    }
    return replicas.stream().filter(r -> r.port() == port).findFirst()
        .orElseThrow(() -> new IllegalArgumentException("no process of this deployment on port " + port));
  }

  /** {@code redis-sentinel://127.0.0.1:p1,127.0.0.1:p2#budgets}. */
  public String uri() {
    List<String> hosts = new ArrayList<>();
    for (Sentinel s : sentinels) {
      hosts.add("127.0.0.1:" + s.port);
    }
    return "redis-sentinel://" + String.join(",", hosts) + "#" + MASTER;
  }

  /** The master's port as the first Sentinel reports it now. */
  public int masterPortNow() {
    Object reply = sentinels.get(0).call("SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER);
    return Integer.parseInt(String.valueOf(((List<?>) reply).get(1)));
  }

  /** Asks the first Sentinel for a failover now (the master is demoted while it still runs). */
  public void failover() {
    sentinels.get(0).call("SENTINEL", "FAILOVER", MASTER);
  }

  @Override
  public void close() {
    for (Sentinel s : sentinels) {
      s.close();
    }
    for (RedisServerProcess r : replicas) {
      r.close();
    }
    master.close();
  }

  /** One redis-server in Sentinel mode, with its config file in a directory of its own. */
  static final class Sentinel implements AutoCloseable {
    final int port;
    final Process process;
    final Path dir;

    private Sentinel(int port, Process process, Path dir) {
      this.port = port;
      this.process = process;
      this.dir = dir;
    }

    static Sentinel start(int masterPort) {
      for (int attempt = 0; ; attempt++) {
        int port = RedisServerProcess.freePort();
        try {
          Path dir = Files.createTempDirectory("sentinel-" + port + "-");
          Path conf = dir.resolve("sentinel.conf");
          Files.writeString(conf, String.join("\n",
              "port " + port, "bind 127.0.0.1", "protected-mode no", "dir " + dir, "loglevel warning",
              "sentinel monitor " + MASTER + " 127.0.0.1 " + masterPort + " 1",
              "sentinel down-after-milliseconds " + MASTER + " " + DOWN_AFTER_MS,
              "sentinel failover-timeout " + MASTER + " 10000",
              "sentinel parallel-syncs " + MASTER + " 1", ""));
          Process p = new ProcessBuilder(RedisBinary.path().toString(), conf.toString(), "--sentinel")
              .redirectErrorStream(true).redirectOutput(dir.resolve("sentinel.log").toFile()).start();
          Sentinel s = new Sentinel(port, p, dir);
          if (s.awaitPing()) {
            return s;
          }
          s.close();
          if (attempt >= 4) {
            throw new IllegalStateException("Sentinel did not start: " + Files.readString(dir.resolve("sentinel.log")));
          }
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
      }
    }

    private boolean awaitPing() {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (System.nanoTime() < deadline && process.isAlive()) {
        try (RespClient c = new RespClient("127.0.0.1", port, 500)) {
          // the Sentinel we started, not another process that took the port: it knows our master's name
          if (String.valueOf(c.call("SENTINEL", "MASTERS")).contains(MASTER)) {
            return true;
          }
        } catch (IOException e) {
          // not yet
        }
        RedisServerProcess.sleepQuietly(20);
      }
      return false;
    }

    Object call(String... args) {
      try (RespClient c = new RespClient("127.0.0.1", port, 5000)) {
        return c.call(args);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    @Override
    public void close() {
      process.destroyForcibly();
      try {
        process.waitFor(10, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
