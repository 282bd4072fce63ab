package io.retrybudget.budget.redis.transport;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.RedisException;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.SocketOptions;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.protocol.CommandType;
import io.lettuce.core.protocol.RedisCommand;
import java.net.SocketAddress;
import java.util.List;
import java.util.SortedSet;
import java.util.concurrent.CompletableFuture;
import java.util.function.Predicate;

/**
 * What {@link RedisBudgetStore} needs of its Lettuce connection, standalone or Cluster, so nothing
 * above it asks which one it has: {@link StandaloneConnection} and {@link ClusterConnection}.
 * Every method but {@link #warmUp()} and {@link #close()} is asynchronous and never blocks.
 */
interface StoreConnection extends AutoCloseable {
  /**
   * Every command the store sends through the connection's own routing: one node standalone, by
   * slot on a Cluster (where SCAN walks the masters one after the other, the cursor saying which).
   */
  RedisClusterAsyncCommands<String, String> commands();

  /**
   * Puts the budget scripts into the cache of every node that is reachable now (best effort, within
   * the connect and command timeouts), so the first calls do not meet NOSCRIPT or a node still
   * connecting. Called once, after the connection opened.
   */
  void warmUp();

  /** A connection to {@code address} opened (start, reconnect, failover): its scripts, best effort. */
  void connectionActivated(SocketAddress address);

  /** Lettuce's reconnect of a long-lived connection to {@code address} failed. */
  void reconnectFailed(SocketAddress address);

  /**
   * The members with a score of at least {@code minScore} of every budget index key, merged (see
   * {@link RedisBudgetStore#clusterIndexMembers(long, CompletableFuture)}); {@code byScript} false
   * reads them one key at a time as Redis 6.2 needs. Fails at once on a standalone connection.
   */
  CompletableFuture<SortedSet<String>> clusterIndexMembers(long minScore, CompletableFuture<?> giveUp, boolean byScript);

  /** The masters that serve slots, lowest first slot first; empty standalone. */
  List<RedisBudgetStore.ClusterMaster> clusterMasters();

  /** One SCAN step on one Cluster node by id; fails at once standalone or when it cannot be reached. */
  CompletableFuture<KeyScanCursor<String>> scanNode(String nodeId, ScanCursor cursor, ScanArgs args);

  /**
   * Whether the connection is up now (on a Cluster: the connection to the cluster, whatever one node
   * does); a command sent while it is down is refused unsent.
   */
  boolean isOpen();

  /** Closes the connection and shuts its client down (never throws). */
  @Override
  void close();

  /**
   * Budget scripts are never replayed after a reconnect: the caller has long given up on them. Lettuce
   * asks this of a command it would buffer while disconnected (one sent as the connection dropped,
   * past its check that the connection was up) and drops it when it matches; a script is refused
   * then, as one written on a closed channel is ("Currently not connected"), so its caller knows it
   * never left (BudgetScripts sends it again) instead of waiting out its timeout.
   */
  Predicate<RedisCommand<?, ?, ?>> NO_SCRIPT_REPLAY = cmd -> {
    if (cmd.getType() != CommandType.EVALSHA && cmd.getType() != CommandType.EVAL) {
      return false;
    }
    cmd.completeExceptionally(new RedisException("Currently not connected. Commands are rejected."));
    return true;
  };

  /**
   * The options both kinds of client share: connect timeout, reconnect on, commands rejected while
   * disconnected, a bounded request queue, no replay of scripts, the command timeout, and the
   * caller's TLS settings when given.
   */
  static <B extends ClientOptions.Builder> B sharedOptions(B builder, RedisConnectionOptions options) {
    if (options.sslOptions() != null) {
      builder.sslOptions(options.sslOptions());
    }
    builder.socketOptions(SocketOptions.builder().connectTimeout(options.connectTimeout()).build())
        .autoReconnect(true)
        .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
        .requestQueueSize(options.requestQueueSize())
        .replayFilter(NO_SCRIPT_REPLAY)
        .timeoutOptions(TimeoutOptions.enabled(options.commandTimeout()));
    return builder;
  }

  static CompletableFuture<SortedSet<String>> notCluster() {
    return CompletableFuture.failedFuture(new IllegalStateException("not a Cluster connection"));
  }
}
