package io.retrybudget.coordinator.api;

import io.retrybudget.budget.redis.protocol.BudgetReply;
import io.retrybudget.coordinator.budgets.BudgetService;
import io.retrybudget.coordinator.budgets.BudgetStatus;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

/**
 * {@code POST /v1/budgets/{name}/retries}: asks for permits. 200 when granted (or in shadow mode),
 * 429 with Retry-After when denied, 422 when more are asked for at once than the paced balance can
 * hold (nothing counted).
 */
final class RetriesHandler {
  private final BudgetService budgets;
  private final BudgetFailures failures;

  RetriesHandler(BudgetService budgets, BudgetFailures failures) {
    this.budgets = budgets;
    this.failures = failures;
  }

  void retries(RoutingContext ctx) {
    String name;
    long count;
    try {
      name = RequestParser.name(ctx.pathParam("name"));
      count = RequestParser.count(RequestParser.object(ctx.body().buffer()), RequestParser.MAX_PERMIT_COUNT);
    } catch (BadRequestException e) {
      Responses.badRequest(ctx, e);
      return;
    }
    if (count == 1) {
      acquire(ctx, name, count); // one permit fits every balance that refills
      return;
    }
    // more than one: refused at once, with nothing counted, when more than the paced balance can
    // hold (half a second of its rate); shadow mode refuses nothing, so it is asked as always
    budgets.status(name).onComplete(r -> {
      if (r.failed()) {
        failures.redisDown(ctx, r.cause());
      } else if (r.result().exists() && !"shadow".equals(r.result().mode())
          && count > BudgetStatus.capPermits(r.result().refillPpm()) && r.result().refillPpm() > 0) {
        overCap(ctx, count, BudgetStatus.capPermits(r.result().refillPpm()));
      } else {
        acquire(ctx, name, count);
      }
    });
  }

  private static void overCap(RoutingContext ctx, long count, long cap) {
    Responses.problem(ctx, Problem.of(Problem.Type.COUNT_OVER_CAP, 422, "count", "count " + count
        + " is more than this budget can hold at once now (" + cap
        + ": half a second of its refill rate), so it could not be granted by waiting; ask for at most " + cap
        + " at a time", Responses.instance(ctx)).put("max_count", cap));
  }

  private void acquire(RoutingContext ctx, String name, long count) {
    budgets.acquire(name, count).onComplete(r -> {
      if (r.failed()) {
        failures.redisDown(ctx, r.cause());
        return;
      }
      BudgetReply reply = r.result();
      if (BudgetReply.MISSING.equals(reply.status())) {
        BudgetFailures.missing(ctx, name);
        return;
      }
      boolean granted = !BudgetReply.DENIED.equals(reply.status());
      if (!granted && reply.refillPpm() > 0 && count > BudgetStatus.capPermits(reply.refillPpm())) {
        // the cap fell between the check and the call (or the call seeded the budget): counted as denied
        overCap(ctx, count, BudgetStatus.capPermits(reply.refillPpm()));
        return;
      }
      JsonObject out = RequestsHandler.window(reply).put("granted", granted).put("permits", granted ? count : 0)
          .put("shadow", BudgetReply.SHADOW.equals(reply.status()));
      if (!granted) {
        // when the paced balance holds the permits asked for again (at its refill rate), at least 1 s;
        // one bucket when it does not refill by itself (no traffic, no floor)
        long perPermitMs = reply.refillPpm() > 0 ? (1_000_000_000L + reply.refillPpm() - 1) / reply.refillPpm() : -1;
        long waitMs = perPermitMs < 0 ? reply.windowSeconds() * 100L
            : Math.max(reply.nextGrantMillis(), 0) + Math.max(0, count - Math.max(reply.available(), 1)) * perPermitMs;
        ctx.response().putHeader("Retry-After", Long.toString(Math.max(1, Math.min(3600, (waitMs + 999) / 1000))));
      }
      Responses.json(ctx, granted ? 200 : 429, out);
    });
  }
}
