package io.retrybudget.spring;

import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisURI;
import io.lettuce.core.resource.ClientResources;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import org.springframework.boot.data.redis.autoconfigure.DataRedisConnectionDetails;
import org.springframework.data.redis.connection.RedisClusterConfiguration;
import org.springframework.data.redis.connection.RedisNode;
import org.springframework.data.redis.connection.RedisPassword;
import org.springframework.data.redis.connection.RedisSentinelConfiguration;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceClientConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * The budgets' Redis read from the application's {@link LettuceConnectionFactory} (which Spring Boot
 * builds from {@code spring.data.redis.*} or any {@link DataRedisConnectionDetails}): the same
 * standalone server, Sentinel-managed master or Cluster, credentials, database, TLS settings
 * (including an SSL bundle's trust and key material) and client name, and the factory's Lettuce
 * {@link ClientResources}, so the budgets add no event loops or threads. The budgets' connection is
 * still their own, with their own client options (commands rejected while disconnected, a bounded
 * queue, no replay of scripts after a reconnect, short timeouts): it is never the application's
 * connection, and closing it never shuts the resources down.
 */
final class ApplicationRedisConnection {
  private ApplicationRedisConnection() {}

  static RedisConnectionOptions options(LettuceConnectionFactory factory, DataRedisConnectionDetails details) {
    LettuceClientConfiguration client = factory.getClientConfiguration();
    Consumer<RedisURI.Builder> tls = b -> {
      b.withSsl(client.isUseSsl());
      if (client.isUseSsl()) {
        b.withVerifyPeer(client.getVerifyMode()).withStartTls(client.isStartTls());
      }
      client.getClientName().ifPresent(b::withClientName);
    };
    RedisConnectionOptions.Builder options;
    if (factory.isClusterAware()) {
      RedisClusterConfiguration cluster = factory.getClusterConfiguration();
      List<RedisURI> seeds = new ArrayList<>();
      for (RedisNode node : cluster.getClusterNodes()) {
        RedisURI.Builder b = RedisURI.builder().withHost(node.getHost()).withPort(node.getPort());
        authenticate(b, cluster.getUsername(), cluster.getPassword());
        tls.accept(b);
        seeds.add(b.build());
      }
      options = RedisConnectionOptions.clusterSeeds(seeds);
    } else if (factory.isRedisSentinelAware()) {
      RedisSentinelConfiguration sentinel = factory.getSentinelConfiguration();
      RedisURI.Builder b = RedisURI.builder().withSentinelMasterId(sentinel.getMaster().getName())
          .withDatabase(sentinel.getDatabase());
      authenticate(b, sentinel.getUsername(), sentinel.getPassword());
      tls.accept(b);
      for (RedisNode node : sentinel.getSentinels()) {
        RedisURI.Builder s = RedisURI.builder().withHost(node.getHost()).withPort(node.getPort());
        authenticate(s, sentinel.getSentinelUsername(), sentinel.getSentinelPassword());
        tls.accept(s);
        b.withSentinel(s.build());
      }
      options = RedisConnectionOptions.standalone(b.build());
    } else {
      if (details != null && details.getMasterReplica() != null) {
        throw new InvalidRetryBudgetPropertyException("retrybudget.redis.uri", "the application's Redis is a static "
            + "master/replica set, where the budgets' connection cannot tell which node is the master: set "
            + "retrybudget.redis.uri to the master (or retrybudget.redis.cluster-nodes)");
      }
      RedisStandaloneConfiguration standalone = factory.getStandaloneConfiguration();
      RedisURI.Builder b = RedisURI.builder().withHost(standalone.getHostName()).withPort(standalone.getPort())
          .withDatabase(standalone.getDatabase());
      authenticate(b, standalone.getUsername(), standalone.getPassword());
      tls.accept(b);
      options = RedisConnectionOptions.standalone(b.build());
    }
    ClientResources resources = client.getClientResources().orElseGet(() -> {
      AbstractRedisClient nativeClient = factory.isRunning() ? factory.getNativeClient() : null;
      return nativeClient == null ? null : nativeClient.getResources();
    });
    if (resources != null) {
      options.clientResources(resources);
    }
    if (client.isUseSsl()) {
      client.getClientOptions().map(ClientOptions::getSslOptions).ifPresent(options::sslOptions);
    }
    return options.build();
  }

  private static void authenticate(RedisURI.Builder b, String username, RedisPassword password) {
    if (password == null || !password.isPresent()) {
      return;
    }
    if (username != null && !username.isEmpty()) {
      b.withAuthentication(username, password.get());
    } else {
      b.withPassword(password.get());
    }
  }
}
