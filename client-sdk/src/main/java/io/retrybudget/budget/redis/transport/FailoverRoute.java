package io.retrybudget.budget.redis.transport;

import java.util.Arrays;

/**
 * Where a client sends its budget calls: the ways in order of preference, its home relay first, then
 * the other relays, then Redis directly; with none left, the client's own fallback decides (the
 * engine does that by itself when a call fails). A way that failed is passed over for
 * {@code retryAfterMillis}, then tried again first (so the client returns to its home relay once that
 * is back), and a way that answers is the one used until it fails. Pure: time comes in as an argument;
 * not thread-safe (its holder calls it under one lock).
 *
 * <p>Counts are never sent twice along the route: a call that failed is not sent again to the next
 * way (the engine counts it as lost, undercounting: the safe side); only the calls after it go there.
 */
public final class FailoverRoute {
  /** No way is open: the client's fallback decides. */
  public static final int NONE = -1;
  /** Most ways a route has. */
  public static final int MAX_WAYS = 1_000;

  private final long[] downUntil;
  private final long retryAfterMillis;
  private int current;

  /**
   * A route over {@code ways} ways (in [1, 1,000]), numbered in order of preference (0 the home relay,
   * the last Redis directly, if the client may talk to it); a failed way waits {@code retryAfterMillis}
   * (in [1, 600,000]).
   */
  public FailoverRoute(int ways, long retryAfterMillis) {
    if (ways < 1 || ways > MAX_WAYS) {
      throw new IllegalArgumentException("ways must be in [1, " + MAX_WAYS + "], was " + ways);
    }
    if (retryAfterMillis < 1 || retryAfterMillis > 600_000) {
      throw new IllegalArgumentException("retryAfterMillis must be in [1, 600000], was " + retryAfterMillis);
    }
    this.downUntil = new long[ways];
    Arrays.fill(downUntil, Long.MIN_VALUE);
    this.retryAfterMillis = retryAfterMillis;
  }

  /** The way to send a call at {@code now}: the most preferred one not passed over, else {@link #NONE}. */
  public int pick(long now) {
    return pick(now, way -> true);
  }

  /**
   * The way to send a call at {@code now}: the most preferred one not passed over whose connection is
   * {@code up}, else {@link #NONE}. A way that is down is skipped, not passed over: no call went to
   * it, so it is taken again as soon as it is up.
   */
  public int pick(long now, java.util.function.IntPredicate up) {
    for (int i = 0; i < downUntil.length; i++) {
      if (downUntil[i] <= now && up.test(i)) {
        current = i;
        return i;
      }
    }
    current = NONE;
    return NONE;
  }

  /**
   * A call on way {@code way} failed at {@code now} (or the way could not take one): it is passed over
   * until {@code now + retryAfterMillis}.
   */
  public void failed(int way, long now) {
    check(way);
    long until = now + retryAfterMillis;
    downUntil[way] = until < now ? Long.MAX_VALUE : until; // saturates instead of wrapping
  }

  /**
   * Way {@code way} cannot serve this client at all for now (a relay of another SDK version refused its
   * script): it is passed over until {@code now + max(waitMillis, retryAfterMillis)}.
   */
  public void refused(int way, long now, long waitMillis) {
    check(way);
    long until = now + Math.max(waitMillis, retryAfterMillis);
    downUntil[way] = until < now ? Long.MAX_VALUE : until;
  }

  /** A call on way {@code way} was answered: it is open again at once. */
  public void answered(int way) {
    check(way);
    downUntil[way] = Long.MIN_VALUE;
  }

  /** Whether {@code way} is passed over at {@code now}. */
  public boolean passedOver(int way, long now) {
    check(way);
    return downUntil[way] > now;
  }

  /** The way picked last ({@link #NONE} when none was open). */
  public int current() {
    return current;
  }

  /** How many ways the route has. */
  public int ways() {
    return downUntil.length;
  }

  /** How long a failed way is passed over. */
  public long retryAfterMillis() {
    return retryAfterMillis;
  }

  private void check(int way) {
    if (way < 0 || way >= downUntil.length) {
      throw new IllegalArgumentException("way must be in [0, " + downUntil.length + "), was " + way);
    }
  }
}
