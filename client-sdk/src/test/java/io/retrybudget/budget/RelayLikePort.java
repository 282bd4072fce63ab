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
  private long batch;

  RelayLikePort(ModelStore store) {
    this.store = store;
  }

  @Override
  public CompletableFuture<BudgetReply> budget(BudgetCall call, ClientSequence sequence) {
    return store.budget(call, sequence);
  }

  @Override
  public FleetRegistry.Sent send(BudgetCall call, ClientSequence sequence, CallsInDoubt offered,
      IntFunction<RelayHeld.Offer> held) {
    CompletableFuture<BudgetReply> reply = store.budget(call, sequence);
    long b = ++batch;
    RelayTag tag = new RelayTag("relay-model", b, b, true);
    return new FleetRegistry.Sent(reply, 0, () -> FleetRegistry.Sent.UNKNOWN, false, () -> false,
        RelayHeld.Offer.NONE, () -> reply.isDone() && !reply.isCompletedExceptionally() ? tag : null, () -> -1);
  }
}
