package io.retrybudget.budget.redis;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.SocketOptions;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.event.connection.ConnectionActivatedEvent;
import io.lettuce.core.event.connection.ReconnectFailedEvent;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisKeyAsyncCommands;
import io.lettuce.core.api.async.RedisScriptingAsyncCommands;
import io.lettuce.core.api.async.RedisSortedSetAsyncCommands;
import io.lettuce.core.Range;
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
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.SortedSet;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Predicate;
import java.util.logging.Level;
import java.util.logging.Logger;
import reactor.core.Disposable;

/**
 * The one Redis connection of a process (standalone or Cluster), shared by every budget: runs the
 * scripts of lua/ by SHA and reloads them on NOSCRIPT (after a restart, SCRIPT FLUSH or
 * failover). Everything is asynchronous; callers put their own deadline on the futures.
 */
public final class RedisBudgetStore implements AutoCloseable {
  // Budget scripts are never replayed after a reconnect: the caller has long given up on them.
  private static final Predicate<RedisCommand<?, ?, ?>> NO_SCRIPT_REPLAY =
      cmd -> cmd.getType() == CommandType.EVALSHA || cmd.getType() == CommandType.EVAL;

  private static final Logger LOG = Logger.getLogger(RedisBudgetStore.class.getName());

  private final RedisConnectionOptions options;
  private final ClientResources resources;
  /** False when the resources are the caller's ({@link RedisConnectionOptions#clientResources()}): never shut down here. */
  private final boolean ownsResources;
  private final RedisClient standaloneClient;
  private final RedisClusterClient clusterClient;
  private final StatefulConnection<String, String> connection;
  private final RedisScriptingAsyncCommands<String, String> scripting;
  private final RedisKeyAsyncCommands<String, String> keys;
  private final RedisSortedSetAsyncCommands<String, String> sortedSets;
  private final Disposable scriptLoader;
  private final Disposable failoverEvents;
  private final AtomicReference<FailoverWatch> failoverWatch = new AtomicReference<>();

  private RedisBudgetStore(RedisConnectionOptions options, EventLoopGroup ioLoop) {
    this.options = options;
    this.ownsResources = options.clientResources() == null;
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
          .build();
    }
    TimeoutOptions timeouts = TimeoutOptions.enabled(options.commandTimeout());
    SocketOptions socket = SocketOptions.builder().connectTimeout(options.connectTimeout()).build();
    StatefulConnection<String, String> opened = null;
    RedisClient standalone = null;
    RedisClusterClient clustered = null;
    // Scripts go into every master's cache whenever a connection to it opens (start, reconnect,
    // failover); NOSCRIPT is still handled for a SCRIPT FLUSH on a live connection.
    AtomicReference<StatefulConnection<String, String>> target = new AtomicReference<>();
    this.scriptLoader = resources.eventBus().get()
        .filter(e -> e instanceof ConnectionActivatedEvent)
        .subscribe(e -> loadScripts(target.get(), ((ConnectionActivatedEvent) e).remoteAddress()), error -> { });
    this.failoverEvents = resources.eventBus().get()
        .filter(e -> e instanceof ReconnectFailedEvent || e instanceof ConnectionActivatedEvent)
        .subscribe(e -> {
          FailoverWatch watch = failoverWatch.get();
          if (watch == null) {
            return;
          }
          if (e instanceof ReconnectFailedEvent f) {
            watch.reconnectFailed(f.remoteAddress());
          } else {
            watch.connected(((ConnectionActivatedEvent) e).remoteAddress());
          }
        }, error -> { });
    try {
      if (options.isCluster()) {
        clustered = RedisClusterClient.create(resources, options.uris());
        ClusterClientOptions.Builder builder = ClusterClientOptions.builder();
        builder.topologyRefreshOptions(ClusterTopologyRefreshOptions.builder()
                .enableAllAdaptiveRefreshTriggers()
                .adaptiveRefreshTriggersTimeout(Duration.ofMillis(500))
                .refreshTriggersReconnectAttempts(2)
                .enablePeriodicRefresh(options.topologyRefreshPeriod())
                .closeStaleConnections(true)
                .build());
        if (options.sslOptions() != null) {
          builder.sslOptions(options.sslOptions());
        }
        builder.socketOptions(socket)
            .autoReconnect(true)
            .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
            .requestQueueSize(options.requestQueueSize())
            .replayFilter(NO_SCRIPT_REPLAY)
            .timeoutOptions(timeouts);
        clustered.setOptions(builder.build());
        BudgetKeys.clusterIndex(0); // builds the slot -> index key table now, not on a first permit call
        StatefulRedisClusterConnection<String, String> c = clustered.connect(StringCodec.UTF8);
        target.set(c);
        failoverWatch.set(new FailoverWatch(clustered, c, resources.eventExecutorGroup(), System::nanoTime,
            n -> loadAll(n.async())));
        openMasterConnections(c, clustered);
        opened = c;
        this.scripting = c.async();
        this.keys = c.async();
        this.sortedSets = c.async();
      } else {
        standalone = RedisClient.create(resources, options.uris().get(0));
        ClientOptions.Builder clientOptions = ClientOptions.builder();
        if (options.sslOptions() != null) {
          clientOptions.sslOptions(options.sslOptions());
        }
        standalone.setOptions(clientOptions
            .socketOptions(socket)
            .autoReconnect(true)
            .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
            .requestQueueSize(options.requestQueueSize())
            .replayFilter(NO_SCRIPT_REPLAY)
            .timeoutOptions(timeouts)
            .build());
        StatefulRedisConnection<String, String> c = standalone.connect(StringCodec.UTF8);
        target.set(c);
        loadScripts(c, null);
        opened = c;
        this.scripting = c.async();
        this.keys = c.async();
        this.sortedSets = c.async();
      }
    } catch (RuntimeException e) {
      this.connection = opened;
      this.standaloneClient = standalone;
      this.clusterClient = clustered;
      shutdownQuietly();
      throw e;
    }
    this.connection = opened;
    this.standaloneClient = standalone;
    this.clusterClient = clustered;
  }

  /**
   * Node connections open lazily, and while one opens REJECT_COMMANDS refuses its first commands:
   * open those of the masters now, each within the connect timeout, and go on without the ones that
   * cannot be reached (a failed node, a master listed as {@code master,fail} after a failover).
   */
  private void openMasterConnections(StatefulRedisClusterConnection<String, String> c, RedisClusterClient client) {
    List<CompletableFuture<?>> pending = new ArrayList<>();
    for (RedisClusterNode node : client.getPartitions()) {
      if (!node.is(RedisClusterNode.NodeFlag.UPSTREAM) || node.is(RedisClusterNode.NodeFlag.FAIL)
          || node.is(RedisClusterNode.NodeFlag.EVENTUAL_FAIL)) {
        continue;
      }
      pending.add(c.getConnectionAsync(node.getUri().getHost(), node.getUri().getPort())
          .thenCompose(n -> loadAll(n.async()))
          .toCompletableFuture()
          .exceptionally(error -> {
            LOG.log(Level.FINE, "Cluster node " + node.getUri().getHost() + ":" + node.getUri().getPort()
                + " not reachable now; its slots are served when it is", error);
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

  /** SCRIPT LOAD of every budget script on the node a connection just opened to (best effort). */
  private void loadScripts(StatefulConnection<String, String> c, SocketAddress address) {
    try {
      if (c instanceof StatefulRedisConnection<String, String> s) {
        loadAll(s.async());
      } else if (c instanceof StatefulRedisClusterConnection<String, String> cc
          && address instanceof InetSocketAddress a) {
        for (RedisClusterNode node : cc.getPartitions()) {
          if (node.is(RedisClusterNode.NodeFlag.UPSTREAM) && node.getUri().getPort() == a.getPort()
              && (node.getUri().getHost().equals(a.getHostString())
                  || (a.getAddress() != null && node.getUri().getHost().equals(a.getAddress().getHostAddress())))) {
            cc.getConnectionAsync(node.getUri().getHost(), node.getUri().getPort())
                .thenAccept(n -> loadAll(n.async()));
          }
        }
      }
    } catch (RuntimeException e) {
      LOG.log(Level.FINE, "script load on connect failed; NOSCRIPT loads them", e);
    }
  }

  private static CompletableFuture<Void> loadAll(RedisScriptingAsyncCommands<String, String> commands) {
    List<CompletableFuture<String>> loads = new ArrayList<>();
    for (LuaScript script : LuaScript.BUDGET_SCRIPTS) {
      loads.add(commands.scriptLoad(script.body()).toCompletableFuture());
    }
    return CompletableFuture.allOf(loads.toArray(new CompletableFuture<?>[0]));
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
      return scripting.<List<Object>>evalsha(script.sha1(), ScriptOutputType.MULTI, keyNames, args).toCompletableFuture();
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** One EVAL with the script's text (which caches it again). */
  public CompletableFuture<List<Object>> eval(LuaScript script, String[] keyNames, String... args) {
    try {
      return scripting.<List<Object>>eval(script.body(), ScriptOutputType.MULTI, keyNames, args).toCompletableFuture();
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** A script that answers an integer, by SHA, its text once on NOSCRIPT. */
  public CompletableFuture<Long> runInteger(LuaScript script, String[] keyNames, String... args) {
    CompletableFuture<Long> result = new CompletableFuture<>();
    try {
      scripting.<Long>evalsha(script.sha1(), ScriptOutputType.INTEGER, keyNames, args).whenComplete((n, error) -> {
        if (error == null) {
          result.complete(n);
        } else if (unwrap(error) instanceof RedisNoScriptException) {
          scripting.<Long>eval(script.body(), ScriptOutputType.INTEGER, keyNames, args).whenComplete((again, error2) -> {
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
    } catch (RuntimeException e) {
      result.completeExceptionally(e);
    }
    return result;
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

  /**
   * The members with a score of at least {@code minScore} of every sorted set named, merged, sorted and
   * without duplicates: one ZRANGEBYSCORE per key, sent in batches of at most {@link #BATCH} so the
   * bounded request queue never overflows. Stops early when {@code giveUp} is done.
   */
  public CompletableFuture<SortedSet<String>> sortedSetMembers(List<String> keyNames, double minScore,
      CompletableFuture<?> giveUp) {
    SortedSet<String> names = new TreeSet<>();
    CompletableFuture<SortedSet<String>> result = new CompletableFuture<>();
    membersBatch(keyNames, 0, Range.create(minScore, Double.POSITIVE_INFINITY), names, giveUp, result);
    return result;
  }

  // per batch about a third goes to each master of a 3-master Cluster: far below the request queue
  static final int BATCH = 2048;

  private void membersBatch(List<String> keyNames, int from, Range<Double> range, SortedSet<String> names,
      CompletableFuture<?> giveUp, CompletableFuture<SortedSet<String>> result) {
    if (from >= keyNames.size()) {
      result.complete(names);
      return;
    }
    if (giveUp.isDone()) {
      result.completeExceptionally(new CancellationException("listing given up"));
      return;
    }
    int to = Math.min(keyNames.size(), from + BATCH);
    List<CompletableFuture<List<String>>> batch = new ArrayList<>(to - from);
    try {
      for (int i = from; i < to; i++) {
        batch.add(sortedSets.zrangebyscore(keyNames.get(i), range).toCompletableFuture());
      }
    } catch (RuntimeException e) {
      result.completeExceptionally(e);
      return;
    }
    CompletableFuture.allOf(batch.toArray(new CompletableFuture<?>[0])).whenComplete((done, error) -> {
      if (error != null) {
        result.completeExceptionally(unwrap(error));
        return;
      }
      for (CompletableFuture<List<String>> f : batch) {
        names.addAll(f.join());
      }
      membersBatch(keyNames, to, range, names, giveUp, result);
    });
  }

  /**
   * On a Cluster: the members with a score of at least {@code minScore} of every slot's index key,
   * merged. On Redis 7.0 or later one {@link LuaScript#LIST} call per master reads the index keys of
   * all the slots it serves (a few milliseconds inside Redis, whatever else it holds); the slots of
   * a master where that fails (Redis 6.2, a slot that moved since the client's view of the
   * partitions, a node being reconnected) and slots no master serves in that view are read one key
   * at a time as {@link #sortedSetMembers} does. Stops early when {@code giveUp} is done.
   */
  public CompletableFuture<SortedSet<String>> clusterIndexMembers(long minScore, CompletableFuture<?> giveUp) {
    return clusterIndexMembers(minScore, giveUp, true);
  }

  /** As {@link #clusterIndexMembers(long, CompletableFuture)}; {@code byScript} false: Redis 6.2's way (tests). */
  CompletableFuture<SortedSet<String>> clusterIndexMembers(long minScore, CompletableFuture<?> giveUp, boolean byScript) {
    if (!(connection instanceof StatefulRedisClusterConnection<String, String> c)) {
      return CompletableFuture.failedFuture(new IllegalStateException("not a Cluster connection"));
    }
    boolean[] covered = new boolean[io.lettuce.core.cluster.SlotHash.SLOT_COUNT];
    List<CompletableFuture<List<String>>> perMaster = new ArrayList<>();
    List<int[]> masterSlots = new ArrayList<>();
    boolean script = byScript
        && (listScriptRefusedAt == NEVER || System.nanoTime() - listScriptRefusedAt >= LIST_SCRIPT_RETRY_NANOS);
    if (script) {
      try {
        for (RedisClusterNode node : c.getPartitions()) {
          if (!node.is(RedisClusterNode.NodeFlag.UPSTREAM) || node.getSlots().isEmpty()) {
            continue;
          }
          int[] slots = node.getSlots().stream().mapToInt(Integer::intValue).filter(s -> !covered[s]).toArray();
          if (slots.length == 0) {
            continue;
          }
          String[] args = new String[slots.length + 2];
          args[0] = Long.toString(minScore);
          args[1] = BudgetKeys.CLUSTER_INDEX_PREFIX;
          for (int i = 0; i < slots.length; i++) {
            covered[slots[i]] = true;
            args[i + 2] = BudgetKeys.clusterIndexTag(slots[i]);
          }
          masterSlots.add(slots);
          perMaster.add(c.getConnectionAsync(node.getNodeId()).thenCompose(n -> listOn(n, args)).toCompletableFuture());
        }
      } catch (RuntimeException e) {
        return CompletableFuture.failedFuture(e);
      }
    }
    CompletableFuture<SortedSet<String>> result = new CompletableFuture<>();
    CompletableFuture.allOf(perMaster.toArray(new CompletableFuture<?>[0])).whenComplete((done, ignored) -> {
      SortedSet<String> names = new TreeSet<>();
      List<String> oneByOne = new ArrayList<>();
      for (int i = 0; i < perMaster.size(); i++) {
        CompletableFuture<List<String>> f = perMaster.get(i);
        if (!f.isCompletedExceptionally()) {
          names.addAll(f.join());
          continue;
        }
        Throwable error = unwrap(f.handle((v, e) -> e).join());
        String message = String.valueOf(error.getMessage());
        if (message.startsWith("ERR broken key=")) {
          result.completeExceptionally(error); // a broken index key: the caller names it
          return;
        }
        if (message.contains("Error compiling script") || message.contains("Unknown lua shebang")
            || message.contains("Unexpected engine")) {
          listScriptRefusedAt = System.nanoTime(); // Redis before 7.0: one key at a time for a while
        }
        LOG.log(Level.FINE, "listing by script failed on a master; reading its index keys one by one", error);
        for (int s : masterSlots.get(i)) {
          oneByOne.add(BudgetKeys.clusterIndex(s));
        }
      }
      for (int s = 0; s < covered.length; s++) {
        if (!covered[s]) {
          oneByOne.add(BudgetKeys.clusterIndex(s));
        }
      }
      if (oneByOne.isEmpty()) {
        result.complete(names);
        return;
      }
      sortedSetMembers(oneByOne, minScore, giveUp).whenComplete((more, error) -> {
        if (error != null) {
          result.completeExceptionally(unwrap(error));
        } else {
          names.addAll(more);
          result.complete(names);
        }
      });
    });
    return result;
  }

  private static final long NEVER = Long.MIN_VALUE;
  /** After Redis refused to compile list.lua (before 7.0), the script is tried again after this. */
  static final long LIST_SCRIPT_RETRY_NANOS = TimeUnit.MINUTES.toNanos(5);
  private volatile long listScriptRefusedAt = NEVER;

  @SuppressWarnings("unchecked")
  private static CompletableFuture<List<String>> listOn(StatefulRedisConnection<String, String> node, String[] args) {
    CompletableFuture<List<String>> result = new CompletableFuture<>();
    RedisScriptingAsyncCommands<String, String> on = node.async();
    on.<List<Object>>evalsha(LuaScript.LIST.sha1(), ScriptOutputType.MULTI, new String[0], args).whenComplete((reply, error) -> {
      if (error == null) {
        result.complete((List<String>) (List<?>) reply);
      } else if (unwrap(error) instanceof RedisNoScriptException) {
        on.<List<Object>>eval(LuaScript.LIST.body(), ScriptOutputType.MULTI, new String[0], args).whenComplete((again, error2) -> {
          if (error2 == null) {
            result.complete((List<String>) (List<?>) again);
          } else {
            result.completeExceptionally(unwrap(error2));
          }
        });
      } else {
        result.completeExceptionally(unwrap(error));
      }
    });
    return result;
  }

  /**
   * One SCAN step with MATCH and COUNT (on a Cluster: Lettuce's scan over the masters one after the
   * other, the cursor saying which); {@code cursor} null to start.
   */
  public CompletableFuture<io.lettuce.core.KeyScanCursor<String>> scan(io.lettuce.core.ScanCursor cursor, String match,
      long count) {
    io.lettuce.core.ScanArgs args = io.lettuce.core.ScanArgs.Builder.matches(match).limit(count);
    try {
      if (connection instanceof StatefulRedisClusterConnection<String, String> c) {
        return (cursor == null ? c.async().scan(args) : c.async().scan(cursor, args)).toCompletableFuture();
      }
      StatefulRedisConnection<String, String> s = (StatefulRedisConnection<String, String>) connection;
      return (cursor == null ? s.async().scan(args) : s.async().scan(cursor, args)).toCompletableFuture();
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /**
   * A Cluster master as this client last saw the topology (Lettuce's partitions, refreshed at least
   * every {@link RedisConnectionOptions#topologyRefreshPeriod()} and after a failover): its node id,
   * {@code host:port}, and the slots it serves (a copy).
   */
  public record ClusterMaster(String nodeId, String address, java.util.BitSet slots) {}

  /**
   * The masters that serve slots, lowest first slot first; empty on a standalone Redis. For work
   * that walks the masters itself and must go on past one that does not answer (a SCAN of every
   * master that skips a dead one and tries its slots again on whoever serves them later).
   */
  public List<ClusterMaster> clusterMasters() {
    if (!(connection instanceof StatefulRedisClusterConnection<String, String> c)) {
      return List.of();
    }
    List<ClusterMaster> masters = new ArrayList<>();
    for (RedisClusterNode node : c.getPartitions()) {
      if (!node.is(RedisClusterNode.NodeFlag.UPSTREAM) || node.getSlots().isEmpty()) {
        continue;
      }
      java.util.BitSet slots = new java.util.BitSet(io.lettuce.core.cluster.SlotHash.SLOT_COUNT);
      node.getSlots().forEach(slots::set);
      masters.add(new ClusterMaster(node.getNodeId(), node.getUri().getHost() + ":" + node.getUri().getPort(), slots));
    }
    masters.sort(java.util.Comparator.comparingInt(m -> m.slots().nextSetBit(0)));
    return masters;
  }

  /**
   * One SCAN step with MATCH and COUNT on one Cluster node (by id, as {@link #clusterMasters()}
   * names it), with that node's own cursor; {@code cursor} null to start. Fails at once when this
   * is no Cluster connection or the node cannot be reached.
   */
  public CompletableFuture<io.lettuce.core.KeyScanCursor<String>> scanNode(String nodeId, io.lettuce.core.ScanCursor cursor,
      String match, long count) {
    if (!(connection instanceof StatefulRedisClusterConnection<String, String> c)) {
      return CompletableFuture.failedFuture(new IllegalStateException("not a Cluster connection"));
    }
    io.lettuce.core.ScanArgs args = io.lettuce.core.ScanArgs.Builder.matches(match).limit(count);
    try {
      return c.getConnectionAsync(nodeId)
          .thenCompose(n -> (cursor == null ? n.async().scan(args) : n.async().scan(cursor, args)).toCompletableFuture())
          .toCompletableFuture();
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
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

  private static Throwable unwrap(Throwable error) {
    return error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
  }

  @Override
  public void close() {
    shutdownQuietly();
  }

  private void shutdownQuietly() {
    scriptLoader.dispose();
    failoverEvents.dispose();
    FailoverWatch watch = failoverWatch.getAndSet(null);
    if (watch != null) {
      watch.close();
    }
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
    if (ownsResources) {
      resources.shutdown(0, 2, TimeUnit.SECONDS);
    }
  }
}
