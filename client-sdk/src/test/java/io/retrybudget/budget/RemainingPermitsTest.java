package io.retrybudget.budget;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import java.time.Duration;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@link RetryBudget#remainingPermits()} of a Redis budget: what Redis's last reply to this client said. */
class RemainingPermitsTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();

  @Test
  void followsRedisRepliesDownToZeroWhenTheBudgetRefuses() throws Exception {
    try (RedisBudgetClient client = RedisBudgetClient.builder(redis.connectionOptions().build())
        .callTimeout(Duration.ofSeconds(2)).build()) {
      RedisRetryBudget b = (RedisRetryBudget) client.budget(
          BudgetConfig.builder("remaining").ratio(0.1).minRetriesPerSecond(3).windowSeconds(10).build());
      Eventually.await("heard from Redis", Duration.ofSeconds(10), b::heardFromRedis);
      OptionalLong first = b.remainingPermits();
      assertTrue(first.isPresent() && first.getAsLong() >= 1, "a floor of 3 a second leaves permits: " + first);
      BudgetDecision d = BudgetDecision.GRANTED;
      for (int i = 0; i < 100 && d.granted(); i++) {
        d = b.acquireBlocking();
      }
      assertEquals(BudgetDecision.Reason.DENIED_EXHAUSTED, d.reason(), "Redis refused: " + d);
      assertEquals(OptionalLong.of(0), b.remainingPermits(), "the refusal's reply held no whole permit");
    }
  }
}
