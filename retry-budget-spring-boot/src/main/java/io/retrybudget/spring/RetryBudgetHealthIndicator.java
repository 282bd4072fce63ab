package io.retrybudget.spring;

import io.retrybudget.budget.RedisBudgetClient;
import java.util.ArrayList;
import java.util.List;
import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;

/**
 * Health {@code retryBudget}: UP while Redis answers and no budget decides from its fallback; DOWN
 * otherwise, with the degraded budgets and Redis's problem as details. Budgets whose Redis answers
 * after the call timeout (deciding from the fallback's paced share, still counted in Redis) are
 * listed as {@code slow} and leave it UP. Budgets keep working while
 * DOWN (from their fallback): keep this indicator out of readiness groups unless losing the shared
 * budget should take the instance out of service.
 */
public class RetryBudgetHealthIndicator extends AbstractHealthIndicator {
  private final RedisBudgetClient client;
  private final RetryBudgets budgets;
  private final RetryBudgetStatus status;

  RetryBudgetHealthIndicator(RedisBudgetClient client, RetryBudgets budgets, RetryBudgetStatus status) {
    super("retry budget health check failed");
    this.client = client;
    this.budgets = budgets;
    this.status = status;
  }

  @Override
  protected void doHealthCheck(Health.Builder builder) {
    List<String> degraded = new ArrayList<>();
    List<String> slow = new ArrayList<>();
    budgets.budgets().forEach((name, budget) -> {
      if (budget.isDegraded()) {
        degraded.add(name);
      } else if (budget.isSlow()) {
        slow.add(name);
      }
    });
    String redisProblem = status.redisProblem();
    boolean up = redisProblem == null && degraded.isEmpty() && !client.isDegraded();
    (up ? builder.up() : builder.down())
        .withDetail("redis", redisProblem == null ? "reachable" : redisProblem)
        .withDetail("budgets", budgets.budgets().size())
        .withDetail("degraded", degraded)
        .withDetail("slow", slow);
  }
}
