package io.retrybudget.relay;

import io.retrybudget.budget.redis.protocol.CallExtras;
import io.retrybudget.budget.redis.protocol.HeldCounts;
import java.util.ArrayList;
import java.util.List;

/**
 * A relay's batches of one budget (pure; the relay's thread): what it tells its clients about the way
 * their counts take to Redis, so that a relay killed with sums it never sent loses none of them
 * (docs/RELAY.md, "A relay killed").
 *
 * <ul>
 *   <li>Every report the relay takes goes into the current batch ({@link #current}); each call the relay
 *       sends with all its pending counts closes it ({@link #close}: {@code through=<batch>}, every batch
 *       at or below it in this call or in one Redis applied) and opens the next.
 *   <li>Once Redis applied a call, its batch and those before are settled ({@link #applied}); a client
 *       keeps its counts of a batch above {@link #settled} and, if the relay is gone, carries them as
 *       held items, which budget.lua adds only if the relay never applied that batch.
 *   <li>Held items that clients carry here (their counts of a relay they left) are forwarded with the
 *       next call, all of them ({@link #take}: at most {@link CallExtras#MAX_HELD} in flight and waiting
 *       together, so the call that closes their batch takes them all); a call not applied, or given up
 *       in doubt, gives them back (budget.lua adds an item once, however often it comes).
 *   <li>What Redis has not applied for {@link #GIVE_UP_MILLIS} is given up ({@link #expired}): Redis
 *       keeps the entry that holds a relay's credits only two fleet epochs (4 minutes at least) after
 *       the relay's last applied call, so a batch sent later could be added on top of items its clients
 *       carried meanwhile.
 * </ul>
 */
final class RelayBatches {
  /** Counts and items Redis has not applied for this long are given up (lost: the safe side). */
  static final long GIVE_UP_MILLIS = 120_000;

  private long batch = 1;
  private long settled;
  private long settledAt = Long.MIN_VALUE; // when Redis last applied a call, or the clock began (first report)
  private final List<HeldCounts> waiting = new ArrayList<>();
  private CallExtras inFlight = CallExtras.NONE; // what the call in flight (or in doubt) said
  private long droppedItems;

  /** The batch a report taken at {@code now} goes into. */
  long current(long now) {
    if (settledAt == Long.MIN_VALUE) {
      settledAt = now;
    }
    return batch;
  }

  /**
   * Whether nothing was applied for {@link #GIVE_UP_MILLIS} at {@code now}: then what is pending (the
   * relay's counts, the items waiting) is given up, and the clock starts again.
   */
  boolean expired(long now) {
    if (settledAt == Long.MIN_VALUE || now - settledAt < GIVE_UP_MILLIS) {
      return false;
    }
    droppedItems += waiting.size();
    waiting.clear();
    settledAt = now;
    return true;
  }

  /** Every batch at or below this is in a call Redis applied. */
  long settled() {
    return settled;
  }

  /**
   * Takes {@code items} (a client's held counts of another relay) for the next call, all or none: none
   * when they would not fit in one call with those waiting and in flight (the client carries them again).
   */
  boolean take(List<HeldCounts> items) {
    if (items.isEmpty()) {
      return true;
    }
    if (waiting.size() + inFlight.held().size() + items.size() > CallExtras.MAX_HELD) {
      return false;
    }
    waiting.addAll(items);
    return true;
  }

  /**
   * A call with all the pending counts goes: it closes the current batch and forwards every item
   * waiting. Returns what it says ({@code through} and the items).
   */
  CallExtras close() {
    inFlight = CallExtras.through(batch, waiting);
    waiting.clear();
    batch++;
    return inFlight;
  }

  /** A call that leaves the counts pending goes (a cut-off relay's probe): it closes nothing, forwards nothing. */
  CallExtras probe() {
    inFlight = CallExtras.NONE;
    return inFlight;
  }

  /** Whether held items wait for the next call. */
  boolean waiting() {
    return !waiting.isEmpty();
  }

  /** What the call in flight, or the one held in doubt to be sent again as it was, says. */
  CallExtras inFlight() {
    return inFlight;
  }

  /** Redis applied the call in flight at {@code now}: its batch and those before are settled. */
  void applied(long now) {
    settled = Math.max(settled, inFlight.through());
    settledAt = now;
    inFlight = CallExtras.NONE;
  }

  /**
   * Redis applied nothing of the call in flight (its counts go with the next call, which closes a later
   * batch): its items wait again, ahead of those come since.
   */
  void givenBack() {
    waiting.addAll(0, inFlight.held());
    inFlight = CallExtras.NONE;
  }

  /**
   * The call in flight is given up (it may have been applied): its counts are lost, the safe side; its
   * items wait again (budget.lua adds each once, so a second copy is harmless).
   */
  void lost() {
    givenBack();
  }

  /** Held items given up with calls given up. */
  long droppedItems() {
    return droppedItems;
  }
}
