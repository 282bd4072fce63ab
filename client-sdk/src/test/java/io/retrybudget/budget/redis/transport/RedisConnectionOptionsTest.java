package io.retrybudget.budget.redis.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.lettuce.core.RedisURI;
import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisServerProcess;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Addresses parsed with Lettuce's RedisURI, errors that name the value and never a password, bounded connects. */
class RedisConnectionOptionsTest {

  @ParameterizedTest
  @ValueSource(strings = {"localhost:6390", "http://localhost:6379", "redis://", "redis://:secret-pw@", "redis://host:99999",
      "redis//host:6379", "secret-pw@host:6379"})
  void anInvalidStandaloneUriIsRefusedNamingItWithoutThePassword(String uri) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> RedisConnectionOptions.standalone(uri));
    assertTrue(e.getMessage().startsWith("redisUri "), e.getMessage());
    assertFalse(e.getMessage().contains("secret-pw"), e.getMessage());
    assertTrue(e.getCause() == null, "no cause that could quote the URI");
  }

  @Test
  void aSentinelUriKeepsItsSentinelsMasterNameAndCredentialsInEveryCopy() {
    RedisConnectionOptions o = RedisConnectionOptions.standalone(
        "redis-sentinel://:secret-pw@s1:26380,s2/3#payments").build();
    assertTrue(o.isSentinel());
    assertFalse(o.isCluster());
    RedisURI u = o.uris().get(0);
    assertEquals(List.of("s1:26380", "s2:26379"), u.getSentinels().stream().map(s -> s.getHost() + ":" + s.getPort()).toList());
    assertEquals("payments", u.getSentinelMasterId());
    assertEquals(3, u.getDatabase());
    assertEquals("secret-pw", new String(u.getCredentialsProvider().resolveCredentials().block().getPassword()));
    assertEquals(o.connectTimeout(), u.getTimeout(), "the copy's handshake is bounded as a plain URI's");
    assertEquals("redis-sentinel://s1:26380,s2:26379#payments", o.toString(), "no password in the description");
    assertFalse(RedisConnectionOptions.standalone("redis://h:6379").build().isSentinel());
  }

  @ParameterizedTest
  @ValueSource(strings = {"redis-sentinel://:secret-pw@s1:26379", "redis-sentinel://#payments",
      "redis-sentinel://:secret-pw@s1:99999#payments"})
  void aSentinelUriWithoutMasterNameOrSentinelIsRefusedWithoutThePassword(String uri) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> RedisConnectionOptions.standalone(uri));
    assertTrue(e.getMessage().startsWith("redisUri "), e.getMessage());
    assertFalse(e.getMessage().contains("secret-pw"), e.getMessage());
  }

  @Test
  void aClusterHasNoSentinel() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> RedisConnectionOptions.cluster(List.of("redis-sentinel://s1:26379#m")));
    assertTrue(e.getMessage().contains("a Cluster has no Sentinel"), e.getMessage());
  }

  @Test
  void clusterSeedsTakeUrisWithCredentialsOrHostPort() {
    RedisConnectionOptions o = RedisConnectionOptions.cluster(List.of("rediss://user:pw@h1:7000", "h2:7001")).build();
    assertTrue(o.isCluster());
    RedisURI first = o.uris().get(0);
    assertEquals("h1", first.getHost());
    assertEquals(7000, first.getPort());
    assertTrue(first.isSsl());
    io.lettuce.core.RedisCredentials credentials = first.getCredentialsProvider().resolveCredentials().block();
    assertEquals("user", credentials.getUsername());
    assertEquals("pw", new String(credentials.getPassword()));
    assertEquals(7001, o.uris().get(1).getPort());
    assertEquals("cluster rediss://h1:7000,redis://h2:7001", o.toString(), "no credentials in toString");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> RedisConnectionOptions.cluster(List.of("redis://:secret-pw@h1:notaport")));
    assertFalse(e.getMessage().contains("secret-pw"), e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> RedisConnectionOptions.cluster(List.of("h1")));
    assertThrows(IllegalArgumentException.class, () -> RedisConnectionOptions.cluster(List.of("pw@h1:7000")));
    assertThrows(IllegalArgumentException.class, () -> RedisConnectionOptions.cluster(List.of()));
  }

  @Test
  void defaultsAndBounds() {
    RedisConnectionOptions o = RedisConnectionOptions.standalone("redis://localhost").build();
    assertEquals(Duration.ofSeconds(2), o.connectTimeout());
    assertEquals(6379, o.uris().get(0).getPort());
    assertEquals(Duration.ofSeconds(10), o.topologyRefreshPeriod());
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> RedisConnectionOptions.standalone("redis://localhost").connectTimeout(Duration.ofMinutes(5)));
    assertTrue(e.getMessage().startsWith("connectTimeout"), e.getMessage());
    assertEquals("redis://***@h:1", RedisConnectionOptions.mask("redis://u:p@ss/w@h:1"));
  }

  @Test
  void aPasswordWithReservedCharactersWorksPercentEncoded() {
    String password = "p@ss/w:rd";
    RedisServerProcess server = RedisServerProcess.startOnFreePort(List.of("--requirepass", password));
    try (RedisBudgetClient client = RedisBudgetClient.builder(RedisConnectionOptions.standalone(
        "redis://:p%40ss%2Fw%3Ard@127.0.0.1:" + server.port()).build()).build()) {
      RetryBudget b = client.budget(BudgetConfig.builder("authed").build());
      Eventually.await("granted by Redis", Duration.ofSeconds(3), () -> b.acquireBlocking() == BudgetDecision.GRANTED);
    } finally {
      server.close();
    }
  }

  @Test
  void buildingAClientNeverBlocksLongerThanTheConnectTimeout() throws Exception {
    // a port that accepts nothing: the TCP backlog is full, so a connect hangs until its timeout
    try (ServerSocket silent = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      long start = System.nanoTime();
      try (RedisBudgetClient client = RedisBudgetClient.builder(RedisConnectionOptions.standalone(
          "redis://127.0.0.1:" + silent.getLocalPort()).connectTimeout(Duration.ofMillis(300)).build()).build()) {
        long tookMs = (System.nanoTime() - start) / 1_000_000;
        // the connect timeout plus scheduling slack on a shared machine; the handshake alone would take seconds
        assertTrue(tookMs < 300 + 700, "build() took " + tookMs + " ms");
        assertTrue(client.isDegraded());
      }
    }
  }
}
