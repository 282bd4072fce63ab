package io.retrybudget.testing;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A real Redis Cluster of separate processes on loopback: masters built with CLUSTER ADDSLOTS and
 * CLUSTER MEET (no redis-cli needed), optionally each with replicas (CLUSTER REPLICATE) that take
 * over when their master dies. cluster-node-timeout: 5000 ms, a value a production operator would
 * choose (client-sdk/README.md), or the system property {@code redis.cluster.nodeTimeoutMs}.
 */
public final class RedisClusterProcesses implements AutoCloseable {
  public static final int SLOTS = 16384;
  public static final int NODE_TIMEOUT_MS = Integer.getInteger("redis.cluster.nodeTimeoutMs", 5000);
  private final List<RedisServerProcess> masters = new ArrayList<>();
  private final List<RedisServerProcess> replicas = new ArrayList<>();

  private RedisClusterProcesses() {}

  private static final class Version {
    static final boolean IS_6 = RedisBinary.version().startsWith("6.");
  }

  public static RedisClusterProcesses start(int masterCount) {
    return start(masterCount, 0);
  }

  /** {@code masterCount} masters, each with {@code replicasPerMaster} replicas. */
  public static RedisClusterProcesses start(int masterCount, int replicasPerMaster) {
    RedisClusterProcesses cluster = new RedisClusterProcesses();
    try {
      for (int i = 0; i < masterCount; i++) {
        cluster.masters.add(startNode());
      }
      for (int i = 0; i < masterCount * replicasPerMaster; i++) {
        cluster.replicas.add(startNode());
      }
      cluster.form(replicasPerMaster);
      return cluster;
    } catch (RuntimeException e) {
      cluster.close();
      throw e;
    }
  }

  private static RedisServerProcess startNode() {
    List<String> args = new ArrayList<>(List.of(
        "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
        "--cluster-node-timeout", Integer.toString(NODE_TIMEOUT_MS)));
    if (!Version.IS_6) {
      args.addAll(List.of("--enable-debug-command", "local")); // DEBUG POPULATE in tests; Redis 7 refuses it by default
    }
    return RedisServerProcess.startOnFreePort(args);
  }

  private void form(int replicasPerMaster) {
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
    // each replica meets its master and is made its replica first: the nodes that learn of it
    // afterwards learn its role in the same handshake. Made one after the whole Cluster had met, a
    // replica stayed a master without slots to the other nodes for up to cluster-node-timeout / 2
    // (until they next pinged it), and a test reading CLUSTER NODES after a kill took that for the
    // replica's promotion
    Map<String, String> masterOf = new HashMap<>(); // replica's node id -> its master's
    for (int r = 0; r < replicas.size(); r++) {
      RedisServerProcess master = masters.get(r / replicasPerMaster);
      replicas.get(r).call("CLUSTER", "MEET", "127.0.0.1", Integer.toString(master.port()));
    }
    for (int r = 0; r < replicas.size(); r++) {
      RedisServerProcess master = masters.get(r / replicasPerMaster);
      String masterId = String.valueOf(master.call("CLUSTER", "MYID"));
      RedisServerProcess replica = replicas.get(r);
      await(() -> String.valueOf(replica.call("CLUSTER", "NODES")).contains(masterId), "replica sees its master");
      replica.call("CLUSTER", "REPLICATE", masterId);
      masterOf.put(String.valueOf(replica.call("CLUSTER", "MYID")), masterId);
    }
    List<RedisServerProcess> all = new ArrayList<>(masters);
    all.addAll(replicas);
    for (int i = 1; i < all.size(); i++) {
      all.get(0).call("CLUSTER", "MEET", "127.0.0.1", Integer.toString(all.get(i).port()));
    }
    await(() -> allAgree(all, "cluster_known_nodes:" + all.size()), "every node knows every other");
    await(() -> allAgree(all, "cluster_state:ok") && replicasInSync() && rolesKnownEverywhere(all, masterOf),
        "cluster_state:ok, the replicas in sync, and every node knowing them as replicas");
  }

  private static boolean rolesKnownEverywhere(List<RedisServerProcess> nodes, Map<String, String> masterOf) {
    for (RedisServerProcess n : nodes) {
      int known = 0;
      for (String line : String.valueOf(n.call("CLUSTER", "NODES")).split("\r?\n")) {
        String[] f = line.trim().split(" ");
        if (f.length > 3 && masterOf.containsKey(f[0])) {
          if (!List.of(f[2].split(",")).contains("slave") || !f[3].equals(masterOf.get(f[0]))) {
            return false;
          }
          known++;
        }
      }
      if (known != masterOf.size()) {
        return false;
      }
    }
    return true;
  }

  private boolean replicasInSync() {
    for (RedisServerProcess r : replicas) {
      if (!String.valueOf(r.call("INFO", "replication")).contains("master_link_status:up")) {
        return false;
      }
    }
    return true;
  }

  private static boolean allAgree(List<RedisServerProcess> nodes, String text) {
    for (RedisServerProcess m : nodes) {
      String info = String.valueOf(m.call("CLUSTER", "INFO"));
      if (!info.contains("cluster_state:ok") || !info.contains(text)) {
        return false;
      }
    }
    return true;
  }

  private static void await(java.util.function.BooleanSupplier condition, String what) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (System.nanoTime() < deadline) {
      if (condition.getAsBoolean()) {
        return;
      }
      RedisServerProcess.sleepQuietly(50);
    }
    throw new IllegalStateException("cluster not formed: " + what);
  }

  /** The processes started as masters (after a failover one of them may be dead or a replica). */
  public List<RedisServerProcess> masters() {
    return masters;
  }

  public List<RedisServerProcess> replicas() {
    return replicas;
  }

  /** host:port of every process started as a master, as REDIS_CLUSTER_NODES takes them. */
  public List<String> nodes() {
    List<String> nodes = new ArrayList<>();
    for (RedisServerProcess m : masters) {
      nodes.add("127.0.0.1:" + m.port());
    }
    return nodes;
  }

  /** The process that serves a key's slot now, asked of a live node (CLUSTER SLOTS). */
  public RedisServerProcess masterFor(String key) {
    List<RedisServerProcess> all = new ArrayList<>(masters);
    all.addAll(replicas);
    for (RedisServerProcess node : all) {
      if (!node.isAlive()) {
        continue;
      }
      long slot = (Long) node.call("CLUSTER", "KEYSLOT", key);
      for (Object range : (List<?>) node.call("CLUSTER", "SLOTS")) {
        List<?> r = (List<?>) range;
        if ((Long) r.get(0) <= slot && slot <= (Long) r.get(1)) {
          long port = (Long) ((List<?>) r.get(2)).get(1);
          for (RedisServerProcess p : all) {
            if (p.port() == port) {
              return p;
            }
          }
        }
      }
    }
    throw new IllegalStateException("no live node knows who serves " + key);
  }

  /** A replica of the given master (by the replication it was set up with). */
  public RedisServerProcess replicaOf(RedisServerProcess master) {
    String id = String.valueOf(master.call("CLUSTER", "MYID"));
    for (RedisServerProcess r : replicas) {
      if (r.isAlive() && String.valueOf(r.call("CLUSTER", "NODES")).contains("myself,slave " + id)) {
        return r;
      }
    }
    throw new IllegalStateException("no live replica of port " + master.port());
  }

  /** True when the replica has every write its master made so far (equal replication offsets). */
  public static boolean caughtUp(RedisServerProcess master, RedisServerProcess replica) {
    return offset(master) == offset(replica) && offset(master) > 0;
  }

  private static long offset(RedisServerProcess node) {
    for (String line : String.valueOf(node.call("INFO", "replication")).split("\r?\n")) {
      if (line.startsWith("master_repl_offset:")) {
        return Long.parseLong(line.substring("master_repl_offset:".length()).trim());
      }
    }
    return -1;
  }

  @Override
  public void close() {
    for (RedisServerProcess m : masters) {
      m.close();
    }
    for (RedisServerProcess r : replicas) {
      r.close();
    }
  }
}
