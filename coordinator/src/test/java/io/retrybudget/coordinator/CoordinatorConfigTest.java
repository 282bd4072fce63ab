package io.retrybudget.coordinator;

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
