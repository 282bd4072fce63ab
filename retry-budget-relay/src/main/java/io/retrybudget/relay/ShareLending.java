package io.retrybudget.relay;

import io.retrybudget.budget.redis.protocol.BudgetReply;
import java.util.function.DoubleSupplier;

/**
 * What a relay may grant with nothing drawn ({@link BudgetRelay}): its part of the budget's paced
 * balance as Redis last reported it, {@code available / callers} (the callers Redis counts: relays, and
 * clients that talk to it directly; the most it reported in the last {@link #CALLERS_MEMORY_MILLIS},
 * so a fleet count that starts over after Redis lost its keys does not make each relay's part the
 * whole), less the retries it owes Redis since the call that reply answered took its counts: those it
 * lent, its own grants while cut off, and its clients' fallback grants, all of which budget.lua pays
 * from the balance before it grants anything else. A fraction of a permit is lent whole with that
 * chance, once a reply, so a fleet of more callers than permits still grants a lone retry, and the
 * relays together lend what the balance holds on average.
 *
 * <p>Each relay lends from its own part, and a part is reported and paid before the reply that renews
 * it; what one relay lent from a part another relay's draw took first is not paid (the burst once more
 * at most, never the rate: {@code ShareLendingScheduleTest}). A relay with nothing drawn (no asks
 * lately, so no draws: a budget with permits to spare) so grants a lone retry at once, as Redis would,
 * instead of refusing it until a draw comes back. Pure, not thread-safe: its relay's thread.
 */
final class ShareLending {
  /** Two fleet epochs: how long the most callers Redis reported is remembered. */
  static final long CALLERS_MEMORY_MILLIS = 240_000;

  private final DoubleSupplier random;
  private long owed; // retries gone into the relay's pending counts, ever (lent ones included)
  private long lent; // of them, lent
  private long owedAtTake = -1; // owed when the call in flight took the pending counts (-1: none known)
  private long owedAtReply; // owed when the call that the reply in force answered took them
  private long available = -1; // the balance's whole permits in that reply (-1: none yet)
  private long callers; // the most callers Redis reported lately
  private long callersAt = Long.MIN_VALUE;
  private int extra = -1; // this reply's fraction of a permit: lent whole (1) or not (0); -1: not drawn yet

  ShareLending(DoubleSupplier random) {
    this.random = random;
  }

  /** Permits that may be lent at once (0 before Redis answered, or with its callers unknown). */
  long lendable() {
    if (available < 0 || callers <= 0) {
      return 0;
    }
    long whole = available / callers;
    long left = available % callers;
    if (left > 0 && extra < 0) {
      extra = random.getAsDouble() * callers < left ? 1 : 0;
    }
    return Math.max(0, whole + Math.max(0, extra) - outstanding());
  }

  /** Retries owed and not yet paid in the reply in force (owed since its call took the counts). */
  long outstanding() {
    return owed - owedAtReply;
  }

  /** Permits lent so far. */
  long lent() {
    return lent;
  }

  /** {@code permits} lent: they go to Redis with the next call, as retries granted here. */
  void lent(long permits) {
    lent += permits;
    owed += permits;
  }

  /** {@code retries} granted elsewhere went into the pending counts (a client's fallback, the relay cut off). */
  void owe(long retries) {
    owed += Math.max(0, retries);
  }

  /** A call took the pending counts (and with them every retry owed until now). */
  void taken() {
    owedAtTake = owed;
  }

  /**
   * Redis applied the call last taken and answered {@code reply} at {@code now}: what it carried is
   * paid, and the reply's balance and callers are the part's. A STALE reply (to a call sent again, whose
   * first copy ran, or whose entry Redis lost) says the balance now, but not what was paid, and after
   * Redis lost its keys it counts no caller: the callers remembered stay.
   */
  void applied(BudgetReply reply, long now) {
    boolean stale = BudgetReply.STALE.equals(reply.status());
    if (owedAtTake >= 0 && !stale) {
      owedAtReply = owedAtTake;
    }
    owedAtTake = -1;
    available = Math.max(0, reply.available()); // the balance now, a stale reply's too
    if (reply.activeClients() >= callers || now - callersAt > CALLERS_MEMORY_MILLIS) {
      callers = reply.activeClients();
      callersAt = now;
    }
    extra = -1;
  }

  /** The call last taken came to nothing known (given back, failed, in doubt): no reply to it will say. */
  void unknown() {
    owedAtTake = -1;
  }
}
