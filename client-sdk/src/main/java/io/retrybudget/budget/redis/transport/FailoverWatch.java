package io.retrybudget.budget.redis.transport;

import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.models.partitions.ClusterPartitionParser;
import io.lettuce.core.cluster.models.partitions.Partitions;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;
import io.netty.util.concurrent.EventExecutorGroup;
import io.netty.util.concurrent.ScheduledFuture;
import java.lang.System.Logger.Level;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;
import java.util.function.LongSupplier;

/**
 * Shortens the client's part of a Cluster failover. When the connection to a master that serves
 * slots cannot be re-established (Lettuce's reconnect failed: the node is gone, not slow), the master
 * is a suspect: every {@link #POLL_MILLIS} ms one {@code CLUSTER NODES} is asked of another master
 * over its open connection, and as soon as a suspect's slot is served by another node that is not
 * failed, Lettuce's partitions are refreshed once, so the slot's commands go to its new master
 * within one poll of its promotion. Lettuce's own triggers (adaptive refresh on reconnect attempts,
 * rate-limited, and the periodic refresh) stay as they are; this costs one small command per poll
 * while a suspect is watched, for at most {@link #WATCH_MILLIS} ms per suspect.
 *
 * <p>State (the suspects and the one pending poll) changes under one lock; polls run one at a time,
 * the next scheduled when the last one ends, and nothing runs after {@link #close()}.
 */
final class FailoverWatch implements AutoCloseable {
  static final long POLL_MILLIS = 200;
  static final long WATCH_MILLIS = 60_000;
  private static final System.Logger LOG = System.getLogger(FailoverWatch.class.getName());

  private final RedisClusterClient client;
  private final StatefulRedisClusterConnection<String, String> connection;
  private final EventExecutorGroup scheduler;
  private final LongSupplier nanoClock;
  private final Function<StatefulRedisConnection<String, String>, CompletableFuture<?>> onConnect;
  private final Object lock = new Object();
  /** node id -> the suspect (one of its slots, and when to stop watching it). */
  private final Map<String, Suspect> suspects = new LinkedHashMap<>();
  /** Suspects watched for {@link #WATCH_MILLIS} in vain: not watched again until a connection to them opens. */
  private final java.util.Set<String> givenUp = new java.util.HashSet<>();
  private ScheduledFuture<?> pending;
  private boolean polling;
  private boolean closed;
  private int nextSource;

  private record Suspect(String nodeId, int slot, String host, int port, long until) {}

  FailoverWatch(RedisClusterClient client, StatefulRedisClusterConnection<String, String> connection,
      EventExecutorGroup scheduler, LongSupplier nanoClock,
      Function<StatefulRedisConnection<String, String>, CompletableFuture<?>> onConnect) {
    this.client = client;
    this.onConnect = onConnect;
    this.connection = connection;
    this.scheduler = scheduler;
    this.nanoClock = nanoClock;
  }

  /** A long-lived connection's reconnect to {@code address} failed. */
  void reconnectFailed(SocketAddress address) {
    RedisClusterNode node = upstreamAt(address);
    if (node == null || node.getSlots().isEmpty()) {
      return;
    }
    synchronized (lock) {
      if (closed) {
        return;
      }
      if (suspects.containsKey(node.getNodeId()) || givenUp.contains(node.getNodeId())) {
        return; // watched already (every reconnect attempt fails while it is gone), or in vain
      }
      suspects.put(node.getNodeId(), new Suspect(node.getNodeId(), node.getSlots().get(0), node.getUri().getHost(),
          node.getUri().getPort(), nanoClock.getAsLong() + TimeUnit.MILLISECONDS.toNanos(WATCH_MILLIS)));
      LOG.log(Level.DEBUG, () -> "Cluster master " + node.getUri().getHost() + ":"
          + node.getUri().getPort() + " unreachable; watching for its replica's promotion");
      if (!polling && pending == null) {
        try {
          pending = scheduler.schedule(this::poll, 0, TimeUnit.MILLISECONDS);
        } catch (RuntimeException e) {
          suspects.clear(); // the executor shuts down with the client: nothing more to watch
        }
      }
    }
  }

  /** A connection to {@code address} opened: a suspect there is back (restarted, or never gone). */
  void connected(SocketAddress address) {
    if (!(address instanceof InetSocketAddress a)) {
      return;
    }
    synchronized (lock) {
      suspects.values().removeIf(s -> s.port() == a.getPort() && sameHost(s.host(), a));
      RedisClusterNode node = upstreamAt(address);
      if (node != null) {
        givenUp.remove(node.getNodeId());
      }
    }
  }

  boolean watching() {
    synchronized (lock) {
      return !suspects.isEmpty();
    }
  }

  private void poll() {
    RedisClusterNode source;
    synchronized (lock) {
      pending = null;
      long now = nanoClock.getAsLong();
      suspects.values().removeIf(s -> {
        boolean expired = now - s.until() > 0;
        if (expired) {
          givenUp.add(s.nodeId());
        }
        return expired;
      });
      if (closed || suspects.isEmpty()) {
        return;
      }
      source = pickSource();
      polling = true;
    }
    if (source == null) {
      finishPoll(List.of());
      return;
    }
    try {
      connection.getConnectionAsync(source.getNodeId())
          .thenCompose(n -> n.async().clusterNodes().toCompletableFuture())
          .orTimeout(Math.max(POLL_MILLIS, 500), TimeUnit.MILLISECONDS)
          .whenComplete((text, error) -> finishPoll(error == null ? promoted(text) : List.of()));
    } catch (RuntimeException e) {
      finishPoll(List.of());
    }
  }

  /**
   * The nodes that serve a suspect's slot in this view (another node, not failed): the suspects'
   * new masters; those suspects are dropped.
   */
  private List<RedisClusterNode> promoted(String clusterNodes) {
    Partitions view;
    try {
      view = ClusterPartitionParser.parse(clusterNodes);
    } catch (RuntimeException e) {
      return List.of();
    }
    List<RedisClusterNode> heirs = new ArrayList<>();
    synchronized (lock) {
      List<String> served = new ArrayList<>();
      for (Suspect s : suspects.values()) {
        RedisClusterNode owner = view.getPartitionBySlot(s.slot());
        if (owner != null && !owner.getNodeId().equals(s.nodeId()) && !owner.is(RedisClusterNode.NodeFlag.FAIL)
            && !owner.is(RedisClusterNode.NodeFlag.EVENTUAL_FAIL) && owner.getUri() != null) {
          served.add(s.nodeId());
          heirs.add(owner);
        }
      }
      for (String id : served) {
        suspects.remove(id);
      }
    }
    return heirs;
  }

  private void finishPoll(List<RedisClusterNode> heirs) {
    if (!heirs.isEmpty()) {
      LOG.log(Level.DEBUG, "a failed master's slots are served by another node: refreshing the partitions");
      try {
        // open the new master's connection (and its script cache) while the partitions are
        // refreshed, so the first commands routed to it do not find it still connecting
        for (RedisClusterNode heir : heirs) {
          connection.getConnectionAsync(heir.getUri().getHost(), heir.getUri().getPort())
              .thenCompose(n -> onConnect.apply(n))
              .exceptionally(e -> null);
        }
        client.refreshPartitionsAsync();
      } catch (RuntimeException e) {
        LOG.log(Level.DEBUG, "partition refresh failed; Lettuce's own triggers refresh later", e);
      }
    }
    synchronized (lock) {
      polling = false;
      if (!closed && !suspects.isEmpty() && pending == null) {
        try {
          pending = scheduler.schedule(this::poll, POLL_MILLIS, TimeUnit.MILLISECONDS);
        } catch (RuntimeException e) {
          // the executor shuts down with the client: nothing more to watch
          suspects.clear();
        }
      }
    }
  }

  /** A master that is not a suspect, round robin (called under the lock). */
  private RedisClusterNode pickSource() {
    List<RedisClusterNode> candidates = new ArrayList<>();
    for (RedisClusterNode n : client.getPartitions()) {
      if (n.is(RedisClusterNode.NodeFlag.UPSTREAM) && !suspects.containsKey(n.getNodeId())
          && !n.is(RedisClusterNode.NodeFlag.FAIL)) {
        candidates.add(n);
      }
    }
    if (candidates.isEmpty()) {
      return null;
    }
    nextSource = (nextSource + 1) % candidates.size();
    return candidates.get(nextSource);
  }

  private RedisClusterNode upstreamAt(SocketAddress address) {
    if (!(address instanceof InetSocketAddress a)) {
      return null;
    }
    try {
      for (RedisClusterNode n : client.getPartitions()) {
        if (n.is(RedisClusterNode.NodeFlag.UPSTREAM) && n.getUri().getPort() == a.getPort()
            && sameHost(n.getUri().getHost(), a)) {
          return n;
        }
      }
    } catch (RuntimeException e) {
      return null;
    }
    return null;
  }

  private static boolean sameHost(String host, InetSocketAddress a) {
    return host.equals(a.getHostString()) || (a.getAddress() != null && host.equals(a.getAddress().getHostAddress()));
  }

  @Override
  public void close() {
    synchronized (lock) {
      closed = true;
      suspects.clear();
      givenUp.clear();
      if (pending != null) {
        pending.cancel(false);
        pending = null;
      }
    }
  }
}
