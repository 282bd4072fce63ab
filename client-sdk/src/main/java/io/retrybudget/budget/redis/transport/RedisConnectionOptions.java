package io.retrybudget.budget.redis.transport;

import io.lettuce.core.RedisURI;
import io.lettuce.core.SslOptions;
import io.lettuce.core.resource.ClientResources;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Where Redis is and how the shared connection behaves when it is slow or gone. Lettuce's defaults
 * queue commands without bound while disconnected and back off reconnects up to 30 s: these
 * defaults reject commands while disconnected, bound the queue, reconnect within half a second and
 * give up a connect attempt after 2 s.
 *
 * <p>Addresses are parsed with Lettuce's own {@link RedisURI} when the builder is made: an invalid
 * one is an {@link IllegalArgumentException} that names it (with any password masked).
 */
public final class RedisConnectionOptions {
  private final List<RedisURI> uris;
  private final boolean cluster;
  private final Duration commandTimeout;
  private final Duration connectTimeout;
  private final Duration reconnectDelayMax;
  private final Duration topologyRefreshPeriod;
  private final int requestQueueSize;
  private final ClientResources clientResources;
  private final SslOptions sslOptions;

  private RedisConnectionOptions(Builder b) {
    this.uris = b.uris;
    this.cluster = b.cluster;
    this.commandTimeout = b.commandTimeout;
    this.connectTimeout = b.connectTimeout;
    this.reconnectDelayMax = b.reconnectDelayMax;
    this.topologyRefreshPeriod = b.topologyRefreshPeriod;
    this.requestQueueSize = b.requestQueueSize;
    this.clientResources = b.clientResources;
    this.sslOptions = b.sslOptions;
  }

  /**
   * A standalone Redis: {@code redis://[[user]:password@]host[:port][/database]} or {@code rediss://...}
   * (TLS), as Lettuce's {@link RedisURI} reads it (percent-encode {@code @ / :} in a password); or one
   * that Redis Sentinel manages: {@code redis-sentinel://[[user]:password@]host[:port][,host2[:port2]...][/database]#masterName}
   * ({@code rediss-sentinel://} for TLS), the addresses being the Sentinels' (port 26379 when left
   * out). With Sentinel the connection asks the Sentinels for the master at every (re)connect, so a
   * failover is followed like a restart (the scripts are loaded into the new master on connect).
   */
  public static Builder standalone(String redisUri) {
    Objects.requireNonNull(redisUri, "redisUri must not be null");
    return new Builder(List.of(parse("redisUri", redisUri)), false);
  }

  /**
   * A standalone Redis, or one that Redis Sentinel manages, from a {@link RedisURI} the caller made
   * (from a framework's own configuration, say): its host and port, or its Sentinels and master
   * name, credentials, database, TLS settings and client name are used; a copy is kept.
   */
  public static Builder standalone(RedisURI uri) {
    Objects.requireNonNull(uri, "uri must not be null");
    if (uri.getSentinels().isEmpty()) {
      requireAddress("uri", uri);
    } else {
      for (RedisURI sentinel : uri.getSentinels()) {
        requireAddress("uri's Sentinel", sentinel);
      }
      if (uri.getSentinelMasterId() == null || uri.getSentinelMasterId().isBlank()) {
        throw new IllegalArgumentException("uri names Sentinels but no master");
      }
    }
    return new Builder(List.of(copy(uri)), false);
  }

  /**
   * A Redis Cluster from seed {@link RedisURI}s the caller made; the credentials and TLS settings of
   * the first apply to every node of the Cluster. Copies are kept.
   */
  public static Builder clusterSeeds(List<RedisURI> seeds) {
    if (seeds == null || seeds.isEmpty()) {
      throw new IllegalArgumentException("clusterSeeds must name at least one node");
    }
    List<RedisURI> copies = new ArrayList<>();
    for (RedisURI seed : seeds) {
      if (seed == null) {
        throw new IllegalArgumentException("clusterSeeds entries must not be null");
      }
      if (!seed.getSentinels().isEmpty()) {
        throw new IllegalArgumentException("clusterSeeds entries must not name Sentinels (a Cluster has none)");
      }
      requireAddress("clusterSeeds entry", seed);
      copies.add(copy(seed));
    }
    return new Builder(List.copyOf(copies), true);
  }

  private static void requireAddress(String what, RedisURI uri) {
    if (uri.getHost() == null || uri.getHost().isEmpty()) {
      throw new IllegalArgumentException(what + " has no host");
    }
    if (uri.getPort() < 1 || uri.getPort() > 65535) {
      throw new IllegalArgumentException(what + " has a bad port: " + uri.getPort());
    }
  }

  /** True for {@code redis-sentinel://} and {@code rediss-sentinel://} addresses. */
  public boolean isSentinel() {
    return !cluster && !uris.get(0).getSentinels().isEmpty();
  }

  /**
   * A Redis Cluster, from some of its nodes: each {@code redis://[[user]:password@]host:port},
   * {@code rediss://...} or a bare {@code host:port}. The credentials and TLS of the first seed
   * apply to every node of the Cluster.
   */
  public static Builder cluster(List<String> nodes) {
    if (nodes == null || nodes.isEmpty()) {
      throw new IllegalArgumentException("clusterNodes must name at least one node");
    }
    List<RedisURI> seeds = new ArrayList<>();
    for (String node : nodes) {
      if (node == null) {
        throw new IllegalArgumentException("clusterNodes entries must not be null");
      }
      seeds.add(node.contains("://") ? parse("clusterNodes entry", node) : hostPort(node));
    }
    return new Builder(List.copyOf(seeds), true);
  }

  private static RedisURI parse(String what, String value) {
    String scheme = value.contains("://") ? value.substring(0, value.indexOf("://")) : "";
    if (scheme.equals("redis-sentinel") || scheme.equals("rediss-sentinel")) {
      if (what.startsWith("clusterNodes")) {
        throw new IllegalArgumentException(what + " must start with redis:// or rediss:// (a Cluster has no "
            + "Sentinel), was '" + mask(value) + "'");
      }
      return parseSentinel(what, value);
    }
    if (!scheme.equals("redis") && !scheme.equals("rediss")) {
      throw new IllegalArgumentException(what + " must start with redis://, rediss:// or redis-sentinel://, was '"
          + mask(value) + "'");
    }
    // Lettuce reads "host:notaport" as a host name: check the port ourselves
    String rest = value.substring(value.indexOf("://") + 3);
    int end = rest.length();
    for (char c : new char[] {'/', '?', '#'}) {
      int i = rest.indexOf(c, Math.max(0, rest.lastIndexOf('@')));
      if (i >= 0) {
        end = Math.min(end, i);
      }
    }
    String hostPort = rest.substring(rest.lastIndexOf('@') + 1, end);
    int colon = hostPort.lastIndexOf(':');
    if (colon >= 0 && hostPort.indexOf(']') < colon && !hostPort.substring(colon + 1).matches("[0-9]{1,5}")) {
      throw new IllegalArgumentException(what + " has a bad port: '" + mask(value) + "'");
    }
    RedisURI uri;
    try {
      uri = RedisURI.create(value);
    } catch (RuntimeException e) {
      // no cause: Lettuce's message may quote the URI, password and all
      throw new IllegalArgumentException(what + " is not a valid Redis URI: '" + mask(value) + "'");
    }
    if (uri.getHost() == null || uri.getHost().isEmpty()) {
      throw new IllegalArgumentException(what + " has no host: '" + mask(value) + "'");
    }
    if (uri.getPort() < 1 || uri.getPort() > 65535) {
      throw new IllegalArgumentException(what + " has a bad port: '" + mask(value) + "'");
    }
    return uri;
  }

  private static RedisURI parseSentinel(String what, String value) {
    RedisURI uri;
    try {
      uri = RedisURI.create(value);
    } catch (RuntimeException e) {
      throw new IllegalArgumentException(what + " is not a valid Redis Sentinel URI: '" + mask(value) + "'");
    }
    if (uri.getSentinels().isEmpty()) {
      throw new IllegalArgumentException(what + " names no Sentinel: '" + mask(value) + "'");
    }
    for (RedisURI sentinel : uri.getSentinels()) {
      if (sentinel.getHost() == null || sentinel.getHost().isEmpty() || sentinel.getPort() < 1 || sentinel.getPort() > 65535) {
        throw new IllegalArgumentException(what + " has a Sentinel without host or with a bad port: '" + mask(value) + "'");
      }
    }
    if (uri.getSentinelMasterId() == null || uri.getSentinelMasterId().isBlank()) {
      throw new IllegalArgumentException(what + " names no master: end it with #<master name>, as in "
          + "redis-sentinel://sentinel-1:26379,sentinel-2:26379#mymaster; was '" + mask(value) + "'");
    }
    return uri;
  }

  private static RedisURI hostPort(String node) {
    int colon = node.lastIndexOf(':');
    if (colon <= 0 || colon == node.length() - 1 || node.contains("@")) {
      throw new IllegalArgumentException(
          "clusterNodes entries must be host:port or redis://..., was '" + mask(node) + "'");
    }
    int port;
    try {
      port = Integer.parseInt(node.substring(colon + 1));
    } catch (NumberFormatException e) {
      port = -1;
    }
    if (port < 1 || port > 65535) {
      throw new IllegalArgumentException("clusterNodes entry has a bad port: '" + node + "'");
    }
    return RedisURI.create(node.substring(0, colon), port);
  }

  /** A URI fit for a log or an error: whatever stands before the last '@' after the scheme is masked. */
  public static String mask(String uri) {
    int at = uri.lastIndexOf('@');
    if (at < 0) {
      return uri;
    }
    int start = uri.indexOf("://");
    start = start < 0 ? 0 : start + 3;
    return at < start ? uri : uri.substring(0, start) + "***" + uri.substring(at);
  }

  public boolean isCluster() {
    return cluster;
  }

  /**
   * The standalone URI or the Cluster's seeds, as fresh copies (RedisURI is mutable). Their timeout,
   * which bounds a connection's handshake (HELLO, AUTH), is the connect timeout; commands have
   * their own ({@link #commandTimeout()}).
   */
  public List<RedisURI> uris() {
    List<RedisURI> copies = new ArrayList<>(uris.size());
    for (RedisURI u : uris) {
      RedisURI copy = copy(u);
      copy.setTimeout(connectTimeout);
      copies.add(copy);
    }
    return copies;
  }

  private static RedisURI copy(RedisURI u) {
    RedisURI.Builder b = RedisURI.builder(u);
    if (!u.getSentinels().isEmpty()) {
      // RedisURI.builder(source) copies neither the Sentinels nor the master's name
      for (RedisURI sentinel : u.getSentinels()) {
        b.withSentinel(sentinel);
      }
      b.withSentinelMasterId(u.getSentinelMasterId());
    }
    return b.build();
  }

  /**
   * Lettuce resources (event loops, timer, event bus, reconnect delay) owned by someone else that
   * the connection runs on, or null: the connection then has resources of its own.
   */
  public ClientResources clientResources() {
    return clientResources;
  }

  /** TLS settings (trust and key material, protocols) for {@code rediss} addresses, or null: the JDK's defaults. */
  public SslOptions sslOptions() {
    return sslOptions;
  }

  public Duration commandTimeout() {
    return commandTimeout;
  }

  public Duration connectTimeout() {
    return connectTimeout;
  }

  public Duration reconnectDelayMax() {
    return reconnectDelayMax;
  }

  public Duration topologyRefreshPeriod() {
    return topologyRefreshPeriod;
  }

  public int requestQueueSize() {
    return requestQueueSize;
  }

  /** The addresses without credentials. */
  @Override
  public String toString() {
    List<String> where = new ArrayList<>();
    for (RedisURI u : uris) {
      if (!u.getSentinels().isEmpty()) {
        List<String> sentinels = new ArrayList<>();
        for (RedisURI s : u.getSentinels()) {
          sentinels.add(s.getHost() + ":" + s.getPort());
        }
        where.add((u.isSsl() ? "rediss-sentinel://" : "redis-sentinel://") + String.join(",", sentinels) + "#"
            + u.getSentinelMasterId());
      } else {
        where.add((u.isSsl() ? "rediss://" : "redis://") + u.getHost() + ":" + u.getPort());
      }
    }
    return (cluster ? "cluster " : "") + String.join(",", where);
  }

  public static final class Builder {
    private final List<RedisURI> uris;
    private final boolean cluster;
    private Duration commandTimeout = Duration.ofSeconds(1);
    private Duration connectTimeout = Duration.ofSeconds(2);
    private Duration reconnectDelayMax = Duration.ofMillis(500);
    private Duration topologyRefreshPeriod = Duration.ofSeconds(10);
    private int requestQueueSize = 4096;
    private ClientResources clientResources;
    private SslOptions sslOptions;

    private Builder(List<RedisURI> uris, boolean cluster) {
      this.uris = uris;
      this.cluster = cluster;
    }

    /** Lettuce's own timeout, which clears commands a paused Redis never answers. */
    public Builder commandTimeout(Duration timeout) {
      if (timeout == null || timeout.isNegative() || timeout.isZero()) {
        throw new IllegalArgumentException("commandTimeout must be positive, was " + timeout);
      }
      this.commandTimeout = timeout;
      return this;
    }

    /** How long one attempt to open a connection may take (default 2 s, at most 30 s). */
    public Builder connectTimeout(Duration timeout) {
      if (timeout == null || timeout.isNegative() || timeout.isZero() || timeout.compareTo(Duration.ofSeconds(30)) > 0) {
        throw new IllegalArgumentException("connectTimeout must be in (0, 30s], was " + timeout);
      }
      this.connectTimeout = timeout;
      return this;
    }

    public Builder reconnectDelayMax(Duration delay) {
      if (delay == null || delay.isNegative() || delay.isZero() || delay.compareTo(Duration.ofSeconds(1)) >= 0) {
        throw new IllegalArgumentException("reconnectDelayMax must be in (0, 1s), was " + delay);
      }
      this.reconnectDelayMax = delay;
      return this;
    }

    /**
     * Cluster only: how often the topology is re-read whatever happens (default 10 s, in [1 s, 10 min]);
     * it is also re-read at once on MOVED/ASK redirects, unknown nodes, uncovered slots and repeated
     * reconnects (adaptive refresh, at most every 500 ms).
     */
    public Builder topologyRefreshPeriod(Duration period) {
      if (period == null || period.compareTo(Duration.ofSeconds(1)) < 0 || period.compareTo(Duration.ofMinutes(10)) > 0) {
        throw new IllegalArgumentException("topologyRefreshPeriod must be in [1s, 10min], was " + period);
      }
      this.topologyRefreshPeriod = period;
      return this;
    }

    public Builder requestQueueSize(int size) {
      if (size < 1) {
        throw new IllegalArgumentException("requestQueueSize must be positive, was " + size);
      }
      this.requestQueueSize = size;
      return this;
    }

    /**
     * Runs the connection on these Lettuce resources (an application's, so it adds no event loops
     * or threads of its own) instead of resources of its own. The owner keeps them open until
     * after every store made with these options is closed; closing a store never shuts them down.
     * Their reconnect delay replaces {@link #reconnectDelayMax(Duration)}, which only shapes the
     * store's own resources.
     */
    public Builder clientResources(ClientResources resources) {
      this.clientResources = Objects.requireNonNull(resources, "clientResources must not be null");
      return this;
    }

    /** TLS settings for {@code rediss} addresses (a private CA's trust store, a client certificate). */
    public Builder sslOptions(SslOptions options) {
      this.sslOptions = Objects.requireNonNull(options, "sslOptions must not be null");
      return this;
    }

    public RedisConnectionOptions build() {
      return new RedisConnectionOptions(this);
    }
  }
}
