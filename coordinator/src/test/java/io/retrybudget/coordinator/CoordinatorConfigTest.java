package io.retrybudget.coordinator;

import io.retrybudget.coordinator.http.HttpLimits;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class CoordinatorConfigTest {

  @Test
  void defaults() {
    CoordinatorConfig c = CoordinatorConfig.fromEnvironment(Map.of());
    assertFalse(c.hasRedis());
    assertEquals(8080, c.port());
    assertTrue(c.tokenGenerated());
    assertEquals(48, c.token().length());
    assertEquals(1000, c.maxBudgets());
    assertEquals("local", c.describeRedis());
  }

  @Test
  void readsEveryVariable() {
    CoordinatorConfig c = CoordinatorConfig.fromEnvironment(Map.of(
        "REDIS_CLUSTER_NODES", "a:7000, b:7001", "COORDINATOR_PORT", "9090", "COORDINATOR_TOKEN", "s3cret",
        "COORDINATOR_MAX_BUDGETS", "5", "COORDINATOR_BUDGETS_FILE", "/etc/budgets.json"));
    assertEquals(List.of("a:7000", "b:7001"), c.clusterNodes());
    assertEquals(9090, c.port());
    assertEquals("s3cret", c.token());
    assertFalse(c.tokenGenerated());
    assertEquals(5, c.maxBudgets());
    assertEquals("/etc/budgets.json", c.budgetsFile().toString());
  }

  @Test
  void badValuesNameTheVariable() {
    assertMessage("COORDINATOR_PORT", Map.of("COORDINATOR_PORT", "http"));
    assertMessage("COORDINATOR_PORT", Map.of("COORDINATOR_PORT", "70000"));
    assertMessage("REDIS_URL", Map.of("REDIS_URL", "localhost:6379"));
    assertMessage("REDIS_URL", Map.of("REDIS_URL", "redis://a", "REDIS_CLUSTER_NODES", "b:1"));
    assertMessage("COORDINATOR_MAX_BUDGETS", Map.of("COORDINATOR_MAX_BUDGETS", "0"));
    assertMessage("COORDINATOR_REDIS_TIMEOUT_MS", Map.of("COORDINATOR_REDIS_TIMEOUT_MS", "5"));
    assertMessage("REDIS_URL", Map.of("REDIS_URL", "redis-sentinel://:pw-not-shown@s1:26379"));
    CoordinatorConfig sentinel = CoordinatorConfig.fromEnvironment(
        Map.of("REDIS_URL", "redis-sentinel://:pw-not-shown@s1:26379,s2:26380#payments"));
    assertEquals("redis-sentinel://s1:26379,s2:26380#payments", sentinel.redisEndpoint());
    assertEquals(sentinel.redisEndpoint(), sentinel.describeRedis());
    assertEquals(1000, CoordinatorConfig.fromEnvironment(Map.of()).redisTimeoutMillis());
    assertEquals(java.time.Duration.ofSeconds(10),
        CoordinatorConfig.fromEnvironment(Map.of("COORDINATOR_REDIS_TIMEOUT_MS", "10000")).redisTimeout());
  }

  @Test
  void httpLimitsHaveDefaultsAndAreRead() {
    assertEquals(new HttpLimits(10_000, 10_000, 30_000, 60_000, 16, 1_000, 0), CoordinatorConfig.fromEnvironment(Map.of()).http());
    assertEquals(new HttpLimits(5, 100, 200, 300, 0, 0, 3), CoordinatorConfig.fromEnvironment(Map.of(
        "COORDINATOR_MAX_CONNECTIONS", "5", "COORDINATOR_HEADER_TIMEOUT_MS", "100",
        "COORDINATOR_BODY_TIMEOUT_MS", "200", "COORDINATOR_IDLE_TIMEOUT_MS", "300",
        "COORDINATOR_PROBE_RESERVE", "0", "COORDINATOR_METRICS_CACHE_MS", "0",
        "COORDINATOR_MAX_CONNECTIONS_PER_IP", "3")).http());
    assertMessage("COORDINATOR_MAX_CONNECTIONS_PER_IP", Map.of("COORDINATOR_MAX_CONNECTIONS_PER_IP", "-1"));
    assertMessage("COORDINATOR_PROBE_RESERVE", Map.of("COORDINATOR_PROBE_RESERVE", "-1"));
    assertMessage("COORDINATOR_METRICS_CACHE_MS", Map.of("COORDINATOR_METRICS_CACHE_MS", "60001"));
    assertMessage("COORDINATOR_MAX_CONNECTIONS", Map.of("COORDINATOR_MAX_CONNECTIONS", "0"));
    assertMessage("COORDINATOR_HEADER_TIMEOUT_MS", Map.of("COORDINATOR_HEADER_TIMEOUT_MS", "ten"));
    assertMessage("COORDINATOR_BODY_TIMEOUT_MS", Map.of("COORDINATOR_BODY_TIMEOUT_MS", "-1"));
    assertMessage("COORDINATOR_IDLE_TIMEOUT_MS", Map.of("COORDINATOR_IDLE_TIMEOUT_MS", "99"));
  }

  @Test
  void theManagementPortDefaultsTo9091AndEqualToTheApiPortMeansOnePort() {
    CoordinatorConfig d = CoordinatorConfig.fromEnvironment(Map.of());
    assertEquals(9091, d.managementPort());
    assertTrue(d.hasManagementListener());
    assertEquals(64, d.managementMaxConnections());
    assertEquals(10_000, d.livenessStallMillis());
    // a free API port: a free management port too
    assertEquals(0, CoordinatorConfig.fromEnvironment(Map.of("COORDINATOR_PORT", "0")).managementPort());
    CoordinatorConfig read = CoordinatorConfig.fromEnvironment(Map.of("COORDINATOR_MANAGEMENT_PORT", "9100",
        "COORDINATOR_MANAGEMENT_MAX_CONNECTIONS", "8", "COORDINATOR_LIVENESS_STALL_MS", "500"));
    assertEquals(9100, read.managementPort());
    assertEquals(8, read.managementMaxConnections());
    assertEquals(500, read.livenessStallMillis());
    CoordinatorConfig one = CoordinatorConfig.fromEnvironment(Map.of("COORDINATOR_PORT", "8081",
        "COORDINATOR_MANAGEMENT_PORT", "8081"));
    assertFalse(one.hasManagementListener());
    assertEquals(CoordinatorConfig.SHARED_PORT, one.managementPort());
    CoordinatorConfig clash = CoordinatorConfig.fromEnvironment(Map.of("COORDINATOR_PORT", "9091"));
    assertFalse(clash.hasManagementListener());
    assertTrue(clash.warnings().get(0).contains("COORDINATOR_MANAGEMENT_PORT"), clash.warnings().toString());
    assertMessage("COORDINATOR_MANAGEMENT_PORT", Map.of("COORDINATOR_MANAGEMENT_PORT", "65536"));
    assertMessage("COORDINATOR_MANAGEMENT_MAX_CONNECTIONS", Map.of("COORDINATOR_MANAGEMENT_MAX_CONNECTIONS", "0"));
    assertMessage("COORDINATOR_LIVENESS_STALL_MS", Map.of("COORDINATOR_LIVENESS_STALL_MS", "99"));
  }

  @Test
  void aTokenWithWhitespaceIsTrimmedWithAWarning() {
    CoordinatorConfig c = CoordinatorConfig.fromEnvironment(Map.of("COORDINATOR_TOKEN", "  s3cret-0123456789\n"));
    assertEquals("s3cret-0123456789", c.token());
    assertEquals(1, c.warnings().size());
    assertTrue(c.warnings().get(0).contains("trimmed") && !c.warnings().get(0).contains("s3cret"), c.warnings().toString());
    assertTrue(CoordinatorConfig.fromEnvironment(Map.of("COORDINATOR_TOKEN", "s3cret-0123456789")).warnings().isEmpty());
  }

  /** Review finding 8: a short token is accepted (tests use them) but the start warns, never showing it. */
  @Test
  void aShortTokenIsWarnedAbout() {
    CoordinatorConfig c = CoordinatorConfig.fromEnvironment(Map.of("COORDINATOR_TOKEN", "s3cret"));
    assertEquals("s3cret", c.token());
    assertEquals(1, c.warnings().size(), c.warnings().toString());
    assertTrue(c.warnings().get(0).contains("6 characters") && c.warnings().get(0).contains("at least 16")
        && !c.warnings().get(0).contains("s3cret"), c.warnings().toString());
    assertTrue(CoordinatorConfig.fromEnvironment(Map.of("COORDINATOR_TOKEN", "0123456789abcdef")).warnings().isEmpty(),
        "16 characters are enough");
    assertTrue(CoordinatorConfig.fromEnvironment(Map.of()).warnings().isEmpty(), "a generated token is long");
  }

  @Test
  void aPlaceholderTokenIsRefusedWithHowToSetOne() {
    for (String placeholder : List.of("replace-me-with-a-long-random-token", "changeme", "REPLACE-ME")) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> CoordinatorConfig.fromEnvironment(Map.of("COORDINATOR_TOKEN", placeholder)));
      assertTrue(e.getMessage().startsWith("COORDINATOR_TOKEN is a placeholder"), e.getMessage());
      assertTrue(e.getMessage().contains("openssl rand -hex 24"), e.getMessage());
    }
    assertMessage("COORDINATOR_TOKEN", Map.of("COORDINATOR_TOKEN", "has space"));
  }

  @Test
  void aRedisUrlThatCannotBeParsedNeverShowsItsPassword() {
    for (String url : List.of("redis://:pa/ss@redis:6379", "redis://:p@ss@redis:6379", "redis://:secret@", "redis://:pw@h:99999")) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> CoordinatorConfig.fromEnvironment(Map.of("REDIS_URL", url)));
      assertTrue(e.getMessage().startsWith("REDIS_URL"), e.getMessage());
      assertTrue(e.getMessage().contains("percent-encoded"), e.getMessage());
      assertFalse(e.getMessage().contains("pa/ss") || e.getMessage().contains("p@ss") || e.getMessage().contains("secret")
          || e.getMessage().contains("ss@"), e.getMessage());
    }
    CoordinatorConfig encoded = CoordinatorConfig.fromEnvironment(Map.of("REDIS_URL", "redis://:pa%2Fss%40x@redis:6379"));
    assertEquals("redis://***@redis:6379", encoded.describeRedis());
    assertEquals("redis:6379", encoded.redisEndpoint());
    assertEquals("pa/ss@x", new String(CoordinatorConfig.parseRedisUrl(encoded.redisUrl()).getCredentialsProvider()
        .resolveCredentials().block().getPassword()), "Lettuce reads the percent-encoded password");
  }

  @Test
  void neverLogsAPassword() {
    assertEquals("redis://***@redis:6379", CoordinatorConfig.fromEnvironment(Map.of("REDIS_URL", "redis://:pw@redis:6379"))
        .describeRedis());
  }

  private static void assertMessage(String variable, Map<String, String> env) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> CoordinatorConfig.fromEnvironment(env));
    assertTrue(e.getMessage().startsWith(variable), e.getMessage());
  }
}
