package io.retrybudget.relay;

import java.util.function.DoubleSupplier;

/**
 * When one budget's relay calls Redis: every interval, 0.75 to 1.25 of it at random (relays that
 * started together do not call together). A cold relay's first draw may be brought forward to now
 * ({@link #bringForward}, at most once in a while); it takes the place of the call that was due, and
 * the call after it is due an interval after that one was: the calls made by any time are at most
 * two more than the plain schedule's (a call brought forward every 2 s, the longest interval 1 s),
 * and as many over time. Time comes in as an argument; not thread-safe.
 */
final class UpstreamSchedule {
  private static final long NONE = Long.MIN_VALUE;
  private final DoubleSupplier random;
  private long nextAt = NONE;
  private long lastAt = NONE;
  private long lastDrawAt = NONE;
  private long replacedDueAt = NONE; // when the call an early one replaced was due
  private long lastEarlyAt = NONE;
  private long intervalMillis;

  UpstreamSchedule(long intervalMillis, DoubleSupplier random) {
    this.intervalMillis = intervalMillis;
    this.random = random;
  }

  /** A call is due at once (the first client's: Redis hears of the budget without waiting). */
  void dueNow(long now) {
    nextAt = now;
  }

  boolean due(long now) {
    return now >= nextAt;
  }

  /** A call was sent at {@code now}; {@code drew}: it drew permits. */
  void sent(long now, boolean drew) {
    lastAt = now;
    if (drew) {
      lastDrawAt = now;
    }
  }

  /** Whether no call has drawn permits within the last {@code windowMillis}. */
  boolean cold(long now, long windowMillis) {
    return lastDrawAt == NONE || now - lastDrawAt >= windowMillis;
  }

  /**
   * Brings the call that is due later forward to {@code now}, in its place; false if one is due
   * already, or one was brought forward less than {@code spacingMillis} ago.
   */
  boolean bringForward(long now, long spacingMillis) {
    if (nextAt <= now || (lastEarlyAt != NONE && now - lastEarlyAt < spacingMillis)) {
      return false;
    }
    lastEarlyAt = now;
    replacedDueAt = nextAt;
    nextAt = now;
    return true;
  }

  /** The time from {@code now} to the call after this one, as expected (one interval, more for an early call). */
  long horizonMillis(long now) {
    return intervalMillis + (replacedDueAt == NONE ? 0 : Math.max(0, replacedDueAt - now));
  }

  /** The call sent was answered (or failed) at {@code now}: the next is due an interval on. */
  void next(long now, long interval) {
    long from = replacedDueAt == NONE ? now : Math.max(now, replacedDueAt);
    replacedDueAt = NONE;
    intervalMillis = interval;
    nextAt = from + (long) (interval * (0.75 + 0.5 * random.getAsDouble()));
  }

  long nextAt() {
    return nextAt;
  }

  /** When the last call was sent ({@link Long#MIN_VALUE}: none yet). */
  long lastAt() {
    return lastAt;
  }
}
