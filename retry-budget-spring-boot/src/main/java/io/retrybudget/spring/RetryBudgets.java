package io.retrybudget.spring;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.retry.RetryExecutor;
import io.retrybudget.retry.RetryPolicy;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * The budgets of {@code retrybudget.budgets.*} by name, and the retry policies of
 * {@code retrybudget.clients.*} by client name, made once at startup and closed with the context
 * (the {@link RedisBudgetClient} itself is its own bean, closed after this one).
 *
 * <pre>{@code
 * RetryBudget payments = retryBudgets.budget("payments-api");
 * RetryExecutor executor = retryBudgets.executor("payments");   // policy and budget of that client
 * }</pre>
 */
public final class RetryBudgets implements AutoCloseable {
  private final Map<String, BudgetConfig> configs;
  private final Map<String, RetryBudget> budgets;
  private final Map<String, RetryBudgetProperties.Client> clients;
  private final Map<String, RetryPolicy> policies;
  private final Map<String, RetryExecutor> executors;
  private final String retryableBudget;
  private final Map<String, String> clientOfBean;
  private final String defaultClient;

  RetryBudgets(RedisBudgetClient client, RetryBudgetProperties properties,
      RetryBudgetMetricsSupport metrics, RetryExecutor.Sleeper sleeper) {
    Map<String, BudgetConfig> configs = new LinkedHashMap<>();
    properties.getBudgets().forEach((name, b) -> configs.put(name, PropertyErrors.budgetConfig(name, b)));
    Map<String, RetryPolicy> policies = new LinkedHashMap<>();
    properties.getClients().forEach((name, c) -> {
      PropertyErrors.requireKnownBudget(name, c, configs.keySet());
      policies.put(name, PropertyErrors.policy(name, c));
    });
    Map<String, String> clientOfBean = new LinkedHashMap<>();
    properties.getClients().forEach((name, c) -> {
      for (String bean : c.getBeans()) {
        String other = clientOfBean.putIfAbsent(bean, name);
        if (other != null && !other.equals(name)) {
          throw new InvalidRetryBudgetPropertyException("retrybudget.clients." + name + ".beans",
              "bean '" + bean + "' is already under retrybudget.clients." + other + ".beans");
        }
      }
    });
    String defaultClient = properties.getDefaultClient();
    if (defaultClient != null && !properties.getClients().containsKey(defaultClient)) {
      throw new InvalidRetryBudgetPropertyException("retrybudget.default-client",
          "no client '" + defaultClient + "' under retrybudget.clients " + properties.getClients().keySet());
    }
    String retryable = properties.getRetryableBudget();
    if (retryable != null && !configs.containsKey(retryable)) {
      throw new InvalidRetryBudgetPropertyException("retrybudget.retryable-budget",
          "no budget '" + retryable + "' under retrybudget.budgets " + configs.keySet());
    }
    Map<String, RetryBudget> budgets = new LinkedHashMap<>();
    configs.forEach((name, config) -> {
      RetryBudget budget = client.budget(config);
      metrics.monitor(budget);
      budgets.put(name, budget);
    });
    Map<String, RetryExecutor> executors = new LinkedHashMap<>();
    policies.forEach((name, policy) -> {
      RetryExecutor.Builder b = RetryExecutor.builder(policy)
          .budget(budgets.get(properties.getClients().get(name).getBudget()))
          .listener(metrics.listener(name));
      if (sleeper != null) {
        b.sleeper(sleeper);
      }
      executors.put(name, b.build());
    });
    this.configs = Collections.unmodifiableMap(configs);
    this.budgets = Collections.unmodifiableMap(budgets);
    this.clients = Collections.unmodifiableMap(new LinkedHashMap<>(properties.getClients()));
    this.policies = Collections.unmodifiableMap(policies);
    this.executors = Collections.unmodifiableMap(executors);
    this.retryableBudget = retryable;
    this.clientOfBean = Collections.unmodifiableMap(clientOfBean);
    this.defaultClient = defaultClient;
  }

  /** The budget configured as {@code retrybudget.budgets.<name>}. */
  public RetryBudget budget(String name) {
    RetryBudget budget = budgets.get(Objects.requireNonNull(name, "name must not be null"));
    if (budget == null) {
      throw new IllegalArgumentException("no retry budget '" + name + "' under retrybudget.budgets; configured: "
          + budgets.keySet());
    }
    return budget;
  }

  /** Every configured budget by name, in configuration order. */
  public Map<String, RetryBudget> budgets() {
    return budgets;
  }

  /** The executor of {@code retrybudget.clients.<client>}: its policy, paid for by its budget. */
  public RetryExecutor executor(String client) {
    RetryExecutor executor = executors.get(Objects.requireNonNull(client, "client must not be null"));
    if (executor == null) {
      throw new IllegalArgumentException("no retry client '" + client + "' under retrybudget.clients; configured: "
          + executors.keySet());
    }
    return executor;
  }

  /** The policy of {@code retrybudget.clients.<client>}. */
  public RetryPolicy policy(String client) {
    executor(client); // the same error for an unknown name
    return policies.get(client);
  }

  /** {@code retrybudget.retryable-budget}: the budget of {@code @Retryable} methods naming none, or null. */
  String retryableBudget() {
    return retryableBudget;
  }

  /** {@code retrybudget.clients.*.beans}: the client of each bean named there. */
  Map<String, String> clientOfBean() {
    return clientOfBean;
  }

  /** {@code retrybudget.default-client}, or null. */
  String defaultClient() {
    return defaultClient;
  }

  /** The configurations the budgets were made with (Redis's own, once stored, win). */
  Map<String, BudgetConfig> configs() {
    return configs;
  }

  RetryBudgetProperties.Client clientProperties(String client) {
    executor(client);
    return clients.get(client);
  }

  /** Closes the executors and the budgets (each flushes what it counted). */
  @Override
  public void close() {
    executors.values().forEach(RetryExecutor::close);
    budgets.values().forEach(RetryBudget::close);
  }
}
