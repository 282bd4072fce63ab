package io.retrybudget.testing;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A real Redis Cluster of several master processes on loopback (no replicas), built with CLUSTER
 * ADDSLOTS and CLUSTER MEET, so no redis-cli is needed.
 */
public final class RedisClusterProcesses implements AutoCloseable {
  public static final int SLOTS = 16384;
  private final List<RedisServerProcess> masters = new ArrayList<>();

  private RedisClusterProcesses() {}

  public static RedisClusterProcesses start(int masterCount) {
    RedisClusterProcesses cluster = new RedisClusterProcesses();
    try {
      for (int i = 0; i < masterCount; i++) {
        cluster.masters.add(RedisServerProcess.start(RedisServerProcess.freePort(), List.of(
            "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000")));
      }
      cluster.form();
      return cluster;
    } catch (RuntimeException e) {
      cluster.close();
      throw e;
    }
  }

  private void form() {
    int n = masters.size();
    for (int i = 0; i < n; i++) {
      int from = i * SLOTS / n;
      int to = (i + 1) * SLOTS / n;
      List<String> cmd = new ArrayList<>(List.of("CLUSTER", "ADDSLOTS"));
      for (int s = from; s < to; s++) {
        cmd.add(Integer.toString(s));
      }
      masters.get(i).call(cmd.toArray(new String[0]));
    }
    for (int i = 1; i < n; i++) {
      masters.get(0).call("CLUSTER", "MEET", "127.0.0.1", Integer.toString(masters.get(i).port()));
    }
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (System.nanoTime() < deadline) {
      if (allAgree(n)) {
        return;
      }
      RedisServerProcess.sleepQuietly(50);
    }
    throw new IllegalStateException("cluster did not reach cluster_state:ok");
  }

  private boolean allAgree(int n) {
    for (RedisServerProcess m : masters) {
      String info = String.valueOf(m.call("CLUSTER", "INFO"));
      if (!info.contains("cluster_state:ok") || !info.contains("cluster_known_nodes:" + n)) {
        return false;
      }
    }
    return true;
  }

  public List<RedisServerProcess> masters() {
    return masters;
  }

  /** host:port of every master, as REDIS_CLUSTER_NODES takes them. */
  public List<String> nodes() {
    List<String> nodes = new ArrayList<>();
    for (RedisServerProcess m : masters) {
      nodes.add("127.0.0.1:" + m.port());
    }
    return nodes;
  }

  /** The master that serves a key's slot. */
  public RedisServerProcess masterFor(String key) {
    long slot = (Long) masters.get(0).call("CLUSTER", "KEYSLOT", key);
    return masters.get((int) (slot * masters.size() / SLOTS));
  }

  @Override
  public void close() {
    for (RedisServerProcess m : masters) {
      m.close();
    }
  }
}
