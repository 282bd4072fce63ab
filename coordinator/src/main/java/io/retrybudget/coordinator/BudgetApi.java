package io.retrybudget.coordinator;

import io.retrybudget.budget.redis.BrokenBudgetException;
import io.retrybudget.budget.redis.BudgetReply;
import io.vertx.core.Handler;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.BodyHandler;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.List;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The HTTP API v1 (coordinator/openapi.yaml): routes, authentication of writes, and the mapping of
 * every failure to a JSON error: 400 naming the field, 401, 404, 413, 503 when Redis fails.
 */
final class BudgetApi {
  static final int MAX_BODY_BYTES = 64 * 1024;
  private static final Logger LOG = Logger.getLogger(BudgetApi.class.getName());

  private final BudgetService budgets;
  private final byte[] token;
  private final int maxBudgets;

  BudgetApi(BudgetService budgets, String token, int maxBudgets) {
    this.budgets = budgets;
    this.token = ("Bearer " + token).getBytes(StandardCharsets.UTF_8);
    this.maxBudgets = maxBudgets;
  }

  void mount(Router router) {
    Handler<RoutingContext> body = BodyHandler.create(false).setBodyLimit(MAX_BODY_BYTES);
    router.get("/v1/budgets").handler(this::list);
    router.get("/v1/budgets/:name").handler(this::get);
    router.put("/v1/budgets/:name").handler(body).handler(this::authenticate).handler(this::put);
    router.post("/v1/budgets/:name/requests").handler(body).handler(this::authenticate).handler(this::requests);
    router.post("/v1/budgets/:name/retries").handler(body).handler(this::authenticate).handler(this::retries);
    router.delete("/v1/budgets/:name").handler(this::authenticate).handler(this::delete);
    router.get("/health/live").handler(ctx -> json(ctx, 200, new JsonObject().put("status", "UP")));
    router.get("/health/ready").handler(this::ready);

    router.errorHandler(404, ctx -> error(ctx, 404, null, "no such resource"));
    router.errorHandler(405, ctx -> error(ctx, 405, null, "method not allowed"));
    router.errorHandler(413, ctx -> error(ctx, 413, "body", "body larger than " + MAX_BODY_BYTES + " bytes"));
    router.errorHandler(400, ctx -> error(ctx, 400, "body", "bad request"));
    router.errorHandler(500, ctx -> {
      LOG.log(Level.SEVERE, "unexpected failure on " + ctx.request().path(), ctx.failure());
      error(ctx, 500, null, "internal error");
    });
  }

  private void authenticate(RoutingContext ctx) {
    String header = ctx.request().getHeader("Authorization");
    if (header == null || !MessageDigest.isEqual(token, header.getBytes(StandardCharsets.UTF_8))) {
      ctx.response().putHeader("WWW-Authenticate", "Bearer");
      error(ctx, 401, "Authorization", "a valid bearer token is required for writes");
      return;
    }
    ctx.next();
  }

  private void list(RoutingContext ctx) {
    budgets.list(maxBudgets).onComplete(r -> {
      if (r.failed()) {
        redisDown(ctx, r.cause());
        return;
      }
      BudgetService.Listing listing = r.result();
      JsonArray items = new JsonArray();
      listing.budgets().forEach(s -> items.add(s.toJson()));
      JsonArray broken = new JsonArray();
      listing.broken().forEach(b -> broken.add(brokenJson(b)));
      json(ctx, 200, new JsonObject().put("budgets", items).put("broken", broken).put("truncated", listing.truncated()));
    });
  }

  private void get(RoutingContext ctx) {
    String name;
    try {
      name = RequestParser.name(ctx.pathParam("name"));
    } catch (BadRequestException e) {
      badRequest(ctx, e);
      return;
    }
    budgets.status(name).onComplete(r -> {
      if (r.failed()) {
        redisDown(ctx, r.cause());
      } else if (!r.result().exists()) {
        error(ctx, 404, "name", "no budget named " + name);
      } else {
        json(ctx, 200, r.result().toJson());
      }
    });
  }

  private void delete(RoutingContext ctx) {
    String name;
    try {
      name = RequestParser.name(ctx.pathParam("name"));
    } catch (BadRequestException e) {
      badRequest(ctx, e);
      return;
    }
    budgets.delete(name).onComplete(r -> {
      if (r.failed()) {
        redisDown(ctx, r.cause());
      } else if (!r.result()) {
        error(ctx, 404, "name", "no budget named " + name);
      } else if (!ctx.response().ended() && !ctx.response().closed()) {
        ctx.response().setStatusCode(204).end();
      }
    });
  }

  private void put(RoutingContext ctx) {
    String name;
    ConfigUpdate update;
    try {
      name = RequestParser.name(ctx.pathParam("name"));
      update = RequestParser.configUpdate(RequestParser.object(ctx.body().buffer()));
    } catch (BadRequestException e) {
      badRequest(ctx, e);
      return;
    }
    budgets.configure(name, update).onComplete(r -> {
      if (r.failed()) {
        redisDown(ctx, r.cause());
      } else {
        json(ctx, 200, r.result().toJson());
      }
    });
  }

  private void requests(RoutingContext ctx) {
    String name;
    long count;
    try {
      name = RequestParser.name(ctx.pathParam("name"));
      count = RequestParser.count(RequestParser.object(ctx.body().buffer()), RequestParser.MAX_REQUEST_COUNT);
    } catch (BadRequestException e) {
      badRequest(ctx, e);
      return;
    }
    budgets.countRequests(name, count).onComplete(r -> {
      if (r.failed()) {
        redisDown(ctx, r.cause());
      } else if (BudgetReply.MISSING.equals(r.result().status())) {
        missing(ctx, name);
      } else {
        json(ctx, 200, window(r.result()).put("counted", count));
      }
    });
  }

  private void retries(RoutingContext ctx) {
    String name;
    long count;
    try {
      name = RequestParser.name(ctx.pathParam("name"));
      count = RequestParser.count(RequestParser.object(ctx.body().buffer()), RequestParser.MAX_PERMIT_COUNT);
    } catch (BadRequestException e) {
      badRequest(ctx, e);
      return;
    }
    budgets.acquire(name, count).onComplete(r -> {
      if (r.failed()) {
        redisDown(ctx, r.cause());
        return;
      }
      BudgetReply reply = r.result();
      if (BudgetReply.MISSING.equals(reply.status())) {
        missing(ctx, name);
        return;
      }
      boolean granted = !BudgetReply.DENIED.equals(reply.status());
      JsonObject out = window(reply).put("granted", granted).put("permits", granted ? count : 0)
          .put("shadow", BudgetReply.SHADOW.equals(reply.status()));
      if (!granted) {
        // allowance comes back as the oldest bucket leaves the window: one bucket, at least 1 s
        ctx.response().putHeader("Retry-After", Long.toString(Math.max(1, (reply.windowSeconds() + 9) / 10)));
      }
      json(ctx, granted ? 200 : 429, out);
    });
  }

  private static JsonObject window(BudgetReply r) {
    return new JsonObject()
        .put("requests", r.requests())
        .put("retries", r.retries())
        .put("denied", r.denied())
        .put("allowance", r.allowance())
        .put("remaining", r.remaining());
  }

  private void ready(RoutingContext ctx) {
    budgets.ping().onComplete(r -> {
      if (r.succeeded()) {
        json(ctx, 200, new JsonObject().put("status", "UP").put("redis", "UP"));
      } else {
        json(ctx, 503, new JsonObject().put("status", "DOWN").put("redis", "DOWN")
            .put("error", String.valueOf(r.cause().getMessage())));
      }
    });
  }

  private static void badRequest(RoutingContext ctx, BadRequestException e) {
    error(ctx, 400, e.field(), e.getMessage());
  }

  /** A write to a budget that has no configuration: nothing was created (COORDINATOR_AUTO_CREATE=false). */
  private static void missing(RoutingContext ctx, String name) {
    error(ctx, 404, "name", "no budget named " + name + ": create it first with PUT /v1/budgets/" + name);
  }

  private static JsonObject brokenJson(BrokenBudgetException b) {
    return new JsonObject().put("name", b.budget()).put("key", b.key()).put("field", b.field())
        .put("error", b.getMessage());
  }

  private static void redisDown(RoutingContext ctx, Throwable cause) {
    if (cause instanceof BrokenBudgetException b) {
      // Redis is up; this budget's keys hold bad state: 409, naming budget, key and field
      json(ctx, 409, brokenJson(b).put("budget", b.budget())
          .put("error", b.getMessage() + "; fix it with PUT or DELETE /v1/budgets/" + b.budget()));
      return;
    }
    LOG.log(Level.FINE, "Redis call failed", cause);
    error(ctx, 503, null, "Redis unavailable: " + cause.getClass().getSimpleName());
  }

  private static void error(RoutingContext ctx, int status, String field, String message) {
    JsonObject body = new JsonObject().put("error", message);
    if (field != null) {
      body.put("field", field);
    }
    json(ctx, status, body);
  }

  private static void json(RoutingContext ctx, int status, JsonObject body) {
    if (ctx.response().ended() || ctx.response().closed()) {
      return;
    }
    ctx.response().setStatusCode(status).putHeader("Content-Type", "application/json").end(body.encode());
  }
}
