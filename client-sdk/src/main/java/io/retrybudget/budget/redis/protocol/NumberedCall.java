package io.retrybudget.budget.redis.protocol;

import java.util.concurrent.CompletableFuture;

/**
 * One budget.lua call of a numbering client, in flight or done ({@link BudgetScripts#numbered}): its
 * reply and the number it was last sent with. Once the reply is done no attempt of it is sent any more
 * (not even a re-send already scheduled), so after a timeout {@link #number()} is the one number the
 * call may have been applied under: a caller that sends it again with that number
 * ({@link BudgetScripts#again}) has it applied exactly once, as budget.lua refuses a number it has seen.
 */
public final class NumberedCall {
  private final CompletableFuture<BudgetReply> reply = new CompletableFuture<>();
  private final ClientSequence sequence;
  private long number; // guarded by sequence's lock
  private boolean judged = true; // guarded by sequence's lock
  private volatile RelayTag tag; // set before the reply completes
  private volatile long connection = -1; // written under sequence's lock, read without it (a reply's path)

  NumberedCall(ClientSequence sequence) {
    this.sequence = sequence;
  }

  /** Redis's reply; the caller may complete it (a timeout: {@code reply().orTimeout(...)}) to give up. */
  public CompletableFuture<BudgetReply> reply() {
    return reply;
  }

  /** The number of the call's last attempt (0 before the first was sent). */
  public long number() {
    synchronized (sequence) {
      return number;
    }
  }

  /**
   * Whether the way surely judged the counts in doubt the last attempt carried, if it was applied: when
   * an earlier call on the same connection had been answered applied before it was sent
   * ({@link ConnectionFloor#runAnswered()}; a relay judges carried counts only from its client's second
   * report on a connection, and a client cannot tell a relay from Redis), or when the store cannot count
   * its connections (as before the floor). Not when a connection opened while it was sent. A caller
   * keeps carrying counts not surely judged: carried again, they are never added twice.
   */
  public boolean judged() {
    synchronized (sequence) {
      return judged;
    }
  }

  /**
   * The relay's tag for the counts this call's applied reply took ({@link CallExtras#hold}), or null: a
   * reply from Redis, or a call not applied. Read once the reply is done.
   */
  public RelayTag tag() {
    return tag;
  }

  void tagged(RelayTag tag) {
    this.tag = tag;
  }

  /**
   * Under the sequence's lock, with the reply not done: an attempt goes with {@code n}, the way
   * {@code judged} surely judging what it carries.
   */
  void sentWith(long n, boolean judged, long connection) {
    number = n;
    this.judged = judged;
    this.connection = connection;
  }

  /**
   * The store's count of connections opened as the last attempt was sent, if it did not move while it
   * was sent (the attempt went, if at all, on that connection: {@code RedisBudgetStore#connectionsOpened});
   * -1 when not known.
   */
  public long connection() {
    return connection;
  }
}
