package io.retrybudget.relay;

import java.util.ArrayDeque;

/**
 * The permits a relay drew from Redis for one budget and has not handed out yet: its share of the
 * budget's paced balance. Redis counted each permit as granted when the relay drew it, so a permit the
 * pool drops unused (too old: the balance it came from has moved on) was counted and never used, the
 * safe side. Draws are kept in order; the oldest is handed out first. Time comes in as an argument.
 * Not thread-safe.
 */
public final class PermitPool {
  private static final class Draw {
    long left;
    final long expiresAt;

    Draw(long left, long expiresAt) {
      this.left = left;
      this.expiresAt = expiresAt;
    }
  }

  private final ArrayDeque<Draw> draws = new ArrayDeque<>();
  private long held;
  private long dropped;

  /** Keeps {@code permits} drawn at {@code nowMillis} until {@code nowMillis + lifeMillis}. */
  public void add(long permits, long nowMillis, long lifeMillis) {
    if (permits < 0 || lifeMillis <= 0) {
      throw new IllegalArgumentException("permits must be >= 0 and lifeMillis > 0, were " + permits + ", " + lifeMillis);
    }
    if (permits == 0) {
      return;
    }
    draws.addLast(new Draw(permits, nowMillis + lifeMillis));
    held += permits;
  }

  /** Permits held at {@code nowMillis} (those too old dropped first). */
  public long held(long nowMillis) {
    expire(nowMillis);
    return held;
  }

  /**
   * Hands out {@code min(want, held)} permits if at least {@code need} are held, else none: all or none
   * for {@code need}, a lease up to {@code want} (as budget.lua grants). Returns the permits taken.
   */
  public long take(long need, long want, long nowMillis) {
    if (need < 1 || want < need) {
      throw new IllegalArgumentException("need must be >= 1 and want >= need, were " + need + ", " + want);
    }
    expire(nowMillis);
    if (held < need) {
      return 0;
    }
    long taken = Math.min(want, held);
    long rest = taken;
    while (rest > 0) {
      Draw d = draws.peekFirst();
      long t = Math.min(rest, d.left);
      d.left -= t;
      rest -= t;
      if (d.left == 0) {
        draws.pollFirst();
      }
    }
    held -= taken;
    return taken;
  }

  /** Drops everything held (counted as dropped): the relay's view of the balance is no longer good. */
  public void clear() {
    dropped += held;
    held = 0;
    draws.clear();
  }

  /** Permits drawn and never handed out: dropped when too old, or cleared. */
  public long dropped() {
    return dropped;
  }

  private void expire(long nowMillis) {
    while (!draws.isEmpty() && draws.peekFirst().expiresAt <= nowMillis) {
      Draw d = draws.pollFirst();
      held -= d.left;
      dropped += d.left;
    }
  }
}
