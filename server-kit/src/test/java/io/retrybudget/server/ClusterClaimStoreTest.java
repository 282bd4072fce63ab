package io.retrybudget.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.testing.RedisExtension;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The claim scripts on a real 3-master Redis Cluster: records spread over the masters. */
class ClusterClaimStoreTest {
  @RegisterExtension
  static final RedisExtension redis = RedisExtension.cluster();

  @Test
  void claimCompleteAndReplayOnEveryMaster() {
    try (RedisBudgetStore connection = RedisBudgetStore.connect(redis.connectionOptions().build())) {
      ClaimStore store = new ClaimStore(connection, Duration.ofSeconds(2));
      Set<Integer> masters = new HashSet<>();
      for (int i = 0; i < 30; i++) {
        String key = ClaimStore.idempotencyKey("c", "POST", "/payments", "key-" + i);
        masters.add(redis.serverFor(key).port());
        Claim.Claimed c = assertInstanceOf(Claim.Claimed.class, store.claim(key, "fp", Duration.ofSeconds(30)).join());
        StoredResponse answer = new StoredResponse(201, List.of(), ("answer " + i).getBytes(StandardCharsets.UTF_8));
        assertTrue(store.complete(c, answer, Duration.ofMinutes(5)).join());
        assertFalse(store.release(c).join());
        assertEquals(answer, ((Claim.Done) store.claim(key, "fp", Duration.ofSeconds(30)).join()).response());
        String tie = ClaimStore.tieKey("tie-" + i);
        assertInstanceOf(Claim.Claimed.class, store.claim(tie, "t", Duration.ofSeconds(5)).join());
        assertInstanceOf(Claim.Busy.class, store.claim(tie, "t", Duration.ofSeconds(5)).join());
      }
      assertEquals(3, masters.size(), "the records lie on every master");
    }
  }

  @Test
  void theStartUpCheckReadsEveryMaster() {
    // the harness's masters keep nothing: each one is found without persistence, none evicts
    List<String> warned = new java.util.ArrayList<>();
    List<RedisRequirements.Finding> found = RedisRequirements.builder().warnings(warned::add).build()
        .verify(redis.connectionOptions().build());
    assertEquals(3, found.stream().map(RedisRequirements.Finding::node).distinct().count(), found.toString());
    assertTrue(found.stream().allMatch(f -> f.kind() == RedisRequirements.Kind.NO_PERSISTENCE), found.toString());
    assertEquals(3, warned.size());
  }
}
