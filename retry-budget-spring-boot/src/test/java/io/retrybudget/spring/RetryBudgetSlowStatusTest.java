package io.retrybudget.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.Test;

/** A budget whose Redis answers after the call timeout says so in its status, apart from degraded. */
class RetryBudgetSlowStatusTest {
  /** A budget in a given health, deciding nothing. */
  private static RetryBudget budget(boolean degraded, boolean slow) {
    return new RetryBudget() {
      public String name() { return "payments-api"; }
      public void recordFirstAttempt() { }
      public BudgetDecision acquireBlocking() { return BudgetDecision.DENIED_FALLBACK; }
      public CompletionStage<BudgetDecision> acquire() { return CompletableFuture.completedFuture(acquireBlocking()); }
      public boolean isDegraded() { return degraded; }
      public boolean isSlow() { return slow; }
      public void close() { }
    };
  }

  @Test
  void slowAndDegradedAreReportedApart() {
    // nothing listens on port 1: the fleet's counts are unavailable, this client's view is not
    try (RetryBudgetStatus status = new RetryBudgetStatus(RedisConnectionOptions.standalone("redis://127.0.0.1:1").build(),
        Map.of("payments-api", BudgetConfig.builder("payments-api").build()), Duration.ofMillis(500))) {
      Map<String, Object> slow = status.status("payments-api", budget(false, true));
      assertEquals(true, slow.get("slow"));
      assertEquals(false, slow.get("degraded"));
      Map<String, Object> degraded = status.status("payments-api", budget(true, false));
      assertEquals(false, degraded.get("slow"));
      assertEquals(true, degraded.get("degraded"));
    }
  }
}
