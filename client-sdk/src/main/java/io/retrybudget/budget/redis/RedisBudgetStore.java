package io.retrybudget.budget.redis;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisKeyAsyncCommands;
import io.lettuce.core.api.async.RedisScriptingAsyncCommands;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.protocol.CommandType;
import io.lettuce.core.protocol.RedisCommand;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.DefaultClientResources;
import io.lettuce.core.resource.Delay;
import io.netty.channel.EventLoopGroup;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * The one Redis connection of a process (standalone or Cluster), shared by every budget: runs the
 * scripts of lua/ by SHA and reloads them on NOSCRIPT (after a restart, SCRIPT FLUSH or
 * failover). Everything is asynchronous; callers put their own deadline on the futures.
 */
public final class RedisBudgetStore implements AutoCloseable {
  // Budget scripts are never replayed after a reconnect: the caller has long given up on them.
  private static final Predicate<RedisCommand<?, ?, ?>> NO_SCRIPT_REPLAY =
      cmd -> cmd.getType() == CommandType.EVALSHA || cmd.getType() == CommandType.EVAL;

  private final RedisConnectionOptions options;
  private final ClientResources resources;
  private final RedisClient standaloneClient;
  private final RedisClusterClient clusterClient;
  private final StatefulConnection<String, String> connection;
  private final RedisScriptingAsyncCommands<String, String> scripting;
  private final RedisKeyAsyncCommands<String, String> keys;

  private RedisBudgetStore(RedisConnectionOptions options, EventLoopGroup ioLoop) {
    this.options = options;
    DefaultClientResources.Builder resourcesBuilder = DefaultClientResources.builder();
    if (ioLoop == null) {
      resourcesBuilder.ioThreadPoolSize(2);
    } else {
      resourcesBuilder.eventLoopGroupProvider(new SharedEventLoopGroupProvider(ioLoop));
    }
    this.resources = resourcesBuilder
        .computationThreadPoolSize(2)
        .reconnectDelay(Delay.exponential(Duration.ofMillis(10), options.reconnectDelayMax(), 2, TimeUnit.MILLISECONDS))
        .build();
    TimeoutOptions timeouts = TimeoutOptions.enabled(options.commandTimeout());
    try {
      if (options.isCluster()) {
        List<RedisURI> seeds = new ArrayList<>();
        for (String node : options.clusterNodes()) {
          int colon = node.lastIndexOf(':');
          seeds.add(RedisURI.create(node.substring(0, colon), Integer.parseInt(node.substring(colon + 1))));
        }
        this.standaloneClient = null;
        this.clusterClient = RedisClusterClient.create(resources, seeds);
        ClusterClientOptions.Builder builder = ClusterClientOptions.builder()
            .topologyRefreshOptions(ClusterTopologyRefreshOptions.builder()
                .enableAllAdaptiveRefreshTriggers()
                .enablePeriodicRefresh(Duration.ofSeconds(30))
                .build());
        builder.autoReconnect(true)
            .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
            .requestQueueSize(options.requestQueueSize())
            .replayFilter(NO_SCRIPT_REPLAY)
            .timeoutOptions(timeouts);
        clusterClient.setOptions(builder.build());
        StatefulRedisClusterConnection<String, String> c = clusterClient.connect(StringCodec.UTF8);
        // Node connections open lazily, and while one opens REJECT_COMMANDS refuses its first
        // commands: open them all now.
        for (RedisClusterNode node : clusterClient.getPartitions()) {
          c.getConnection(node.getUri().getHost(), node.getUri().getPort());
        }
        this.connection = c;
        this.scripting = c.async();
        this.keys = c.async();
      } else {
        this.clusterClient = null;
        this.standaloneClient = RedisClient.create(resources, RedisURI.create(options.redisUri()));
        standaloneClient.setOptions(ClientOptions.builder()
            .autoReconnect(true)
            .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
            .requestQueueSize(options.requestQueueSize())
            .replayFilter(NO_SCRIPT_REPLAY)
            .timeoutOptions(timeouts)
            .build());
        StatefulRedisConnection<String, String> c = standaloneClient.connect(StringCodec.UTF8);
        this.connection = c;
        this.scripting = c.async();
        this.keys = c.async();
      }
    } catch (RuntimeException e) {
      shutdownQuietly();
      throw e;
    }
  }

  /**
   * Connects now; throws Lettuce's {@code RedisConnectionException} when Redis cannot be reached
   * at start. Once connected, a lost connection is re-established in the background.
   */
  public static RedisBudgetStore connect(RedisConnectionOptions options) {
    return new RedisBudgetStore(options, null);
  }

  /**
   * Like {@link #connect(RedisConnectionOptions)}, but Lettuce's network I/O runs on {@code ioLoop},
   * an event loop (group) the caller owns and keeps running until after {@link #close()}: for a
   * server on one Vert.x event loop, its own loop, so a command written from a request handler and
   * its reply need no thread hop. Must not be called on that loop (connecting waits for it).
   */
  public static RedisBudgetStore connect(RedisConnectionOptions options, EventLoopGroup ioLoop) {
    return new RedisBudgetStore(options, Objects.requireNonNull(ioLoop, "ioLoop"));
  }

  public RedisConnectionOptions options() {
    return options;
  }

  /** Runs a script by SHA; on NOSCRIPT sends its text once, which also caches it again. */
  public CompletableFuture<List<Object>> run(LuaScript script, String[] keyNames, String... args) {
    CompletableFuture<List<Object>> result = new CompletableFuture<>();
    try {
      dispatch(script, keyNames, args, result);
    } catch (RuntimeException e) {
      // a closed connection or client throws at dispatch: fail the future, never the caller
      result.completeExceptionally(e);
    }
    return result;
  }

  private void dispatch(LuaScript script, String[] keyNames, String[] args, CompletableFuture<List<Object>> result) {
    scripting.<List<Object>>evalsha(script.sha1(), ScriptOutputType.MULTI, keyNames, args)
        .whenComplete((reply, error) -> {
          if (error == null) {
            result.complete(reply);
          } else if (unwrap(error) instanceof RedisNoScriptException) {
            scripting.<List<Object>>eval(script.body(), ScriptOutputType.MULTI, keyNames, args)
                .whenComplete((again, error2) -> {
                  if (error2 == null) {
                    result.complete(again);
                  } else {
                    result.completeExceptionally(unwrap(error2));
                  }
                });
          } else {
            result.completeExceptionally(unwrap(error));
          }
        });
  }

  /** Whether a key exists. */
  public CompletableFuture<Boolean> exists(String key) {
    return keys.exists(key).toCompletableFuture().thenApply(n -> n != null && n > 0);
  }

  /** PING (on a Cluster: the node the connection routes it to). */
  public CompletableFuture<String> ping() {
    if (connection instanceof StatefulRedisClusterConnection<String, String> c) {
      return c.async().ping().toCompletableFuture();
    }
    return ((StatefulRedisConnection<String, String>) connection).async().ping().toCompletableFuture();
  }

  /**
   * Names of budgets that have keys, at most {@code limit}, scanning every master of a Cluster.
   * Sorted, without duplicates.
   */
  public CompletableFuture<List<String>> scanBudgetNames(int limit) {
    java.util.TreeSet<String> names = new java.util.TreeSet<>();
    CompletableFuture<List<String>> result = new CompletableFuture<>();
    ScanArgs args = ScanArgs.Builder.matches(BudgetKeys.PREFIX + "{*").limit(1000);
    scanStep(ScanCursor.INITIAL, args, names, limit, result);
    return result;
  }

  private void scanStep(ScanCursor cursor, ScanArgs args, java.util.TreeSet<String> names, int limit,
      CompletableFuture<List<String>> result) {
    if (result.isDone()) {
      return; // the caller gave up (timeout): don't keep a Redis core busy for nobody
    }
    keys.scan(cursor, args).whenComplete((KeyScanCursor<String> page, Throwable error) -> {
      if (error != null) {
        result.completeExceptionally(unwrap(error));
        return;
      }
      for (String key : page.getKeys()) {
        String name = BudgetKeys.budgetOf(key);
        if (name != null) {
          names.add(name);
        }
      }
      if (page.isFinished() || names.size() >= limit) {
        List<String> list = new ArrayList<>(names);
        result.complete(list.size() > limit ? list.subList(0, limit) : list);
      } else {
        scanStep(page, args, names, limit, result);
      }
    });
  }

  private static Throwable unwrap(Throwable error) {
    return error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
  }

  @Override
  public void close() {
    shutdownQuietly();
  }

  private void shutdownQuietly() {
    try {
      if (connection != null) {
        connection.close();
      }
    } catch (RuntimeException ignored) {
      // closing anyway
    }
    if (standaloneClient != null) {
      standaloneClient.shutdown(Duration.ZERO, Duration.ofSeconds(2));
    }
    if (clusterClient != null) {
      clusterClient.shutdown(Duration.ZERO, Duration.ofSeconds(2));
    }
    resources.shutdown(0, 2, TimeUnit.SECONDS);
  }
}
