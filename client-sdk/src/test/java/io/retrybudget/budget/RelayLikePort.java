package io.retrybudget.budget;

import io.retrybudget.budget.redis.protocol.BudgetCall;
import io.retrybudget.budget.redis.protocol.BudgetReply;
import io.retrybudget.budget.redis.protocol.ClientSequence;
import io.retrybudget.budget.redis.protocol.RelayHeld;
import io.retrybudget.budget.redis.protocol.RelayTag;
import java.util.concurrent.CompletableFuture;
import java.util.function.IntFunction;

/**
 * A {@link ModelStore} answering as a relay does: each applied reply carries a relay's tag, its batch
 * settled at once (the relay's own call to Redis is not modelled). What the engine sees of a relay that
 * decides as budget.lua: {@link AskAhead} acts on it.
 */
final class RelayLikePort implements FleetRegistry.Port {
  private final ModelStore store;
  private final long clients;
  private final int ceiling;
  private final long available;
  private long batch;

  RelayLikePort(ModelStore store) {
    this(store, 0, 0, -1);
  }

  /**
   * A relay of {@code clients} clients taking {@code ceiling} client calls a second (so they sample
   * their asks), whose replies say its pool holds {@code available} permits (as a relay that drew
   * holds some between its clients' asks in a storm); 0 / -1: as the store said.
   */
  RelayLikePort(ModelStore store, long clients, int ceiling, long available) {
    this.store = store;
    this.clients = clients;
    this.ceiling = ceiling;
    this.available = available;
  }

  private BudgetReply asRelay(BudgetReply r) {
    if (clients <= 0) {
      return r;
    }
    return new BudgetReply(r.status(), r.granted(), r.requests(), r.retries(), r.denied(), r.allowance(), clients,
        r.ratioPpm(), r.windowSeconds(), r.minRetriesPerSecond(), r.mode(), available < 0 ? r.available() : available,
        r.nextGrantMillis(), r.refillPpm(), r.maxCallsPerSecond(), ceiling);
  }

  @Override
  public CompletableFuture<BudgetReply> budget(BudgetCall call, ClientSequence sequence) {
    return store.budget(call, sequence).thenApply(this::asRelay);
  }

  @Override
  public FleetRegistry.Sent send(BudgetCall call, ClientSequence sequence, CallsInDoubt offered,
      IntFunction<RelayHeld.Offer> held) {
    CompletableFuture<BudgetReply> reply = store.budget(call, sequence).thenApply(this::asRelay);
    long b = ++batch;
    RelayTag tag = new RelayTag("relay-model", b, b, true);
    return new FleetRegistry.Sent(reply, 0, () -> FleetRegistry.Sent.UNKNOWN, false, () -> false,
        RelayHeld.Offer.NONE, () -> reply.isDone() && !reply.isCompletedExceptionally() ? tag : null, () -> -1);
  }
}
