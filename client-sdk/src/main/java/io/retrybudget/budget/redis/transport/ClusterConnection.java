package io.retrybudget.budget.redis.transport;

import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.resource.ClientResources;
import io.retrybudget.budget.redis.protocol.BudgetKeys;
import java.lang.System.Logger.Level;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.Comparator;
import java.util.List;
import java.util.SortedSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A Redis Cluster: one Lettuce Cluster connection routing by slot, its partitions refreshed on
 * Lettuce's adaptive triggers, periodically and by a {@link FailoverWatch} when a master is gone.
 */
final class ClusterConnection implements StoreConnection {
  private static final System.Logger LOG = System.getLogger(RedisBudgetStore.class.getName());

  private final RedisConnectionOptions options;
  private final RedisClusterClient client;
  private final StatefulRedisClusterConnection<String, String> connection;
  private final FailoverWatch failoverWatch;
  private final ClusterIndexListing listing;

  /** Connects now; throws Lettuce's {@code RedisConnectionException} (the client shut down) when it cannot. */
  ClusterConnection(ClientResources resources, RedisConnectionOptions options) {
    this.options = options;
    this.client = RedisClusterClient.create(resources, options.uris());
    try {
      ClusterClientOptions.Builder builder = ClusterClientOptions.builder();
      builder.topologyRefreshOptions(ClusterTopologyRefreshOptions.builder()
          .enableAllAdaptiveRefreshTriggers()
          .adaptiveRefreshTriggersTimeout(Duration.ofMillis(500))
          .refreshTriggersReconnectAttempts(2)
          .enablePeriodicRefresh(options.topologyRefreshPeriod())
          .closeStaleConnections(true)
          .build());
      client.setOptions(StoreConnection.sharedOptions(builder, options).build());
      BudgetKeys.clusterIndex(0); // builds the slot -> index key table now, not on a first permit call
      this.connection = client.connect(StringCodec.UTF8);
    } catch (RuntimeException e) {
      client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
      throw e;
    }
    this.failoverWatch = new FailoverWatch(client, connection, resources.eventExecutorGroup(), System::nanoTime,
        n -> ScriptCalls.loadAll(n.async()));
    this.listing = new ClusterIndexListing(connection, System::nanoTime);
  }

  @Override
  public RedisClusterAsyncCommands<String, String> commands() {
    return connection.async();
  }

  /**
   * Node connections open lazily, and while one opens REJECT_COMMANDS refuses its first commands:
   * open those of the masters now, each within the connect timeout, and go on without the ones that
   * cannot be reached (a failed node, a master listed as {@code master,fail} after a failover).
   */
  @Override
  public void warmUp() {
    List<CompletableFuture<?>> pending = new ArrayList<>();
    for (RedisClusterNode node : client.getPartitions()) {
      if (!node.is(RedisClusterNode.NodeFlag.UPSTREAM) || node.is(RedisClusterNode.NodeFlag.FAIL)
          || node.is(RedisClusterNode.NodeFlag.EVENTUAL_FAIL)) {
        continue;
      }
      pending.add(connection.getConnectionAsync(node.getUri().getHost(), node.getUri().getPort())
          .thenCompose(n -> ScriptCalls.loadAll(n.async()))
          .toCompletableFuture()
          .exceptionally(error -> {
            LOG.log(Level.DEBUG, () -> "Cluster node " + node.getUri().getHost() + ":"
                + node.getUri().getPort() + " not reachable now; its slots are served when it is", error);
            return null;
          }));
    }
    try {
      CompletableFuture.allOf(pending.toArray(new CompletableFuture<?>[0]))
          .get(options.connectTimeout().toMillis() + options.commandTimeout().toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (ExecutionException | TimeoutException e) {
      // the nodes that did not answer in time are opened when first used
    }
  }

  /** SCRIPT LOAD of every budget script on the master a connection just opened to (best effort). */
  @Override
  public void connectionActivated(SocketAddress address) {
    try {
      if (address instanceof InetSocketAddress a) {
        for (RedisClusterNode node : connection.getPartitions()) {
          if (node.is(RedisClusterNode.NodeFlag.UPSTREAM) && node.getUri().getPort() == a.getPort()
              && (node.getUri().getHost().equals(a.getHostString())
                  || (a.getAddress() != null && node.getUri().getHost().equals(a.getAddress().getHostAddress())))) {
            connection.getConnectionAsync(node.getUri().getHost(), node.getUri().getPort())
                .thenAccept(n -> ScriptCalls.loadAll(n.async()));
          }
        }
      }
    } catch (RuntimeException e) {
      LOG.log(Level.DEBUG, "script load on connect failed; NOSCRIPT loads them", e);
    }
    failoverWatch.connected(address);
  }

  @Override
  public void reconnectFailed(SocketAddress address) {
    failoverWatch.reconnectFailed(address);
  }

  @Override
  public CompletableFuture<SortedSet<String>> clusterIndexMembers(long minScore, CompletableFuture<?> giveUp,
      boolean byScript) {
    return listing.members(minScore, giveUp, byScript);
  }

  @Override
  public List<RedisBudgetStore.ClusterMaster> clusterMasters() {
    List<RedisBudgetStore.ClusterMaster> masters = new ArrayList<>();
    for (RedisClusterNode node : connection.getPartitions()) {
      if (!node.is(RedisClusterNode.NodeFlag.UPSTREAM) || node.getSlots().isEmpty()) {
        continue;
      }
      BitSet slots = new BitSet(SlotHash.SLOT_COUNT);
      node.getSlots().forEach(slots::set);
      masters.add(new RedisBudgetStore.ClusterMaster(node.getNodeId(),
          node.getUri().getHost() + ":" + node.getUri().getPort(), slots));
    }
    masters.sort(Comparator.comparingInt(m -> m.slots().nextSetBit(0)));
    return masters;
  }

  @Override
  public CompletableFuture<KeyScanCursor<String>> scanNode(String nodeId, ScanCursor cursor, ScanArgs args) {
    try {
      return connection.getConnectionAsync(nodeId)
          .thenCompose(n -> (cursor == null ? n.async().scan(args) : n.async().scan(cursor, args)).toCompletableFuture())
          .toCompletableFuture();
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  @Override
  public boolean isOpen() {
    return connection.isOpen();
  }

  @Override
  public void close() {
    failoverWatch.close();
    try {
      connection.close();
    } catch (RuntimeException ignored) {
      // closing anyway
    }
    client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
  }
}
