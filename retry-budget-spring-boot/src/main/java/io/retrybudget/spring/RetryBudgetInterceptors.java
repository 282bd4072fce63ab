package io.retrybudget.spring;

import io.retrybudget.retry.RetryExecutor;
import java.time.Clock;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The {@link RetryBudgetInterceptor} of each client of {@code retrybudget.clients.*}: its retry
 * policy, paid for by its budget. One interceptor per client name, shared by every RestClient or
 * RestTemplate it is added to; closed with the context.
 */
public final class RetryBudgetInterceptors implements AutoCloseable {
  private final RetryBudgets budgets;
  private final RetryBudgetMetricsSupport metrics;
  private final RetryExecutor.Sleeper sleeper;
  private final Clock clock;
  private final Map<String, RetryBudgetInterceptor> byClient = new ConcurrentHashMap<>();

  RetryBudgetInterceptors(RetryBudgets budgets, RetryBudgetMetricsSupport metrics, RetryExecutor.Sleeper sleeper, Clock clock) {
    this.budgets = budgets;
    this.metrics = metrics;
    this.sleeper = sleeper;
    this.clock = clock;
  }

  /** The interceptor of {@code retrybudget.clients.<client>}; unknown names are refused. */
  public RetryBudgetInterceptor forClient(String client) {
    RetryBudgetProperties.Client properties = budgets.clientProperties(client);
    return byClient.computeIfAbsent(client, name -> new RetryBudgetInterceptor(budgets.policy(name),
        budgets.budget(properties.getBudget()), metrics.listener(name), sleeper, properties.isIdempotencyKeys(), clock));
  }

  @Override
  public void close() {
    byClient.values().forEach(RetryBudgetInterceptor::close);
  }
}
