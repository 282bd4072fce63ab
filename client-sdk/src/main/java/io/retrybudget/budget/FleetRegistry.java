package io.retrybudget.budget;

import io.retrybudget.budget.redis.protocol.BudgetCall;
import io.retrybudget.budget.redis.protocol.BudgetReply;
import io.retrybudget.budget.redis.protocol.ClientSequence;
import io.retrybudget.budget.redis.protocol.RelayHeld;
import io.retrybudget.budget.redis.protocol.RelayTag;
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

    /** Whether a call refused on one way has others to go (a route across relays and Redis). */
    default boolean routed() {
      return false;
    }

    /**
     * As {@link #budget}, carrying {@code offered}'s counts (or none) if the call goes the way they were
     * in doubt on, and telling the way it went and the number of its last attempt. This default carries
     * nothing and cannot tell the number: a call of unknown fate is then lost, as before.
     */
    default Sent send(BudgetCall call, ClientSequence sequence, CallsInDoubt offered) {
      return new Sent(budget(call, sequence), 0, () -> Sent.UNKNOWN, false);
    }

    /**
     * As {@link #send(BudgetCall, ClientSequence, CallsInDoubt)}, asking a relay for its tag and carrying
     * the held items {@code held} offers for the way the call takes ({@link RelayHeld}). This default
     * asks and carries nothing.
     */
    default Sent send(BudgetCall call, ClientSequence sequence, CallsInDoubt offered,
        java.util.function.IntFunction<RelayHeld.Offer> held) {
      return send(call, sequence, offered);
    }
  }

  /**
   * A budget call on its way: its reply, the way it went ({@code RoutedPort}'s index; 0 for one way), the
   * number of its last attempt when the reply failed ({@link #UNKNOWN}: the port cannot tell; 0: none was
   * sent), whether it carries the counts in doubt it was offered, and whether the way surely judged them
   * if it was applied ({@code NumberedCall.judged()}: a relay not yet holding the client's entry on that
   * connection did not, and they are carried again).
   */
  record Sent(CompletableFuture<BudgetReply> reply, int way, java.util.function.LongSupplier number, boolean carried,
      java.util.function.BooleanSupplier judged, RelayHeld.Offer held, Supplier<RelayTag> tag,
      java.util.function.LongSupplier connection) {
    static final long UNKNOWN = -1;

    /** A call that carried no held items and asked no relay for a tag. */
    Sent(CompletableFuture<BudgetReply> reply, int way, java.util.function.LongSupplier number, boolean carried,
        java.util.function.BooleanSupplier judged) {
      this(reply, way, number, carried, judged, RelayHeld.Offer.NONE, () -> null, () -> -1);
    }

    /** A call whose carried counts are not surely judged: they are carried again (never added twice). */
    Sent(CompletableFuture<BudgetReply> reply, int way, java.util.function.LongSupplier number, boolean carried) {
      this(reply, way, number, carried, () -> false);
    }
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
