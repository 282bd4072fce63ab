package io.retrybudget.coordinator.api;

import io.retrybudget.coordinator.budgets.BudgetService;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

/** {@code /health/live} (the process answers) and {@code /health/ready} (Redis answers a ping, else 503 naming why). */
final class HealthHandler {
  private final BudgetService budgets;
  private final String redisEndpoint;

  HealthHandler(BudgetService budgets, String redisEndpoint) {
    this.budgets = budgets;
    this.redisEndpoint = redisEndpoint;
  }

  void live(RoutingContext ctx) {
    Responses.json(ctx, 200, new JsonObject().put("status", "UP"));
  }

  void ready(RoutingContext ctx) {
    budgets.ping().onComplete(r -> {
      if (r.succeeded()) {
        Responses.json(ctx, 200, new JsonObject().put("status", "UP").put("redis", "UP"));
      } else {
        Responses.json(ctx, 503, new JsonObject().put("status", "DOWN").put("redis", "DOWN")
            .put("error", RedisErrors.describe(r.cause(), redisEndpoint, budgets.timeoutMillis())));
      }
    });
  }
}
