package io.retrybudget.budget.redis.transport;

import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.event.connection.ConnectionActivatedEvent;
import io.lettuce.core.event.connection.ReconnectFailedEvent;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.DefaultClientResources;
import io.lettuce.core.resource.Delay;
import io.lettuce.core.resource.NettyCustomizer;
import io.netty.channel.Channel;
import io.netty.channel.EventLoopGroup;
import io.retrybudget.budget.redis.protocol.LuaScript;
import java.time.Duration;
import java.util.BitSet;
import java.util.List;
import java.util.Objects;
import java.util.SortedSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import reactor.core.Disposable;

/**
 * The one Redis connection of a process (standalone or Cluster), shared by every budget: runs the
 * scripts of lua/ by SHA and reloads them on NOSCRIPT (after a restart, SCRIPT FLUSH or
 * failover). Everything is asynchronous; callers put their own deadline on the futures.
 *
 * <p>{@link #connect} and {@link #close()} are the API an application uses (server-kit's stores take
 * an open store); the other methods serve the product's own modules and are not a stable API. What
 * differs between a standalone Redis and a Cluster lives behind a package-private interface, with
 * one implementation for each.
 */
public final class RedisBudgetStore implements AutoCloseable {
  private final RedisConnectionOptions options;
  private final ClientResources resources;
  /** False when the resources are the caller's ({@link RedisConnectionOptions#clientResources()}): never shut down here. */
  private final boolean ownsResources;
  private final Disposable connectionEvents;
  private final StoreConnection connection;
  private final RedisClusterAsyncCommands<String, String> commands;
  /** Channels Lettuce initialized for this store; -1: not known (the caller's client resources). */
  private final AtomicLong channelsOpened;

  private RedisBudgetStore(RedisConnectionOptions options, EventLoopGroup ioLoop) {
    this.options = options;
    this.ownsResources = options.clientResources() == null;
    // a Cluster store's calls go on one connection a node: its count tells no call's connection
    this.channelsOpened = new AtomicLong(ownsResources && !options.isCluster() ? 0 : -1);
    if (!ownsResources) {
      if (ioLoop != null) {
        throw new IllegalArgumentException("an event loop and client resources cannot both be given: the resources bring theirs");
      }
      this.resources = options.clientResources();
    } else {
      DefaultClientResources.Builder resourcesBuilder = DefaultClientResources.builder();
      if (ioLoop == null) {
        resourcesBuilder.ioThreadPoolSize(2);
      } else {
        resourcesBuilder.eventLoopGroupProvider(new SharedEventLoopGroupProvider(ioLoop));
      }
      this.resources = resourcesBuilder
          .computationThreadPoolSize(2)
          .reconnectDelay(Delay.exponential(Duration.ofMillis(10), options.reconnectDelayMax(), 2, TimeUnit.MILLISECONDS))
          .nettyCustomizer(new NettyCustomizer() {
            @Override
            public void afterChannelInitialized(Channel channel) {
              channelsOpened.updateAndGet(c -> c < 0 ? c : c + 1); // -1 stays: not counted
            }
          })
          .build();
    }
    // Scripts go into every master's cache whenever a connection to it opens (start, reconnect,
    // failover); NOSCRIPT is still handled for a SCRIPT FLUSH on a live connection. A Cluster also
    // watches for a failed master's replica taking over.
    AtomicReference<StoreConnection> target = new AtomicReference<>();
    this.connectionEvents = resources.eventBus().get()
        .filter(e -> e instanceof ReconnectFailedEvent || e instanceof ConnectionActivatedEvent)
        .subscribe(e -> {
          StoreConnection c = target.get();
          if (c == null) {
            return;
          }
          if (e instanceof ReconnectFailedEvent f) {
            c.reconnectFailed(f.remoteAddress());
          } else if (channelsOpened.get() != 1) {
            // the first connection of a standalone store (counted: 1) had its scripts loaded by
            // warmUp, before connect returned; its event comes late, from the event bus's thread, and
            // loading again then would refill a cache flushed meanwhile (a SCRIPT FLUSH after start)
            c.connectionActivated(((ConnectionActivatedEvent) e).remoteAddress());
          }
        }, error -> { });
    StoreConnection opened = null;
    try {
      opened = options.isCluster() ? new ClusterConnection(resources, options) : new StandaloneConnection(resources, options);
      target.set(opened);
      opened.warmUp();
    } catch (RuntimeException e) {
      if (opened != null) {
        opened.close();
      }
      connectionEvents.dispose();
      if (ownsResources) {
        resources.shutdown(0, 2, TimeUnit.SECONDS);
      }
      throw e;
    }
    this.connection = opened;
    this.commands = opened.commands();
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

  /** One EVALSHA, as it is: a NOSCRIPT reply fails the future with Lettuce's RedisNoScriptException. */
  public CompletableFuture<List<Object>> evalsha(LuaScript script, String[] keyNames, String... args) {
    try {
      return commands.<List<Object>>evalsha(script.sha1(), ScriptOutputType.MULTI, keyNames, args).toCompletableFuture();
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** One EVAL with the script's text (which caches it again). */
  public CompletableFuture<List<Object>> eval(LuaScript script, String[] keyNames, String... args) {
    try {
      return commands.<List<Object>>eval(script.body(), ScriptOutputType.MULTI, keyNames, args).toCompletableFuture();
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** A script that answers an integer, by SHA, its text once on NOSCRIPT. */
  public CompletableFuture<Long> runInteger(LuaScript script, String[] keyNames, String... args) {
    return ScriptCalls.bySha(commands, script, ScriptOutputType.INTEGER, keyNames, args);
  }

  /** Runs a script by SHA; on NOSCRIPT sends its text once, which also caches it again. */
  public CompletableFuture<List<Object>> run(LuaScript script, String[] keyNames, String... args) {
    return ScriptCalls.bySha(commands, script, ScriptOutputType.MULTI, keyNames, args);
  }

  /**
   * The members with a score of at least {@code minScore} of every sorted set named, merged, sorted and
   * without duplicates: one ZRANGEBYSCORE per key, sent in batches of at most 2,048 so the bounded
   * request queue never overflows. Stops early when {@code giveUp} is done.
   */
  public CompletableFuture<SortedSet<String>> sortedSetMembers(List<String> keyNames, double minScore,
      CompletableFuture<?> giveUp) {
    return SortedSetReads.members(commands, keyNames, minScore, giveUp);
  }

  /**
   * On a Cluster: the members with a score of at least {@code minScore} of every slot's index key,
   * merged. On Redis 7.0 or later one {@link LuaScript#LIST} call per master reads the index keys of
   * all the slots it serves (a few milliseconds inside Redis, whatever else it holds); the slots of
   * a master where that fails (Redis 6.2, a slot that moved since the client's view of the
   * partitions, a node being reconnected) and slots no master serves in that view are read one key
   * at a time as {@link #sortedSetMembers} does. Stops early when {@code giveUp} is done. Fails at
   * once on a standalone Redis.
   */
  public CompletableFuture<SortedSet<String>> clusterIndexMembers(long minScore, CompletableFuture<?> giveUp) {
    return connection.clusterIndexMembers(minScore, giveUp, true);
  }

  /** As {@link #clusterIndexMembers(long, CompletableFuture)}; {@code byScript} false: Redis 6.2's way (tests). */
  CompletableFuture<SortedSet<String>> clusterIndexMembers(long minScore, CompletableFuture<?> giveUp, boolean byScript) {
    return connection.clusterIndexMembers(minScore, giveUp, byScript);
  }

  /**
   * One SCAN step with MATCH and COUNT (on a Cluster: Lettuce's scan over the masters one after the
   * other, the cursor saying which); {@code cursor} null to start.
   */
  public CompletableFuture<KeyScanCursor<String>> scan(ScanCursor cursor, String match, long count) {
    ScanArgs args = ScanArgs.Builder.matches(match).limit(count);
    try {
      return (cursor == null ? commands.scan(args) : commands.scan(cursor, args)).toCompletableFuture();
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /**
   * A Cluster master as this client last saw the topology (Lettuce's partitions, refreshed at least
   * every {@link RedisConnectionOptions#topologyRefreshPeriod()} and after a failover): its node id,
   * {@code host:port}, and the slots it serves (a copy).
   */
  public record ClusterMaster(String nodeId, String address, BitSet slots) {}

  /**
   * The masters that serve slots, lowest first slot first; empty on a standalone Redis. For work
   * that walks the masters itself and must go on past one that does not answer (a SCAN of every
   * master that skips a dead one and tries its slots again on whoever serves them later).
   */
  public List<ClusterMaster> clusterMasters() {
    return connection.clusterMasters();
  }

  /**
   * One SCAN step with MATCH and COUNT on one Cluster node (by id, as {@link #clusterMasters()}
   * names it), with that node's own cursor; {@code cursor} null to start. Fails at once when this
   * is no Cluster connection or the node cannot be reached.
   */
  public CompletableFuture<KeyScanCursor<String>> scanNode(String nodeId, ScanCursor cursor, String match, long count) {
    return connection.scanNode(nodeId, cursor, ScanArgs.Builder.matches(match).limit(count));
  }

  /** Whether a key exists. */
  public CompletableFuture<Boolean> exists(String key) {
    return commands.exists(key).toCompletableFuture().thenApply(n -> n != null && n > 0);
  }

  /**
   * Whether the connection is up now; while it is down (being re-established in the background) a
   * command is refused at once, unsent.
   */
  public boolean isConnected() {
    return connection.isOpen();
  }

  /**
   * How many connections (channels) this store has opened so far, the first one included: a new one at
   * each connect and reconnect, counted when Lettuce initializes its channel ({@code NettyCustomizer},
   * public API), so before any command can be written on it; -1 on a Cluster (a connection a node) and
   * when the client resources are the caller's ({@link RedisConnectionOptions#clientResources()}). A command sent while this reads
   * {@code n} both before and after was written on the {@code n}th connection or not at all: Lettuce
   * binds a command to the channel it finds when it is sent, the {@code n+1}th is initialized only after
   * the {@code n}th has closed, and budget scripts are never replayed on another
   * ({@code StoreConnection.NO_SCRIPT_REPLAY}, commands refused while disconnected).
   */
  public long connectionsOpened() {
    return channelsOpened.get();
  }

  /** PING (on a Cluster: the node the connection routes it to). */
  public CompletableFuture<String> ping() {
    return commands.ping().toCompletableFuture();
  }

  @Override
  public void close() {
    connectionEvents.dispose();
    connection.close();
    if (ownsResources) {
      resources.shutdown(0, 2, TimeUnit.SECONDS);
    }
  }
}
