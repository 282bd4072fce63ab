package io.retrybudget.relay;

import io.retrybudget.budget.redis.protocol.BudgetReply;

/**
 * What a relay may grant with nothing drawn ({@link BudgetRelay}): its part of the budget's paced
 * balance as Redis last reported it, {@code floor(available / callers)} (the callers Redis counts:
 * relays, and clients that talk to it directly), less what it granted so since the call that reply
 * answered was taken. Each such grant goes to Redis as a retry granted here with the relay's next
 * call, which budget.lua pays from the balance before it grants anything else, so the relays' grants
 * and draws together stay within the balance: each relay lends from its own part, and a part is
 * reported and paid before the reply that renews it.
 *
 * <p>This is what lets a relay with nothing drawn (a budget with permits to spare: no asks lately, so
 * no draws) grant a lone retry at once, as Redis would, instead of refusing it until a draw comes
 * back; in a storm the balance is empty and only draws grant. Pure, not thread-safe: its relay's thread.
 */
final class ShareLending {
  private long lent; // granted from the share so far, ever
  private long lentAtTake = -1; // lent when the call in flight took the pending counts (-1: none taken)
  private long lentAtReply; // lent when the call that the reply in force answered took them

  /**
   * Permits that may be lent at once: the share of {@code upstream} (Redis's last applied reply; none
   * before one) less what was lent since its call took the counts, at least 0.
   */
  long lendable(BudgetReply upstream) {
    if (upstream == null) {
      return 0;
    }
    return Math.max(0, share(upstream.remaining(), upstream.activeClients()) - outstanding());
  }

  /** Permits lent and not yet paid in the reply in force (lent since its call took the counts). */
  long outstanding() {
    return lent - lentAtReply;
  }

  /** Permits lent so far. */
  long total() {
    return lent;
  }

  /** {@code permits} lent (they go to Redis with the next call, as retries granted here). */
  void lent(long permits) {
    lent += permits;
  }

  /** A call took the pending counts (and with them every grant lent until now). */
  void taken() {
    lentAtTake = lent;
  }

  /**
   * Redis applied the call last taken: its reply is in force, and what it carried is paid. (A reply to
   * anything else, a probe or a call sent again, changes nothing: what it paid is not known.)
   */
  void applied() {
    if (lentAtTake >= 0) {
      lentAtReply = lentAtTake;
      lentAtTake = -1;
    }
  }

  /** The call last taken came to nothing known (given back, failed, in doubt): no reply to it will say. */
  void unknown() {
    lentAtTake = -1;
  }

  /** A relay's part of a balance of {@code available} whole permits shared by {@code callers}. */
  static long share(long available, long callers) {
    return Math.max(0, available) / Math.max(1, callers);
  }
}
