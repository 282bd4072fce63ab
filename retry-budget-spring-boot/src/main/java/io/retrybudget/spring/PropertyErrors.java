package io.retrybudget.spring;

import io.lettuce.core.RedisURI;
import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import io.retrybudget.retry.RetryPolicy;
import java.util.Set;
import java.util.function.Supplier;

/**
 * Builds the SDK's immutable configurations from {@code retrybudget.*}, with the SDK's own
 * validation; an error names the property it came from, e.g.
 * {@code retrybudget.budgets.payments-api.ratio: ratio must be in (0, 1], was 1.5}.
 */
final class PropertyErrors {
  private PropertyErrors() {}

  static BudgetConfig budgetConfig(String name, RetryBudgetProperties.Budget b) {
    String prefix = "retrybudget.budgets." + name;
    BudgetConfig.Builder builder = check(prefix, () -> BudgetConfig.builder(name));
    check(prefix + ".ratio", () -> builder.ratio(b.getRatio()));
    check(prefix + ".min-retries-per-second", () -> builder.minRetriesPerSecond(b.getMinRetriesPerSecond()));
    check(prefix + ".window-seconds", () -> builder.windowSeconds(b.getWindowSeconds()));
    check(prefix + ".mode", () -> builder.mode(b.getMode()));
    return builder.build();
  }

  static void requireKnownBudget(String client, RetryBudgetProperties.Client c, Set<String> budgets) {
    String property = "retrybudget.clients." + client + ".budget";
    if (c.getBudget() == null || c.getBudget().isBlank()) {
      throw new InvalidRetryBudgetPropertyException(property, "must name a budget of retrybudget.budgets " + budgets);
    }
    if (!budgets.contains(c.getBudget())) {
      throw new InvalidRetryBudgetPropertyException(property,
          "no budget '" + c.getBudget() + "' under retrybudget.budgets " + budgets);
    }
  }

  static RetryPolicy policy(String client, RetryBudgetProperties.Client c) {
    String prefix = "retrybudget.clients." + client;
    RetryPolicy.Builder builder = RetryPolicy.builder();
    check(prefix + ".max-attempts", () -> builder.maxAttempts(c.getMaxAttempts()));
    check(prefix + ".backoff-base", () -> builder.backoff(c.getBackoffBase(), c.getBackoffCap()));
    check(prefix + ".jitter", () -> builder.jitter(c.getJitter()));
    if (c.getDeadline() != null) {
      check(prefix + ".deadline", () -> builder.deadline(c.getDeadline()));
    }
    return check(prefix, builder::build);
  }

  static RedisConnectionOptions connectionOptions(RetryBudgetProperties p) {
    RetryBudgetProperties.Redis redis = p.getRedis();
    if (!redis.getClusterNodes().isEmpty()) {
      return check("retrybudget.redis.cluster-nodes", () -> RedisConnectionOptions.cluster(redis.getClusterNodes()).build());
    }
    String uri = redis.getUri() == null ? RetryBudgetProperties.Redis.DEFAULT_URI : redis.getUri();
    return check("retrybudget.redis.uri", () -> {
      RedisURI.create(uri); // refused here, not retried in the background forever
      return RedisConnectionOptions.standalone(uri).build();
    });
  }

  static RedisBudgetClient client(RetryBudgetProperties p, RedisConnectionOptions connection) {
    RedisBudgetClient.Builder builder = RedisBudgetClient.builder(connection);
    check("retrybudget.call-timeout", () -> builder.callTimeout(p.getCallTimeout()));
    check("retrybudget.flush-interval", () -> builder.flushInterval(p.getFlushInterval()));
    check("retrybudget.exhausted-cache-time", () -> builder.exhaustedCacheTime(p.getExhaustedCacheTime()));
    check("retrybudget.fallback", () -> builder.fallbackPolicy(p.getFallback()));
    return builder.build();
  }

  private static <T> T check(String property, Supplier<T> step) {
    try {
      return step.get();
    } catch (IllegalArgumentException | NullPointerException e) {
      throw new InvalidRetryBudgetPropertyException(property, e.getMessage());
    }
  }
}
