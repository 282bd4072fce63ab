package io.retrybudget.micrometer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.LocalRetryBudget;
import io.retrybudget.retry.RetryBudgetExhaustedException;
import io.retrybudget.retry.RetryExecutor;
import io.retrybudget.retry.RetryPolicy;
import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class MicrometerRetryMetricsTest {
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

  private double count(String name, String tag, String value) {
    return registry.get(name).tag("budget", "backend").tag(tag, value).counter().count();
  }

  @Test
  void countsCallsAttemptsDenialsAndDelays() throws Exception {
    LocalRetryBudget budget = new LocalRetryBudget(BudgetConfig.builder("backend").minRetriesPerSecond(0).ratio(0.5).build(), () -> 0L);
    RetryExecutor executor = RetryExecutor.builder(RetryPolicy.builder().maxAttempts(2).build())
        .budget(budget).listener(new MicrometerRetryMetrics(registry, "backend"))
        .sleeper(n -> { }).random(() -> 0.5).build();
    executor.call(() -> "fine");
    AtomicInteger calls = new AtomicInteger();
    executor.call(() -> {
      if (calls.getAndIncrement() == 0) {
        throw new IOException("once");
      }
      return "fine";
    });
    assertThrows(IllegalStateException.class, () -> executor.call(() -> {
      throw new IllegalStateException("400");
    }));
    // ratio 0.5: the 4th call (4 first attempts, allowance 2) gets the 2nd retry, the 5th none
    assertThrows(IOException.class, () -> executor.call(() -> {
      throw new IOException("down");
    }));
    assertThrows(RetryBudgetExhaustedException.class, () -> executor.call(() -> {
      throw new IOException("down");
    }));

    assertEquals(1, count("retry.calls", "outcome", "success"));
    assertEquals(1, count("retry.calls", "outcome", "success_with_retry"));
    assertEquals(1, count("retry.calls", "outcome", "failed_not_retryable"));
    assertEquals(1, count("retry.calls", "outcome", "failed_max_attempts"));
    assertEquals(1, count("retry.calls", "outcome", "budget_exhausted"));
    assertEquals(0, count("retry.calls", "outcome", "failed_deadline"));
    assertEquals(5, count("retry.attempts", "kind", "first"));
    assertEquals(2, count("retry.attempts", "kind", "retry"));
    assertEquals(1, count("retry.budget.denials", "reason", "exhausted"));
    assertEquals(2, registry.get("retry.backoff").tag("budget", "backend").timer().count());
    assertEquals(2 * 50, registry.get("retry.backoff").timer().totalTime(java.util.concurrent.TimeUnit.MILLISECONDS), 1e-6);
    // one tag names the budget on every meter, as on the degraded gauge and the coordinator's gauges
    MicrometerBudgetMetrics.monitor(registry, budget);
    assertTrue(registry.getMeters().size() > 10);
    for (io.micrometer.core.instrument.Meter meter : registry.getMeters()) {
      assertEquals("backend", meter.getId().getTag("budget"), meter.getId().toString());
      assertEquals(null, meter.getId().getTag("name"), meter.getId().toString());
    }
  }

  @Test
  void aRetryTheThrottleRefusesIsCountedAsThrottledNotExhausted() {
    LocalRetryBudget fleet = new LocalRetryBudget(BudgetConfig.builder("backend").minRetriesPerSecond(100).ratio(1.0).build(), () -> 0L);
    io.retrybudget.retry.SuccessAwareBudget aware = io.retrybudget.retry.SuccessAwareBudget.builder(fleet).random(() -> 0.0)
        .throttle(io.retrybudget.budget.AdaptiveThrottle.Config.builder().minRequests(0).build()).build();
    aware.listener().onOutcome(io.retrybudget.retry.RetryOutcome.MAX_ATTEMPTS, 2); // one failed retry: p = 1/2
    RetryExecutor executor = RetryExecutor.builder(RetryPolicy.builder().maxAttempts(3).build())
        .budget(aware).listener(aware.listener()).listener(new MicrometerRetryMetrics(registry, "backend"))
        .sleeper(n -> { }).random(() -> 0.5).build();
    RetryBudgetExhaustedException e = assertThrows(RetryBudgetExhaustedException.class, () -> executor.call(() -> {
      throw new IOException("down");
    }));
    assertEquals(io.retrybudget.budget.BudgetDecision.DENIED_THROTTLED, e.decision());
    assertEquals("retry budget 'backend' refused a retry (throttled: most of this client's recent retries failed)", e.getMessage());
    assertEquals(1, count("retry.budget.denials", "reason", "throttled"));
    assertEquals(0, count("retry.budget.denials", "reason", "exhausted"));
    assertEquals(1, count("retry.calls", "outcome", "budget_exhausted"));
    assertEquals(1, aware.throttled());
    assertEquals(0, fleet.windowCounts()[1] + fleet.windowCounts()[2], "the fleet budget was not asked");
  }

  @Test
  void callsTheCallerEndsAreCountedAsCancelled() throws Exception {
    try (RetryExecutor executor = RetryExecutor.builder(RetryPolicy.builder().maxAttempts(2).build())
        .listener(new MicrometerRetryMetrics(registry, "backend")).build()) {
      executor.callAsync(() -> new java.util.concurrent.CompletableFuture<String>()).cancel(true);
      executor.callAsync(() -> new java.util.concurrent.CompletableFuture<String>()).complete("the caller's own");
      assertEquals(2, count("retry.calls", "outcome", "cancelled"));
      assertEquals(0, count("retry.calls", "outcome", "success"), "a call the caller ended is not a success");
      assertEquals(2, count("retry.attempts", "kind", "first"));
    }
  }

  @Test
  void budgetDegradedGauge() {
    LocalRetryBudget budget = new LocalRetryBudget(BudgetConfig.builder("backend").build());
    MicrometerBudgetMetrics.monitor(registry, budget);
    assertEquals(0, registry.get("retry.budget.degraded").tag("budget", "backend").gauge().value());
    assertEquals(0, registry.get("retry.budget.slow").tag("budget", "backend").gauge().value());
  }

  /** The slow gauge follows the budget's SLOW state, apart from the degraded one. */
  @Test
  void budgetSlowGauge() {
    java.util.concurrent.atomic.AtomicBoolean slow = new java.util.concurrent.atomic.AtomicBoolean();
    LocalRetryBudget local = new LocalRetryBudget(BudgetConfig.builder("backend").build());
    io.retrybudget.budget.RetryBudget budget = new io.retrybudget.budget.RetryBudget() {
      public String name() { return local.name(); }
      public void recordFirstAttempt() { local.recordFirstAttempt(); }
      public io.retrybudget.budget.BudgetDecision acquireBlocking() { return local.acquireBlocking(); }
      public java.util.concurrent.CompletionStage<io.retrybudget.budget.BudgetDecision> acquire() { return local.acquire(); }
      public boolean isSlow() { return slow.get(); }
      public void close() { local.close(); }
    };
    MicrometerBudgetMetrics.monitor(registry, budget);
    assertEquals(0, registry.get("retry.budget.slow").tag("budget", "backend").gauge().value());
    slow.set(true);
    assertEquals(1, registry.get("retry.budget.slow").tag("budget", "backend").gauge().value());
    assertEquals(0, registry.get("retry.budget.degraded").tag("budget", "backend").gauge().value(), "slow is not degraded");
    slow.set(false);
    assertEquals(0, registry.get("retry.budget.slow").tag("budget", "backend").gauge().value());
  }

  /** The remaining-budget gauge: the budget's whole permits now; NaN while the budget cannot tell. */
  @Test
  void budgetAvailableGauge() {
    // floor 2 a second, no first attempts: the balance holds its cap of one second's refill
    LocalRetryBudget budget = new LocalRetryBudget(BudgetConfig.builder("backend").ratio(0.1).minRetriesPerSecond(2).build(),
        () -> 5_000L);
    MicrometerBudgetMetrics.monitor(registry, budget);
    double before = registry.get("retry.budget.available").tag("budget", "backend").gauge().value();
    assertEquals(budget.available(), before);
    assertTrue(before >= 1, "a budget with a floor has permits: " + before);
    budget.acquireBlocking();
    assertEquals(before - 1, registry.get("retry.budget.available").tag("budget", "backend").gauge().value());

    SimpleMeterRegistry other = new SimpleMeterRegistry();
    io.retrybudget.budget.RetryBudget unknown = new io.retrybudget.budget.RetryBudget() {
      public String name() { return "unknown"; }
      public void recordFirstAttempt() {}
      public io.retrybudget.budget.BudgetDecision acquireBlocking() { return io.retrybudget.budget.BudgetDecision.GRANTED; }
      public java.util.concurrent.CompletionStage<io.retrybudget.budget.BudgetDecision> acquire() { return null; }
      public void close() {}
    };
    MicrometerBudgetMetrics.monitor(other, unknown);
    assertTrue(Double.isNaN(other.get("retry.budget.available").tag("budget", "unknown").gauge().value()));
  }
}
