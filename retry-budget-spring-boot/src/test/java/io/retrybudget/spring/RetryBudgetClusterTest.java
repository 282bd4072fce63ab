package io.retrybudget.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.RetryBudget;
import io.retrybudget.testing.RedisExtension;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** {@code retrybudget.redis.cluster-nodes}: the same beans against a real 3-master Redis Cluster. */
class RetryBudgetClusterTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.cluster();

  @Test
  void budgetsEndpointAndHealthOnACluster() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(RetryBudgetAutoConfiguration.class))
        .withPropertyValues(
            "retrybudget.redis.cluster-nodes=" + String.join(",", redis.nodes()),
            "retrybudget.call-timeout=500ms",
            "retrybudget.budgets.orders.min-retries-per-second=3",
            "retrybudget.budgets.users.min-retries-per-second=3")
        .run(context -> {
          RetryBudgets budgets = context.getBean(RetryBudgets.class);
          for (String name : new String[] {"orders", "users"}) {
            RetryBudget budget = budgets.budget(name);
            // the client's build waits at most its connect timeout; on a loaded machine the first
            // connect to a Cluster can take longer, and a budget not yet connected decides from its
            // fallback (no floor share before Redis has said how many clients there are)
            io.retrybudget.testing.Eventually.await("connected", java.time.Duration.ofSeconds(30), () -> !budget.isDegraded());
            budget.recordFirstAttempt();
            assertTrue(budget.acquireBlocking().granted(), name);
            Map<String, Object> status = context.getBean(RetryBudgetsEndpoint.class).budget(name);
            assertEquals(1L, status.get("requests"), status.toString());
            assertEquals(1L, status.get("retries"), status.toString());
          }
          assertEquals(Status.UP, context.getBean(RetryBudgetHealthIndicator.class).health().getStatus());
        });
  }

  @Test
  void budgetsOnTheApplicationsClusterFromSpringDataRedis() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(
            org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration.class,
            RetryBudgetAutoConfiguration.class))
        .withPropertyValues(
            "spring.data.redis.cluster.nodes=" + String.join(",", redis.nodes()),
            "retrybudget.call-timeout=500ms",
            "retrybudget.budgets.app-cluster.ratio=0.5",
            "retrybudget.budgets.app-cluster.min-retries-per-second=5")
        .run(context -> {
          io.retrybudget.budget.redis.transport.RedisConnectionOptions options =
              context.getBean(io.retrybudget.budget.redis.transport.RedisConnectionOptions.class);
          assertTrue(options.isCluster());
          assertEquals(redis.nodes().size(), options.uris().size());
          assertTrue(options.clientResources() == context.getBean(io.lettuce.core.resource.ClientResources.class));
          RetryBudget budget = context.getBean(RetryBudgets.class).budget("app-cluster");
          assertEquals(io.retrybudget.budget.BudgetDecision.Reason.GRANTED, ApplicationRedisTest.grantedFromRedis(budget).reason());
          // a floor of 5 a second saves up half a second: a few more grants, then Redis says "exhausted"
          Map<io.retrybudget.budget.BudgetDecision.Reason, Integer> seen = new java.util.EnumMap<>(io.retrybudget.budget.BudgetDecision.Reason.class);
          for (int i = 0; i < 50 && !seen.containsKey(io.retrybudget.budget.BudgetDecision.Reason.DENIED_EXHAUSTED); i++) {
            seen.merge(budget.acquireBlocking().reason(), 1, Integer::sum);
          }
          assertTrue(seen.containsKey(io.retrybudget.budget.BudgetDecision.Reason.DENIED_EXHAUSTED), seen.toString());
          org.springframework.data.redis.core.StringRedisTemplate template =
              context.getBean(org.springframework.data.redis.core.StringRedisTemplate.class);
          assertTrue(template.hasKey(new io.retrybudget.budget.redis.protocol.BudgetKeys("app-cluster").config()));
        });
  }
}
