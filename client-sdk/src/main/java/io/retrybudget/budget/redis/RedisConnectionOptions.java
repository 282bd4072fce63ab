package io.retrybudget.budget.redis;

import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * Where Redis is and how the shared connection behaves when it is slow or gone. Lettuce's defaults
 * queue commands without bound while disconnected and back off reconnects up to 30 s; these
 * defaults reject commands while disconnected, bound the queue and reconnect within half a second.
 */
public final class RedisConnectionOptions {
  private final String redisUri;
  private final List<String> clusterNodes;
  private final Duration commandTimeout;
  private final Duration reconnectDelayMax;
  private final int requestQueueSize;

  private RedisConnectionOptions(Builder b) {
    this.redisUri = b.redisUri;
    this.clusterNodes = b.clusterNodes;
    this.commandTimeout = b.commandTimeout;
    this.reconnectDelayMax = b.reconnectDelayMax;
    this.requestQueueSize = b.requestQueueSize;
  }

  /** A standalone Redis: {@code redis://[password@]host:port} or {@code rediss://...}. */
  public static Builder standalone(String redisUri) {
    return new Builder(Objects.requireNonNull(redisUri, "redisUri must not be null"), List.of());
  }

  /** A Redis Cluster, from some of its nodes as {@code host:port}. */
  public static Builder cluster(List<String> nodes) {
    if (nodes == null || nodes.isEmpty()) {
      throw new IllegalArgumentException("clusterNodes must name at least one host:port");
    }
    for (String node : nodes) {
      int colon = node.lastIndexOf(':');
      if (colon <= 0 || colon == node.length() - 1) {
        throw new IllegalArgumentException("clusterNodes entries must be host:port, was '" + node + "'");
      }
      try {
        int port = Integer.parseInt(node.substring(colon + 1));
        if (port < 1 || port > 65535) {
          throw new NumberFormatException();
        }
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("clusterNodes entry has a bad port: '" + node + "'");
      }
    }
    return new Builder(null, List.copyOf(nodes));
  }

  public boolean isCluster() {
    return redisUri == null;
  }

  public String redisUri() {
    return redisUri;
  }

  public List<String> clusterNodes() {
    return clusterNodes;
  }

  public Duration commandTimeout() {
    return commandTimeout;
  }

  public Duration reconnectDelayMax() {
    return reconnectDelayMax;
  }

  public int requestQueueSize() {
    return requestQueueSize;
  }

  public static final class Builder {
    private final String redisUri;
    private final List<String> clusterNodes;
    private Duration commandTimeout = Duration.ofSeconds(1);
    private Duration reconnectDelayMax = Duration.ofMillis(500);
    private int requestQueueSize = 4096;

    private Builder(String redisUri, List<String> clusterNodes) {
      this.redisUri = redisUri;
      this.clusterNodes = clusterNodes;
    }

    /** Lettuce's own timeout, which clears commands a paused Redis never answers. */
    public Builder commandTimeout(Duration timeout) {
      if (timeout == null || timeout.isNegative() || timeout.isZero()) {
        throw new IllegalArgumentException("commandTimeout must be positive, was " + timeout);
      }
      this.commandTimeout = timeout;
      return this;
    }

    public Builder reconnectDelayMax(Duration delay) {
      if (delay == null || delay.isNegative() || delay.isZero() || delay.compareTo(Duration.ofSeconds(1)) >= 0) {
        throw new IllegalArgumentException("reconnectDelayMax must be in (0, 1s), was " + delay);
      }
      this.reconnectDelayMax = delay;
      return this;
    }

    public Builder requestQueueSize(int size) {
      if (size < 1) {
        throw new IllegalArgumentException("requestQueueSize must be positive, was " + size);
      }
      this.requestQueueSize = size;
      return this;
    }

    public RedisConnectionOptions build() {
      return new RedisConnectionOptions(this);
    }
  }
}
