package io.retrybudget.coordinator.api;

import io.retrybudget.budget.redis.protocol.BudgetReply;
import io.retrybudget.coordinator.budgets.BudgetService;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

/** {@code POST /v1/budgets/{name}/requests}: counts first attempts and answers the window. */
final class RequestsHandler {
  private final BudgetService budgets;
  private final BudgetFailures failures;

  RequestsHandler(BudgetService budgets, BudgetFailures failures) {
    this.budgets = budgets;
    this.failures = failures;
  }

  void count(RoutingContext ctx) {
    String name;
    long count;
    try {
      name = RequestParser.name(ctx.pathParam("name"));
      count = RequestParser.count(RequestParser.object(ctx.body().buffer()), RequestParser.MAX_REQUEST_COUNT);
    } catch (BadRequestException e) {
      Responses.badRequest(ctx, e);
      return;
    }
    budgets.countRequests(name, count).onComplete(r -> {
      if (r.failed()) {
        failures.redisDown(ctx, r.cause());
      } else if (BudgetReply.MISSING.equals(r.result().status())) {
        BudgetFailures.missing(ctx, name);
      } else {
        Responses.json(ctx, 200, window(r.result()).put("counted", count));
      }
    });
  }

  /** The window's figures as a reply carries them (the answers to requests and retries both start with it). */
  static JsonObject window(BudgetReply r) {
    return new JsonObject()
        .put("requests", r.requests())
        .put("retries", r.retries())
        .put("denied", r.denied())
        .put("allowance", r.allowance())
        .put("remaining", r.remaining());
  }
}
