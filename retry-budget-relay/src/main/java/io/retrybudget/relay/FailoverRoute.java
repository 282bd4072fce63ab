package io.retrybudget.relay;

/**
 * Where a client sends its budget calls: the ways in order of preference, its home relay first, then
 * the other relays, then Redis directly; with none left, the client's own fallback decides (the
 * engine does that by itself when a call fails). A way that failed is passed over for
 * {@code retryAfterMillis}, then tried again (so the client returns to its home relay once that is
 * back), and a way that answers is the one used until it fails. Pure: time comes in as an argument;
 * not thread-safe (the client's port holds it under its lock).
 *
 * <p>Counts are never sent twice along the route: a call that failed is not sent again to the next
 * way (the engine counts it as lost, undercounting: the safe side); only the calls after it go there.
 */
public final class FailoverRoute {
  /** No way is open: the client's fallback decides. */
  public static final int NONE = -1;

  private final long[] downUntil;
  private final long retryAfterMillis;
  private int current;

  /**
   * A route over {@code ways} ways, numbered in order of preference (0 the home relay, the last Redis
   * directly, if the client may talk to it).
   */
  public FailoverRoute(int ways, long retryAfterMillis) {
    if (ways < 1 || ways > 1_000) {
      throw new IllegalArgumentException("ways must be in [1, 1000], was " + ways);
    }
    if (retryAfterMillis < 1 || retryAfterMillis > 600_000) {
      throw new IllegalArgumentException("retryAfterMillis must be in [1, 600000], was " + retryAfterMillis);
    }
    this.downUntil = new long[ways];
    java.util.Arrays.fill(downUntil, Long.MIN_VALUE);
    this.retryAfterMillis = retryAfterMillis;
  }

  /** The way to send a call at {@code now}: the most preferred one not passed over, else {@link #NONE}. */
  public int pick(long now) {
    for (int i = 0; i < downUntil.length; i++) {
      if (downUntil[i] <= now) {
        current = i;
        return i;
      }
    }
    current = NONE;
    return NONE;
  }

  /** A call on way {@code way} failed at {@code now}: it is passed over until {@code now + retryAfterMillis}. */
  public void failed(int way, long now) {
    check(way);
    downUntil[way] = now + retryAfterMillis;
  }

  /** A call on way {@code way} was answered. */
  public void answered(int way) {
    check(way);
    downUntil[way] = Long.MIN_VALUE;
  }

  /** The way picked last ({@link #NONE} when none was open). */
  public int current() {
    return current;
  }

  /** How many ways the route has. */
  public int ways() {
    return downUntil.length;
  }

  private void check(int way) {
    if (way < 0 || way >= downUntil.length) {
      throw new IllegalArgumentException("way must be in [0, " + downUntil.length + "), was " + way);
    }
  }
}
