package io.retrybudget.coordinator;

import static io.retrybudget.budget.redis.BudgetReply.asLong;

import io.vertx.core.json.JsonObject;
import java.util.List;

/** One budget's configuration and window, as {@code GET /v1/budgets/{name}} shows it. */
record BudgetStatus(
    String name,
    boolean exists,
    String mode,
    long ratioPpm,
    int windowSeconds,
    int minRetriesPerSecond,
    long requests,
    long retries,
    long denied,
    long allowance,
    long activeClients) {

  /** From status.lua's reply. */
  static BudgetStatus fromStatusReply(String name, List<Object> r) {
    return new BudgetStatus(name, asLong(r.get(0)) > 0, String.valueOf(r.get(9)), asLong(r.get(6)),
        (int) asLong(r.get(7)), (int) asLong(r.get(8)), asLong(r.get(1)), asLong(r.get(2)), asLong(r.get(3)),
        asLong(r.get(4)), asLong(r.get(5)));
  }

  double ratio() {
    return ratioPpm / 1_000_000.0;
  }

  double retryRatio() {
    return requests == 0 ? 0.0 : (double) retries / requests;
  }

  long remaining() {
    return Math.max(0, allowance - retries);
  }

  boolean exhausted() {
    return remaining() < 1;
  }

  JsonObject toJson() {
    return new JsonObject()
        .put("name", name)
        .put("mode", mode)
        .put("ratio", ratio())
        .put("window_seconds", windowSeconds)
        .put("min_retries_per_second", minRetriesPerSecond)
        .put("requests", requests)
        .put("retries", retries)
        .put("denied", denied)
        .put("retry_ratio", retryRatio())
        .put("allowance", allowance)
        .put("remaining", remaining())
        .put("exhausted", exhausted())
        .put("active_clients", activeClients);
  }
}
