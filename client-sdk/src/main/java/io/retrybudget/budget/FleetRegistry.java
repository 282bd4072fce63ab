package io.retrybudget.budget;

import io.retrybudget.budget.redis.protocol.BudgetCall;
import io.retrybudget.budget.redis.protocol.BudgetReply;
import io.retrybudget.budget.redis.protocol.ClientSequence;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * What a {@link RedisRetryBudget} needs from the process that holds it (a {@link RedisBudgetClient}):
 * the way to Redis, what the process knows of each budget's fleet, and its rate-limited log.
 */
interface FleetRegistry {
  /** One budget.lua call, numbered by {@code sequence}. */
  interface Port {
    CompletableFuture<BudgetReply> budget(BudgetCall call, ClientSequence sequence);
  }

  /** The way to Redis; null while it was never reached. */
  Port port();

  /** At least the live budgets of {@code name} in this process, and the fleet size one of them learned. */
  long fleetEstimate(String name);

  /** A budget of {@code name} heard that its fleet is {@code clients} clients ({@code first}: its first reply). */
  void learnedFleet(String name, long clients, boolean first);

  /** The budget was closed. */
  void forget(RedisRetryBudget budget);

  void logDegraded(Supplier<String> message);

  void logRecovered(Supplier<String> message);
}
