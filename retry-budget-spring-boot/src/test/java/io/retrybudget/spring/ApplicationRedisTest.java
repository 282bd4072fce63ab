package io.retrybudget.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.lettuce.core.RedisURI;
import io.lettuce.core.SslVerifyMode;
import io.lettuce.core.resource.ClientResources;
import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import io.retrybudget.testing.RedisExtension;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.data.redis.connection.RedisClusterConfiguration;
import org.springframework.data.redis.connection.RedisPassword;
import org.springframework.data.redis.connection.RedisSentinelConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceClientConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.StringRedisTemplate;

/**
 * The budgets on the application's own Redis ({@code spring.data.redis.*} through Spring Boot's
 * {@code LettuceConnectionFactory} and its {@code ClientResources}) when {@code retrybudget.redis.*}
 * is unset, against a real Redis; {@code retrybudget.redis.*} winning when set.
 */
class ApplicationRedisTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();

  private ApplicationContextRunner runner() {
    RedisURI uri = RedisURI.create(redis.uri());
    return new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(DataRedisAutoConfiguration.class, RetryBudgetAutoConfiguration.class))
        .withPropertyValues(
            "spring.data.redis.host=" + uri.getHost(),
            "spring.data.redis.port=" + uri.getPort(),
            "retrybudget.call-timeout=500ms",
            "retrybudget.budgets.app-redis.ratio=0.5",
            "retrybudget.budgets.app-redis.min-retries-per-second=50");
  }

  static BudgetDecision grantedFromRedis(RetryBudget budget) {
    budget.recordFirstAttempt();
    // the client connects in the background when build() gave up waiting; until then the fallback answers
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    BudgetDecision d = budget.acquireBlocking();
    while (d.reason() != BudgetDecision.Reason.GRANTED && System.nanoTime() < until) {
      d = budget.acquireBlocking();
    }
    return d;
  }

  @Test
  void withoutRetryBudgetRedisTheApplicationsRedisAndResourcesAreUsedAndNeverClosedByTheBudgets() {
    runner().run(context -> {
      RedisConnectionOptions options = context.getBean(RedisConnectionOptions.class);
      RedisURI uri = options.uris().get(0);
      assertEquals(RedisURI.create(redis.uri()).getPort(), uri.getPort());
      assertFalse(options.isCluster());
      ClientResources resources = context.getBean(ClientResources.class);
      assertSame(resources, options.clientResources(), "the application's Lettuce resources, no second set");

      RetryBudget budget = context.getBean(RetryBudgets.class).budget("app-redis");
      assertEquals(BudgetDecision.Reason.GRANTED, grantedFromRedis(budget).reason());
      StringRedisTemplate template = context.getBean(StringRedisTemplate.class);
      // EXISTS, not KEYS: Spring Data Redis 4.0's KEYS calls a method Lettuce 7 no longer has
      assertTrue(template.hasKey(new io.retrybudget.budget.redis.protocol.BudgetKeys("app-redis").config()),
          "the budget lives in the application's Redis");

      context.getBean(RedisBudgetClient.class).close();
      assertFalse(resources.eventExecutorGroup().isShuttingDown(), "closing the budgets leaves the resources alone");
      assertEquals("PONG", template.execute((org.springframework.data.redis.core.RedisCallback<String>) c -> c.ping()),
          "the application's Redis still answers through its own factory");
    });
  }

  @Test
  void retryBudgetRedisWinsWhenSet() {
    runner().withPropertyValues("retrybudget.redis.uri=" + redis.uri() + "/3").run(context -> {
      RedisConnectionOptions options = context.getBean(RedisConnectionOptions.class);
      assertEquals(3, options.uris().get(0).getDatabase());
      assertNull(options.clientResources(), "its own resources: the application's are not needed");
    });
    runner().withPropertyValues("retrybudget.redis.cluster-nodes[0]=127.0.0.1:1").run(context -> {
      RedisConnectionOptions options = context.getBean(RedisConnectionOptions.class);
      assertTrue(options.isCluster(), "cluster-nodes set in indexed form");
      assertEquals(1, options.uris().get(0).getPort());
    });
  }

  @Test
  void anApplicationsOwnOptionsBeanReplacesBothAndTheLastDefaultIsLocalhost() {
    RedisConnectionOptions own = RedisConnectionOptions.standalone(redis.uri()).build();
    runner().withBean(RedisConnectionOptions.class, () -> own)
        .run(context -> assertSame(own, context.getBean(RedisConnectionOptions.class)));
    assertEquals("redis://localhost:6379", PropertyErrors.connectionOptions(new RetryBudgetProperties()).toString());
  }

  @Test
  void aStaticMasterReplicaSetIsRefusedNamingTheProperty() {
    runner().withPropertyValues("spring.data.redis.masterreplica.nodes=" + redis.uri().substring("redis://".length()))
        .run(context -> {
          assertThat(context).hasFailed();
          assertThat(context.getStartupFailure()).rootCause().hasMessageContaining("retrybudget.redis.uri")
              .hasMessageContaining("master/replica");
        });
  }

  private static String credentials(RedisURI uri) {
    io.lettuce.core.RedisCredentials c = uri.getCredentialsProvider().resolveCredentials().block(Duration.ofSeconds(1));
    return c.getUsername() + ":" + (c.hasPassword() ? new String(c.getPassword()) : null);
  }

  @Test
  void sentinelAndClusterFactoriesAreReadWithCredentialsDatabaseAndTls() {
    RedisSentinelConfiguration sentinel = new RedisSentinelConfiguration().master("mymaster")
        .sentinel("s1", 26379).sentinel("s2", 26380);
    sentinel.setDatabase(2);
    sentinel.setUsername("app");
    sentinel.setPassword(RedisPassword.of("secret"));
    sentinel.setSentinelPassword(RedisPassword.of("sentinel-secret"));
    LettuceClientConfiguration tls = LettuceClientConfiguration.builder().useSsl().disablePeerVerification().and()
        .clientName("orders").build();
    RedisConnectionOptions options = ApplicationRedisConnection.options(new LettuceConnectionFactory(sentinel, tls), null);
    assertTrue(options.isSentinel());
    RedisURI master = options.uris().get(0);
    assertEquals("mymaster", master.getSentinelMasterId());
    assertEquals(2, master.getDatabase());
    assertEquals("app:secret", credentials(master));
    assertTrue(master.isSsl());
    assertEquals(SslVerifyMode.NONE, master.getVerifyMode());
    assertEquals("orders", master.getClientName());
    assertEquals(List.of("s1:26379", "s2:26380"), master.getSentinels().stream().map(s -> s.getHost() + ":" + s.getPort()).sorted().toList());
    assertEquals("null:sentinel-secret", credentials(master.getSentinels().get(0)));

    RedisClusterConfiguration cluster = new RedisClusterConfiguration(List.of("h1:7000", "h2:7001"));
    cluster.setPassword("cluster-secret");
    RedisConnectionOptions clustered = ApplicationRedisConnection.options(
        new LettuceConnectionFactory(cluster, LettuceClientConfiguration.builder().commandTimeout(Duration.ofSeconds(9)).build()), null);
    assertTrue(clustered.isCluster());
    assertEquals(List.of("h1:7000", "h2:7001"), clustered.uris().stream().map(u -> u.getHost() + ":" + u.getPort()).sorted().toList());
    assertEquals("null:cluster-secret", credentials(clustered.uris().get(0)));
    assertFalse(clustered.uris().get(0).isSsl());
    assertEquals(Duration.ofSeconds(1), clustered.commandTimeout(), "the budgets' own timeouts, not the application's");
  }
}
