package io.retrybudget.spring;

import io.retrybudget.reactor.BudgetRetryFilter;
import java.time.Clock;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The WebClient {@link BudgetRetryFilter} of each client of {@code retrybudget.clients.*}: its retry
 * policy, paid for by its budget, by HTTP's rules (retry-budget-reactor's filter). One filter per
 * client name, shared by every {@code WebClient} it is put on. Present when spring-webflux and
 * retry-budget-reactor are on the classpath.
 *
 * <pre>{@code
 * WebClient payments = builder.filter(filters.forClient("payments")).build();
 * }</pre>
 */
public final class RetryBudgetWebClientFilters {
  private final RetryBudgets budgets;
  private final RetryBudgetMetricsSupport metrics;
  private final Clock clock;
  private final Map<String, BudgetRetryFilter> byClient = new ConcurrentHashMap<>();

  RetryBudgetWebClientFilters(RetryBudgets budgets, RetryBudgetMetricsSupport metrics, Clock clock) {
    this.budgets = budgets;
    this.metrics = metrics;
    this.clock = clock;
  }

  /** The filter of {@code retrybudget.clients.<client>}; unknown names are refused. */
  public BudgetRetryFilter forClient(String client) {
    RetryBudgetProperties.Client properties = budgets.clientProperties(client);
    return byClient.computeIfAbsent(client, name -> BudgetRetryFilter.builder()
        .policy(budgets.policy(name))
        .budget(budgets.budget(properties.getBudget()))
        .listener(metrics.listener(name))
        .idempotencyKeys(properties.isIdempotencyKeys())
        .clock(clock)
        .build());
  }
}
