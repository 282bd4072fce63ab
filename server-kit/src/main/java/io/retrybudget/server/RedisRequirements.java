package io.retrybudget.server;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisServerCommands;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * What the Idempotency-Key store needs of Redis, checked at start: an eviction policy that never
 * drops a record ({@code maxmemory-policy noeviction}: an evicted answer or claim lets the key run
 * again) and persistence that survives a restart ({@code appendonly yes}: without it a restart
 * during a handler lets the key run twice). {@link #verify} reads {@code CONFIG GET} on every
 * master and refuses to start or warns, as configured: by default it refuses an evicting policy,
 * warns about missing persistence, and warns when the server does not allow {@code CONFIG} (a
 * managed Redis often does not: then nothing could be checked). Blocking: call it at start, off
 * any event loop. Immutable; from {@link #builder()}.
 */
public final class RedisRequirements {
  private static final System.Logger LOG = System.getLogger(RedisRequirements.class.getName());

  /** What to do about a finding. */
  public enum Action { REFUSE, WARN, IGNORE }

  /** What a check can find. */
  public enum Kind {
    /** {@code maxmemory-policy} other than {@code noeviction}. */
    EVICTION,
    /** {@code appendonly no} (RDB snapshots at most), or AOF with {@code appendfsync no}. */
    NO_PERSISTENCE,
    /** The server refused {@code CONFIG GET} (or did not answer): nothing could be checked. */
    UNCHECKED
  }

  /** One finding on one node ({@code host:port}). */
  public record Finding(String node, Kind kind, String detail) {}

  private final Action onEviction;
  private final Action onNoPersistence;
  private final Action onUnchecked;
  private final Consumer<String> warnings;

  private RedisRequirements(Builder b) {
    this.onEviction = b.onEviction;
    this.onNoPersistence = b.onNoPersistence;
    this.onUnchecked = b.onUnchecked;
    this.warnings = b.warnings;
  }

  public static Builder builder() {
    return new Builder();
  }

  /** Refuse an evicting policy, warn about no persistence, warn when CONFIG is refused. */
  public static RedisRequirements defaults() {
    return builder().build();
  }

  /**
   * The findings for one node's settings ({@code maxmemory-policy}, {@code appendonly},
   * {@code appendfsync}, {@code save}, as CONFIG GET names them): pure, no I/O.
   */
  public static List<Finding> evaluate(String node, Map<String, String> config) {
    List<Finding> found = new ArrayList<>();
    String policy = config.getOrDefault("maxmemory-policy", "");
    if (!policy.equals("noeviction")) {
      found.add(new Finding(node, Kind.EVICTION, "maxmemory-policy is '" + policy + "' (maxmemory "
          + config.getOrDefault("maxmemory", "?") + "): Redis may evict a stored answer or a claim under memory "
          + "pressure, and its key then runs again; set maxmemory-policy noeviction"));
    }
    String aof = config.getOrDefault("appendonly", "");
    String save = config.getOrDefault("save", "").strip();
    if (!aof.equals("yes")) {
      found.add(new Finding(node, Kind.NO_PERSISTENCE, "appendonly is '" + aof + "'" + (save.isEmpty()
          ? " and no RDB snapshots: a restart loses every stored answer and claim"
          : ", RDB snapshots only (save '" + save + "'): a restart loses what changed since the last snapshot")
          + ", and a key whose record was lost runs again; set appendonly yes (appendfsync everysec or always)"));
    } else if (config.getOrDefault("appendfsync", "").equals("no")) {
      found.add(new Finding(node, Kind.NO_PERSISTENCE, "appendonly yes with appendfsync no: the OS decides when "
          + "the log reaches the disk (often 30 s), and a crash loses the records since; set appendfsync everysec or always"));
    }
    return found;
  }

  /** Reads every master's settings and returns what it found (no action taken). */
  public List<Finding> check(RedisConnectionOptions options) {
    Objects.requireNonNull(options, "options must not be null");
    Map<String, Map<String, String>> nodes = new LinkedHashMap<>();
    List<Finding> found = new ArrayList<>();
    read(options, nodes, found);
    nodes.forEach((node, config) -> found.addAll(evaluate(node, config)));
    return found;
  }

  /**
   * Checks, logs a warning for each finding configured WARN, and throws when one is configured
   * REFUSE. Returns every finding.
   *
   * @throws IllegalStateException naming the setting and the node, when a finding is to be refused
   */
  public List<Finding> verify(RedisConnectionOptions options) {
    List<Finding> found = check(options);
    List<String> refused = new ArrayList<>();
    for (Finding f : found) {
      Action action = switch (f.kind()) {
        case EVICTION -> onEviction;
        case NO_PERSISTENCE -> onNoPersistence;
        case UNCHECKED -> onUnchecked;
      };
      if (action == Action.REFUSE) {
        refused.add(f.node() + ": " + f.detail());
      } else if (action == Action.WARN) {
        warnings.accept("the Idempotency-Key store cannot keep its promise on this Redis: " + f.node() + ": " + f.detail());
      }
    }
    if (!refused.isEmpty()) {
      throw new IllegalStateException("Redis does not meet the Idempotency-Key store's requirements (see "
          + "server-kit README, 'What Redis must be'): " + String.join("; ", refused));
    }
    return found;
  }

  private static final List<String> SETTINGS = List.of("maxmemory-policy", "maxmemory", "appendonly", "appendfsync", "save");

  private static void read(RedisConnectionOptions options, Map<String, Map<String, String>> nodes, List<Finding> found) {
    Duration timeout = options.commandTimeout().plus(options.connectTimeout());
    if (options.isCluster()) {
      RedisClusterClient client = RedisClusterClient.create(options.uris());
      try (StatefulRedisClusterConnection<String, String> c = client.connect()) {
        c.setTimeout(timeout);
        for (RedisClusterNode n : c.getPartitions()) {
          if (n.is(RedisClusterNode.NodeFlag.UPSTREAM)) {
            String node = n.getUri().getHost() + ":" + n.getUri().getPort();
            readNode(node, c.getConnection(n.getNodeId()).sync(), nodes, found);
          }
        }
      } catch (RuntimeException e) {
        found.add(new Finding(String.valueOf(options.uris()), Kind.UNCHECKED, "could not read the Cluster: " + e));
      } finally {
        client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
      }
      return;
    }
    RedisURI uri = options.uris().get(0);
    String node = uri.getHost() + ":" + uri.getPort();
    RedisClient client = RedisClient.create(uri);
    try (StatefulRedisConnection<String, String> c = client.connect()) {
      c.setTimeout(timeout);
      readNode(node, c.sync(), nodes, found);
    } catch (RuntimeException e) {
      found.add(new Finding(node, Kind.UNCHECKED, "could not connect: " + e));
    } finally {
      client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
    }
  }

  private static void readNode(String node, RedisServerCommands<String, String> commands,
      Map<String, Map<String, String>> nodes, List<Finding> found) {
    Map<String, String> config = new LinkedHashMap<>();
    try {
      for (String setting : SETTINGS) {
        config.putAll(commands.configGet(setting)); // one per call: Redis 6.2 takes one pattern
      }
    } catch (RuntimeException e) {
      found.add(new Finding(node, Kind.UNCHECKED, "CONFIG GET was refused (" + e.getMessage()
          + "): maxmemory-policy and persistence could not be checked; make sure they are noeviction and AOF"));
      return;
    }
    nodes.put(node, config);
  }

  public static final class Builder {
    private Action onEviction = Action.REFUSE;
    private Action onNoPersistence = Action.WARN;
    private Action onUnchecked = Action.WARN;
    private Consumer<String> warnings = message -> LOG.log(System.Logger.Level.WARNING, message);

    private Builder() {}

    /** An evicting {@code maxmemory-policy} (default REFUSE). */
    public Builder onEviction(Action action) {
      this.onEviction = Objects.requireNonNull(action, "onEviction must not be null");
      return this;
    }

    /** No AOF, or AOF with {@code appendfsync no} (default WARN). */
    public Builder onNoPersistence(Action action) {
      this.onNoPersistence = Objects.requireNonNull(action, "onNoPersistence must not be null");
      return this;
    }

    /** CONFIG refused or Redis not reachable, so nothing could be checked (default WARN). */
    public Builder onUnchecked(Action action) {
      this.onUnchecked = Objects.requireNonNull(action, "onUnchecked must not be null");
      return this;
    }

    /** Where warnings go (default: {@link System.Logger} WARNING, logger {@code io.retrybudget.server.RedisRequirements}). */
    public Builder warnings(Consumer<String> sink) {
      this.warnings = Objects.requireNonNull(sink, "warnings must not be null");
      return this;
    }

    public RedisRequirements build() {
      return new RedisRequirements(this);
    }
  }
}
