package io.retrybudget.coordinator.api;

import io.retrybudget.coordinator.budgets.BudgetService;
import io.retrybudget.coordinator.budgets.ConfigUpdate;
import io.vertx.ext.web.RoutingContext;

/** {@code /v1/budgets/{name}}: GET (the status with its buckets), PUT (the configuration) and DELETE. */
final class BudgetHandler {
  private final BudgetService budgets;
  private final BudgetFailures failures;

  BudgetHandler(BudgetService budgets, BudgetFailures failures) {
    this.budgets = budgets;
    this.failures = failures;
  }

  void get(RoutingContext ctx) {
    String name;
    try {
      name = RequestParser.name(ctx.pathParam("name"));
    } catch (BadRequestException e) {
      Responses.badRequest(ctx, e);
      return;
    }
    budgets.statusWithBuckets(name).onComplete(r -> {
      if (r.failed()) {
        failures.redisDown(ctx, r.cause());
      } else if (!r.result().exists()) {
        Responses.error(ctx, 404, "name", "no budget named " + name);
      } else {
        Responses.json(ctx, 200, r.result().toJson());
      }
    });
  }

  void delete(RoutingContext ctx) {
    String name;
    try {
      name = RequestParser.name(ctx.pathParam("name"));
    } catch (BadRequestException e) {
      Responses.badRequest(ctx, e);
      return;
    }
    budgets.delete(name).onComplete(r -> {
      if (r.failed()) {
        failures.redisDown(ctx, r.cause());
      } else if (!r.result()) {
        Responses.error(ctx, 404, "name", "no budget named " + name);
      } else if (!ctx.response().ended() && !ctx.response().closed()) {
        ctx.response().setStatusCode(204).end();
      }
    });
  }

  void put(RoutingContext ctx) {
    String name;
    ConfigUpdate update;
    try {
      name = RequestParser.name(ctx.pathParam("name"));
      update = RequestParser.configUpdate(RequestParser.object(ctx.body().buffer()));
    } catch (BadRequestException e) {
      Responses.badRequest(ctx, e);
      return;
    }
    budgets.configure(name, update).onComplete(r -> {
      if (r.failed()) {
        failures.redisDown(ctx, r.cause());
      } else {
        Responses.json(ctx, 200, r.result().toJson());
      }
    });
  }
}
