package io.retrybudget.budget;

import io.retrybudget.budget.redis.protocol.BudgetCall;
import io.retrybudget.budget.redis.protocol.BudgetKeys;
import io.retrybudget.budget.redis.protocol.BudgetReply;
import io.retrybudget.budget.redis.protocol.BudgetScripts;
import io.retrybudget.budget.redis.protocol.CallExtras;
import io.retrybudget.budget.redis.protocol.RelayHeld;
import io.retrybudget.budget.redis.protocol.ClientSequence;
import io.retrybudget.budget.redis.protocol.CountsInDoubt;
import io.retrybudget.budget.redis.protocol.NumberedCall;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The way to one store (Redis, or a relay that speaks budget.lua): each budget's keys made once
 * (standalone and Cluster differ in the index key), each call numbered by its budget's sequence, with
 * the counts in doubt it is offered when they are this way's ({@link #WAY} for a client without relays).
 */
final class DirectPort implements FleetRegistry.Port {
  /** The way index of a client without relays. */
  static final int WAY = 0;

  private final BudgetScripts scripts;
  private final int way;
  private final ConcurrentHashMap<String, BudgetKeys> keys = new ConcurrentHashMap<>();

  DirectPort(BudgetScripts scripts, int way) {
    this.scripts = scripts;
    this.way = way;
  }

  /** What {@code held} offers this way; nothing, should it fail (a call is never lost to it). */
  private static RelayHeld.Offer offer(java.util.function.IntFunction<RelayHeld.Offer> held, int way) {
    try {
      return held.apply(way);
    } catch (RuntimeException e) {
      return RelayHeld.Offer.NONE;
    }
  }

  BudgetScripts scripts() {
    return scripts;
  }

  @Override
  public CompletableFuture<BudgetReply> budget(BudgetCall call, ClientSequence sequence) {
    return send(call, sequence, null).reply();
  }

  /**
   * Sends {@code call}, carrying {@code offered}'s counts when they were in doubt on this way. A call
   * that throws before it is sent fails with number {@link FleetRegistry.Sent#UNKNOWN} (it may have been
   * written: lost, as before).
   */
  @Override
  public FleetRegistry.Sent send(BudgetCall call, ClientSequence sequence, CallsInDoubt offered) {
    return send(call, sequence, offered, w -> RelayHeld.Offer.NONE);
  }

  /**
   * As {@link #send(BudgetCall, ClientSequence, CallsInDoubt)}, asking a relay for its tag ({@code hold};
   * Redis ignores it) and carrying the held items {@code held} offers for this way.
   */
  @Override
  public FleetRegistry.Sent send(BudgetCall call, ClientSequence sequence, CallsInDoubt offered,
      java.util.function.IntFunction<RelayHeld.Offer> held) {
    List<CountsInDoubt> carried = offered != null && offered.way() == way ? offered.counts() : List.of();
    try {
      RelayHeld.Offer items = offer(held, way);
      NumberedCall n = scripts.numbered(call, keys.computeIfAbsent(call.name(), scripts::keys), sequence, carried,
          CallExtras.holding(items.items()));
      return new FleetRegistry.Sent(n.reply(), way, n::number, !carried.isEmpty(), n::judged, items, n::tag,
          n::connection);
    } catch (RuntimeException e) {
      return new FleetRegistry.Sent(CompletableFuture.failedFuture(e), way, () -> FleetRegistry.Sent.UNKNOWN, false);
    }
  }
}
