package io.retrybudget.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import io.retrybudget.testing.RedisServerProcess;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The start-up check of what Redis must be, against real redis-server processes. */
class RedisRequirementsTest {
  private static RedisConnectionOptions options(RedisServerProcess redis) {
    return RedisConnectionOptions.standalone(redis.uri()).commandTimeout(Duration.ofSeconds(2)).build();
  }

  @Test
  void anEvictingPolicyIsRefusedByDefault() {
    try (RedisServerProcess redis = RedisServerProcess.start(RedisServerProcess.freePort(),
        List.of("--maxmemory-policy", "allkeys-lru", "--appendonly", "yes"))) {
      List<String> warned = new ArrayList<>();
      IllegalStateException refused = assertThrows(IllegalStateException.class,
          () -> RedisRequirements.builder().warnings(warned::add).build().verify(options(redis)));
      assertTrue(refused.getMessage().contains("maxmemory-policy is 'allkeys-lru'"), refused.getMessage());
      assertTrue(refused.getMessage().contains("noeviction"), refused.getMessage());
      assertEquals(List.of(), warned);
      // configured to warn instead: it starts, and says so
      List<RedisRequirements.Finding> found = RedisRequirements.builder().onEviction(RedisRequirements.Action.WARN)
          .warnings(warned::add).build().verify(options(redis));
      assertEquals(1, found.size());
      assertEquals(1, warned.size());
      assertTrue(warned.get(0).contains("allkeys-lru"), warned.get(0));
    }
  }

  @Test
  void noPersistenceIsAWarningByDefaultAndCanBeRefused() {
    try (RedisServerProcess redis = RedisServerProcess.start()) { // the harness: --save '' --appendonly no
      List<String> warned = new ArrayList<>();
      List<RedisRequirements.Finding> found = RedisRequirements.builder().warnings(warned::add).build().verify(options(redis));
      assertEquals(List.of(RedisRequirements.Kind.NO_PERSISTENCE), found.stream().map(RedisRequirements.Finding::kind).toList());
      assertEquals(1, warned.size());
      assertTrue(warned.get(0).contains("no RDB snapshots: a restart loses every stored answer"), warned.get(0));
      assertThrows(IllegalStateException.class, () -> RedisRequirements.builder()
          .onNoPersistence(RedisRequirements.Action.REFUSE).warnings(warned::add).build().verify(options(redis)));
    }
  }

  @Test
  void noevictionWithAofPasses() {
    try (RedisServerProcess redis = RedisServerProcess.start(RedisServerProcess.freePort(),
        List.of("--appendonly", "yes", "--appendfsync", "everysec"))) {
      List<String> warned = new ArrayList<>();
      assertEquals(List.of(), RedisRequirements.builder().warnings(warned::add).build().verify(options(redis)));
      assertEquals(List.of(), warned);
    }
  }

  @Test
  void aServerThatRefusesConfigIsAWarningThatNothingWasChecked() {
    try (RedisServerProcess redis = RedisServerProcess.start(RedisServerProcess.freePort(),
        List.of("--rename-command", "CONFIG", "\"\""))) {
      List<String> warned = new ArrayList<>();
      List<RedisRequirements.Finding> found = RedisRequirements.builder().warnings(warned::add).build().verify(options(redis));
      assertEquals(List.of(RedisRequirements.Kind.UNCHECKED), found.stream().map(RedisRequirements.Finding::kind).toList());
      assertTrue(warned.get(0).contains("could not be checked"), warned.get(0));
    }
  }

  @Test
  void theRulesOverSettings() {
    Map<String, String> good = Map.of("maxmemory-policy", "noeviction", "appendonly", "yes", "appendfsync", "always", "save", "");
    assertEquals(List.of(), RedisRequirements.evaluate("n", good));
    for (String policy : List.of("volatile-lru", "volatile-ttl", "allkeys-random", "allkeys-lfu")) {
      // every record has a TTL, so the volatile-* policies evict them too
      assertEquals(RedisRequirements.Kind.EVICTION, RedisRequirements.evaluate("n",
          Map.of("maxmemory-policy", policy, "appendonly", "yes")).get(0).kind(), policy);
    }
    assertTrue(RedisRequirements.evaluate("n", Map.of("maxmemory-policy", "noeviction", "appendonly", "no", "save", "3600 1"))
        .get(0).detail().contains("RDB snapshots only"));
    assertEquals(RedisRequirements.Kind.NO_PERSISTENCE, RedisRequirements.evaluate("n",
        Map.of("maxmemory-policy", "noeviction", "appendonly", "yes", "appendfsync", "no")).get(0).kind());
  }
}
