package io.retrybudget.coordinator.budgets;

import io.retrybudget.budget.redis.protocol.StatusReply;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

/**
 * One budget's configuration and window, as {@code GET /v1/budgets/{name}} shows it (with the window
 * bucket by bucket; the listing leaves {@code buckets} null).
 */
public record BudgetStatus(
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
    long activeClients,
    StatusReply.Source source,
    int maxCallsPerSecond,
    long available,
    long nextGrantMillis,
    StatusReply.WindowBuckets buckets,
    long refillPpm) {

  /** From status.lua's reply, as the SDK's protocol parsed it. */
  static BudgetStatus of(StatusReply r) {
    return new BudgetStatus(r.name(), r.exists(), r.settings().mode(), r.settings().ratioPpm(),
        r.settings().windowSeconds(), r.settings().minRetriesPerSecond(), r.requests(), r.retries(), r.denied(),
        r.allowance(), r.activeClients(), r.source(), r.settings().maxCallsPerSecond(), r.available(),
        r.nextGrantMillis(), r.buckets(), r.refillPpm());
  }

  double ratio() {
    return ratioPpm / 1_000_000.0;
  }

  double retryRatio() {
    return requests == 0 ? 0.0 : (double) retries / requests;
  }

  /** Permits a request could be granted now: the paced balance's whole permits. */
  long remaining() {
    return available;
  }

  public boolean exhausted() {
    return remaining() < 1;
  }

  /** The paced balance's refill rate, permits a second (the ratio of the first attempts' rate plus the floor). */
  double refillPerSecond() {
    return refillPpm / 1_000_000.0;
  }

  /** The most whole permits the paced balance holds: half a second of its refill rate, at least 1 while it refills. */
  long balanceCap() {
    return capPermits(refillPpm);
  }

  /**
   * Whole permits the paced balance holds at most at this refill rate: the scripts' own rule
   * (lua/budget.lua pace_cap), through its Java model, parity-checked against Redis.
   */
  public static long capPermits(long refillPpm) {
    return StatusReply.capPermits(refillPpm);
  }

  public JsonObject toJson() {
    JsonObject json = new JsonObject()
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
        .put("balance_cap", balanceCap())
        .put("refill_per_second", refillPerSecond())
        .put("exhausted", exhausted())
        .put("active_clients", activeClients)
        .put("max_calls_per_second", maxCallsPerSecond)
        .put("next_grant_ms", nextGrantMillis);
    if (buckets != null) {
      JsonArray items = new JsonArray();
      for (StatusReply.Bucket b : buckets.buckets()) {
        items.add(new JsonObject().put("start_ms", b.startMillis()).put("requests", b.requests())
            .put("retries", b.retries()).put("denied", b.denied()));
      }
      json.put("bucket_ms", buckets.bucketMillis()).put("now_ms", buckets.nowMillis()).put("buckets", items);
    }
    return json;
  }
}
