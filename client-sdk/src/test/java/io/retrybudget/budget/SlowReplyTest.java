package io.retrybudget.budget;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import io.retrybudget.testing.RedisServerProcess;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A reply that comes after its call timeout, as on a loaded machine, does not count towards
 * degrading the budget: it makes the budget SLOW (the fallback's paced share decides, Redis is not
 * taken for down), and the next answer in time makes it HEALTHY again. Two such rounds leave the
 * client never degraded (SIGSTOP of the real Redis makes the replies late).
 */
class SlowReplyTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();

  @Test
  void twoTimeoutsAnsweredLateDoNotDegrade() throws Exception {
    RedisServerProcess server = redis.server();
    try (RedisBudgetClient client = RedisBudgetClient.builder(redis.connectionOptions().build())
        .callTimeout(Duration.ofMillis(50)).flushInterval(Duration.ofSeconds(1)).build()) {
      RedisRetryBudget b = (RedisRetryBudget) client.budget(
          BudgetConfig.builder("slow-replies").ratio(1.0).minRetriesPerSecond(1000).windowSeconds(60).build());
      io.micrometer.core.instrument.simple.SimpleMeterRegistry registry = new io.micrometer.core.instrument.simple.SimpleMeterRegistry();
      io.retrybudget.micrometer.MicrometerBudgetMetrics.monitor(registry, b);
      // served by Redis, and HEALTHY (a first call slower than the timeout on a loaded machine makes it SLOW
      // until an answer in time, and its late permit is then a GRANTED all the same)
      Eventually.await("served by Redis", Duration.ofSeconds(10),
          () -> b.acquireBlocking() == BudgetDecision.GRANTED && b.health() == RedisHealth.State.HEALTHY);
      for (int i = 1; i <= 2; i++) {
        long keptBefore = b.unusedPermits();
        server.pause();
        BudgetDecision d;
        try {
          d = b.acquire().toCompletableFuture().get(5, TimeUnit.SECONDS);
        } finally {
          server.resume();
        }
        assertEquals(BudgetDecision.Reason.DENIED_FALLBACK, d.reason(), "call " + i + " timed out");
        // its reply comes after all: the permit Redis granted is kept for the next retry, which
        // takes it without a call to Redis (no answer in time in between to reset the failures)
        Eventually.await("the late reply of call " + i, Duration.ofSeconds(10), () -> b.unusedPermits() > keptBefore);
        assertEquals(BudgetDecision.GRANTED, b.acquire().toCompletableFuture().get(5, TimeUnit.SECONDS));
        assertEquals(keptBefore, b.unusedPermits(), "the kept permit was used");
        assertEquals(RedisHealth.State.SLOW, b.health(), "a late reply: Redis is up, slower than the call timeout");
        assertTrue(b.isSlow() && client.isSlow(), "SLOW is visible on the budget and its client");
        assertEquals(1, registry.get("retry.budget.slow").tag("budget", "slow-replies").gauge().value());
        assertEquals(0, registry.get("retry.budget.degraded").tag("budget", "slow-replies").gauge().value());
        // a probe answered in time (Redis is not paused now) ends SLOW
        Eventually.await("healthy again", Duration.ofSeconds(10), () -> {
          b.flush(true).join();
          return b.health() == RedisHealth.State.HEALTHY;
        });
      }
      assertFalse(b.isDegraded(), "two late replies degraded the budget");
      assertFalse(b.isSlow(), "an answer in time ends SLOW");
      assertEquals(0, registry.get("retry.budget.slow").tag("budget", "slow-replies").gauge().value());
      assertEquals(0, b.timesDegraded());
    }
  }
}
