package io.retrybudget.budget.redis.protocol;

/**
 * What a client tells a relay (or Redis, which ignores it: a client cannot tell a relay at Redis's
 * address from Redis) about the connection its call goes on, so the relay can add the counts
 * of calls of unknown fate numbered below the first it saw on that connection (calls of a budget's
 * first moments that timed out unwritten while later ones went ahead): {@code "first=<n>"} in
 * budget.lua's ARGV[13], {@code n} the lowest number the client knows to have been sent, if at all, on
 * the connection this call goes on (the call's own number when it knows none lower). It learns that from
 * its store's count of connections opened ({@code RedisBudgetStore.connectionsOpened()}), read as each
 * call is composed.
 *
 * <p>Why the floor holds: a call sent while the count read {@code k} went on the {@code k}th connection,
 * a later one, or nowhere (Lettuce binds a command to the channel it finds as it is sent, and counts a
 * channel before any command can find it). The floor is the first call of a run of calls to one store
 * that all read {@code k}; the count never goes back, so if a later call still reads {@code k}, no
 * later connection had opened when any call of the run was sent: they all went on the {@code k}th
 * connection, or nowhere.
 *
 * <p>One call's floor can be wrong: the first this client sends on a new connection, when the count
 * still read {@code k - 1} as it was composed, tells the old connection's floor. It is the first of its
 * sequence's numbers on that connection (the calls after it read {@code k}: {@code BudgetScripts} sends a
 * sequence's calls one after the other under its lock), so at a relay it is the first report of its
 * client on that connection or is answered stale, and the relay adds carried counts only from a later
 * report on the same connection ({@code ReportLedger}).
 *
 * <p>It also tells whether a relay surely judged what a call carried ({@link #runAnswered()}): a relay
 * judges carried counts only from its client's second report on a connection (the first has no entry
 * there to judge by), so a call is surely judged once an earlier call of its run was answered applied
 * before it was sent, and the count still reads the same once it is sent (else it may be the next
 * connection's first call: {@link #forget()}). A caller keeps carrying counts whose carrier was not
 * surely judged: carried again, they are never added twice.
 *
 * <p>One per {@link ClientSequence}, guarded by its lock. A store is compared by identity.
 */
public final class ConnectionFloor {
  private Object store;
  private long connection = -1;
  private long first;
  private volatile boolean answered; // a call of the run was answered applied (volatile: read unlocked by answeredOnce)

  /**
   * ARGV[13] for call {@code number} about to be sent to {@code store}, whose count of connections
   * opened reads {@code opened} now (at least 1; less: not known, and the claim is empty). Calls are
   * numbered in the order they are sent.
   */
  public String claim(Object store, long opened, long number) {
    if (opened < 1) {
      return "";
    }
    if (store != this.store || opened != this.connection) {
      this.store = store; // a run of calls on one connection starts
      this.connection = opened;
      this.first = number;
      this.answered = false;
    }
    return "first=" + Math.min(first, number);
  }

  /**
   * Whether a call of the run the last {@link #claim} belongs to was answered applied before now: then a
   * relay has its client's entry on that connection, and judges what the claimed call carries (the
   * entry evicted meanwhile, they are dropped: the safe side).
   */
  public boolean runAnswered() {
    return store != null && answered;
  }

  /**
   * Whether the current run was answered already, read without the lock: a reply need not take the
   * lock to tell {@link #answered} then (a stale true only skips telling a run that is over).
   */
  public boolean answeredOnce() {
    return answered;
  }

  /** A call was sent while a connection opened: pinned to no run; the next call starts one. */
  public void forget() {
    store = null;
    connection = -1;
    answered = false;
  }

  /** A call sent to {@code store} whose count read {@code connection} was answered applied. */
  public void answered(Object store, long connection) {
    if (store == this.store && connection == this.connection) {
      answered = true;
    }
  }
}
