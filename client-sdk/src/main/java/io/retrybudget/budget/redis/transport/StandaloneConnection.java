package io.retrybudget.budget.redis.transport;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.resource.ClientResources;
import java.lang.System.Logger.Level;
import java.net.SocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.SortedSet;
import java.util.concurrent.CompletableFuture;

/** One standalone Redis (or the master Sentinel names): one connection, one node. */
final class StandaloneConnection implements StoreConnection {
  private static final System.Logger LOG = System.getLogger(RedisBudgetStore.class.getName());

  private final RedisClient client;
  private final StatefulRedisConnection<String, String> connection;

  /** Connects now; throws Lettuce's {@code RedisConnectionException} (the client shut down) when it cannot. */
  StandaloneConnection(ClientResources resources, RedisConnectionOptions options) {
    this.client = RedisClient.create(resources, options.uris().get(0));
    try {
      client.setOptions(StoreConnection.sharedOptions(ClientOptions.builder(), options).build());
      this.connection = client.connect(StringCodec.UTF8);
    } catch (RuntimeException e) {
      client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
      throw e;
    }
  }

  @Override
  public RedisClusterAsyncCommands<String, String> commands() {
    return connection.async();
  }

  @Override
  public void warmUp() {
    loadScripts();
  }

  @Override
  public void connectionActivated(SocketAddress address) {
    loadScripts();
  }

  private void loadScripts() {
    try {
      ScriptCalls.loadAll(connection.async());
    } catch (RuntimeException e) {
      LOG.log(Level.DEBUG, "script load on connect failed; NOSCRIPT loads them", e);
    }
  }

  @Override
  public void reconnectFailed(SocketAddress address) {
    // one node: nothing to fail over to but the node itself, which Lettuce keeps reconnecting to
  }

  @Override
  public CompletableFuture<SortedSet<String>> clusterIndexMembers(long minScore, CompletableFuture<?> giveUp,
      boolean byScript) {
    return StoreConnection.notCluster();
  }

  @Override
  public List<RedisBudgetStore.ClusterMaster> clusterMasters() {
    return List.of();
  }

  @Override
  public CompletableFuture<KeyScanCursor<String>> scanNode(String nodeId, ScanCursor cursor, ScanArgs args) {
    return CompletableFuture.failedFuture(new IllegalStateException("not a Cluster connection"));
  }

  @Override
  public boolean isOpen() {
    return connection.isOpen();
  }

  @Override
  public void close() {
    try {
      connection.close();
    } catch (RuntimeException ignored) {
      // closing anyway
    }
    client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
  }
}
