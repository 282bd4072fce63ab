package io.retrybudget.coordinator.api;

import io.retrybudget.budget.redis.protocol.BrokenBudgetException;
import io.retrybudget.coordinator.budgets.BudgetService;
import io.vertx.ext.web.RoutingContext;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The answers to a budget call that failed: 409 for a budget whose keys hold bad state (naming
 * budget, key and field), 503 naming the cause when Redis failed, and 404 for a write to a budget
 * that has no configuration.
 */
final class BudgetFailures {
  private static final Logger LOG = Logger.getLogger(BudgetApi.class.getName());

  private final BudgetService budgets;
  private final String redisEndpoint;

  BudgetFailures(BudgetService budgets, String redisEndpoint) {
    this.budgets = budgets;
    this.redisEndpoint = redisEndpoint;
  }

  void redisDown(RoutingContext ctx, Throwable cause) {
    if (cause instanceof BrokenBudgetException b) {
      // Redis is up; this budget's keys hold bad state: 409, naming budget, key and field
      Responses.problem(ctx, Problem.of(Problem.Type.BROKEN_BUDGET, 409, b.field(),
          b.getMessage() + "; fix it with PUT or DELETE /v1/budgets/" + b.budget(), Responses.instance(ctx))
          .put("name", b.budget()).put("budget", b.budget()).put("key", b.key()));
      return;
    }
    LOG.log(Level.FINE, "Redis call failed", cause);
    Responses.error(ctx, 503, null, RedisErrors.describe(cause, redisEndpoint, budgets.timeoutMillis()));
  }

  /** A write to a budget that has no configuration: nothing was created (COORDINATOR_AUTO_CREATE=false). */
  static void missing(RoutingContext ctx, String name) {
    Responses.error(ctx, 404, "name", "no budget named " + name + ": create it first with PUT /v1/budgets/" + name);
  }
}
