package io.retrybudget.spring;

import io.retrybudget.budget.RedisBudgetClient;
import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;

/**
 * Actuator endpoint {@code retrybudgets}: every configured budget, whether this client decides
 * from its fallback (degraded: Redis unreachable; slow: Redis answers after the call timeout), and
 * the fleet's counts in Redis ({@code GET /actuator/retrybudgets},
 * {@code GET /actuator/retrybudgets/{name}}).
 */
@Endpoint(id = "retrybudgets")
public class RetryBudgetsEndpoint {
  private final RedisBudgetClient client;
  private final RetryBudgets budgets;
  private final RetryBudgetStatus status;

  RetryBudgetsEndpoint(RedisBudgetClient client, RetryBudgets budgets, RetryBudgetStatus status) {
    this.client = client;
    this.budgets = budgets;
    this.status = status;
  }

  @ReadOperation
  public Map<String, Object> budgets() {
    Map<String, Object> all = new LinkedHashMap<>();
    budgets.budgets().forEach((name, budget) -> all.put(name, status.status(name, budget)));
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("degraded", client.isDegraded());
    out.put("slow", client.isSlow());
    out.put("budgets", all);
    return out;
  }

  /** One budget; 404 for a name that is not configured. */
  @ReadOperation
  public Map<String, Object> budget(@Selector String name) {
    if (!budgets.budgets().containsKey(name)) {
      return null; // the actuator answers 404
    }
    return status.status(name, budgets.budget(name));
  }
}
