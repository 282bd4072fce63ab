package io.retrybudget.coordinator.api;

import io.retrybudget.budget.redis.protocol.BrokenBudgetException;
import io.retrybudget.coordinator.budgets.BudgetService;
import io.retrybudget.coordinator.budgets.BudgetStatus;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLong;

/**
 * {@code GET /v1/budgets}: the listing, optionally with each budget's buckets and filtered by
 * {@code exhausted}. Each listing is encoded once per filter and the encoding shared by every
 * request that waited for that listing.
 */
final class ListingHandler {
  private final BudgetService budgets;
  private final BudgetFailures failures;
  private final int maxBudgets;
  // one encoding per listing and filter, shared by every request that waited for that listing: each
  // encoded it again before, all in one turn of the one event loop (2,000 readers of a 1,000-budget
  // listing: the loop blocked 4 s, so permits and readiness, whose Redis replies it reads, got 503)
  // [with buckets][filter]
  private final BudgetService.Listing[] encodedListing = new BudgetService.Listing[2];
  private final Buffer[][] encodedBodies = new Buffer[2][3];
  private final AtomicLong listingEncodes = new AtomicLong();

  ListingHandler(BudgetService budgets, BudgetFailures failures, int maxBudgets) {
    this.budgets = budgets;
    this.failures = failures;
    this.maxBudgets = maxBudgets;
  }

  void list(RoutingContext ctx) {
    String exhausted = ctx.queryParams().get("exhausted");
    if (exhausted != null && !exhausted.equals("true") && !exhausted.equals("false")) {
      Responses.error(ctx, 400, "exhausted", "exhausted must be true or false");
      return;
    }
    String buckets = ctx.queryParams().get("buckets");
    if (buckets != null && !buckets.equals("true") && !buckets.equals("false")) {
      Responses.error(ctx, 400, "buckets", "buckets must be true or false");
      return;
    }
    boolean withBuckets = "true".equals(buckets);
    budgets.list(maxBudgets, withBuckets).onComplete(r -> {
      if (r.failed()) {
        failures.redisDown(ctx, r.cause());
        return;
      }
      if (ctx.response().ended() || ctx.response().closed()) {
        return; // the reader left while it waited: nothing to encode for it
      }
      Responses.json(ctx, 200, listingBody(r.result(), withBuckets, exhausted));
    });
  }

  /** The listing's body with the {@code exhausted} filter (null: none), encoded once per listing. */
  private synchronized Buffer listingBody(BudgetService.Listing listing, boolean withBuckets, String exhausted) {
    int kind = withBuckets ? 1 : 0;
    Buffer[] bodies = encodedBodies[kind];
    if (listing != encodedListing[kind]) {
      encodedListing[kind] = listing;
      Arrays.fill(bodies, null);
    }
    int variant = exhausted == null ? 0 : exhausted.equals("true") ? 1 : 2;
    if (bodies[variant] == null) {
      JsonArray items = new JsonArray();
      for (BudgetStatus s : listing.budgets()) {
        if (exhausted == null || s.exhausted() == Boolean.parseBoolean(exhausted)) {
          items.add(s.toJson());
        }
      }
      JsonArray broken = new JsonArray();
      listing.broken().forEach(b -> broken.add(brokenJson(b)));
      bodies[variant] = new JsonObject().put("budgets", items).put("broken", broken)
          .put("truncated", listing.truncated()).toBuffer();
      listingEncodes.incrementAndGet();
    }
    return bodies[variant];
  }

  /** How many listing bodies were encoded. */
  long encodes() {
    return listingEncodes.get();
  }

  private static JsonObject brokenJson(BrokenBudgetException b) {
    return new JsonObject().put("name", b.budget()).put("key", b.key()).put("field", b.field())
        .put("error", b.getMessage());
  }
}
