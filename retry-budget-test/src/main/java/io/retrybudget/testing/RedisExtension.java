package io.retrybudget.testing;

import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * JUnit 5 extension: a real Redis per test class. Standalone: {@code TEST_REDIS_URL} when set;
 * else a process of {@link RedisBinary} on a free loopback port; else, where no binary fits the
 * platform (or {@code REDIS_TEST_BACKEND=docker}) and a Docker engine runs, a Testcontainers Redis.
 * Fault injection needs the process (other tests skip it). Cluster: a real 3-master Redis Cluster
 * of separate processes.
 *
 * <pre>{@code @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();}</pre>
 */
public final class RedisExtension implements BeforeAllCallback, AfterAllCallback {
  private final boolean cluster;
  private final int replicasPerMaster;
  private RedisServerProcess server;
  private RedisClusterProcesses clusterProcesses;
  private String externalUri;
  private RedisContainer container;

  private RedisExtension(boolean cluster, int replicasPerMaster) {
    this.cluster = cluster;
    this.replicasPerMaster = replicasPerMaster;
  }

  public static RedisExtension standalone() {
    return new RedisExtension(false, 0);
  }

  public static RedisExtension cluster() {
    return new RedisExtension(true, 0);
  }

  /** A 3-master Cluster where every master has one replica that takes over when it dies. */
  public static RedisExtension clusterWithReplicas() {
    return new RedisExtension(true, 1);
  }

  @Override
  public void beforeAll(ExtensionContext context) {
    if (cluster) {
      clusterProcesses = RedisClusterProcesses.start(3, replicasPerMaster);
      return;
    }
    String external = System.getenv("TEST_REDIS_URL");
    if (external != null && !external.isBlank()) {
      externalUri = external;
    } else if (RedisBinary.available()) {
      server = RedisServerProcess.start();
    } else if (RedisContainer.dockerAvailable()) {
      container = RedisContainer.start();
      externalUri = container.uri();
    } else {
      throw new IllegalStateException("no Redis for the tests: no redis-server on PATH, no embedded binary for "
          + System.getProperty("os.name") + "/" + System.getProperty("os.arch") + ", no Docker engine; set TEST_REDIS_URL");
    }
  }

  @Override
  public void afterAll(ExtensionContext context) {
    if (server != null) {
      server.close();
    }
    if (container != null) {
      container.close();
    }
    if (clusterProcesses != null) {
      clusterProcesses.close();
    }
  }

  public boolean isCluster() {
    return cluster;
  }

  public RedisConnectionOptions.Builder connectionOptions() {
    if (cluster) {
      return RedisConnectionOptions.cluster(clusterProcesses.nodes());
    }
    return RedisConnectionOptions.standalone(uri());
  }

  public String uri() {
    if (cluster) {
      throw new IllegalStateException("a cluster has no single URI; use nodes()");
    }
    return externalUri != null ? externalUri : server.uri();
  }

  public List<String> nodes() {
    return clusterProcesses.nodes();
  }

  /** The process to kill, pause or restart; skips the test when Redis is external. */
  public RedisServerProcess server() {
    Assumptions.assumeTrue(server != null, "fault injection needs a Redis started by the harness");
    return server;
  }

  /** The process serving {@code key}: the server, or the Cluster master owning its slot. */
  public RedisServerProcess serverFor(String key) {
    return cluster ? clusterProcesses.masterFor(key) : server();
  }

  public RedisClusterProcesses clusterProcesses() {
    return clusterProcesses;
  }

  /** Empties every node. */
  public void flushAll() {
    if (cluster) {
      List<RedisServerProcess> all = new java.util.ArrayList<>(clusterProcesses.masters());
      all.addAll(clusterProcesses.replicas());
      for (RedisServerProcess m : all) {
        if (m.isAlive() && String.valueOf(m.call("ROLE")).startsWith("[master")) {
          m.call("FLUSHALL");
        }
      }
    } else if (server != null) {
      server.call("FLUSHALL");
    }
  }

  /** SCRIPT FLUSH on every node, as after a restart or failover. */
  public void flushScripts() {
    if (cluster) {
      for (RedisServerProcess m : clusterProcesses.masters()) {
        m.call("SCRIPT", "FLUSH");
      }
    } else {
      server().call("SCRIPT", "FLUSH");
    }
  }

  /** Sum of calls of one command (e.g. "evalsha") from INFO commandstats over every node. */
  public long commandCalls(String command) {
    long total = 0;
    List<RedisServerProcess> nodes = cluster ? clusterProcesses.masters() : List.of(server());
    for (RedisServerProcess n : nodes) {
      total += CommandStats.calls(String.valueOf(n.call("INFO", "commandstats")), command);
    }
    return total;
  }
}
