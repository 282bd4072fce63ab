package io.retrybudget.budget.internal;

/**
 * How lua/budget.lua counts a budget's clients (its {@code fleet_read}; parity-tested), in Java.
 *
 * <p>Time is cut into epochs of {@link #EPOCH_MILLIS}, whatever the budget's window. Each client is
 * counted once in every epoch it calls in, and the estimate is the clients of this epoch and the last
 * one together: {@code before} grows with the clients new in this epoch ({@link #counted}), so a fleet
 * that starts as an epoch ends is counted whole, not as the larger of its two parts. An epoch outlasts the longest wait between a live client's calls (a stretched flush
 * interval is at most 1.25 x 60 s), so every live client is in the last epoch's count: the estimate
 * does not dip at a bucket's, window's or epoch's start, nor when {@code window_s} changes.
 *
 * @param epoch the epoch this record is of
 * @param now clients counted in {@code epoch}
 * @param before clients counted in the epoch before (or the last epoch with calls), and those counted
 *     in {@code epoch} that were not
 */
public record FleetCount(long epoch, long now, long before) {
  /** The length of an epoch, ms. */
  public static final long EPOCH_MILLIS = 120_000L;

  /** The epoch of a Redis time (ms). */
  public static long epochOf(long nowMillis) {
    return Math.floorDiv(nowMillis, EPOCH_MILLIS);
  }

  /**
   * A stored record brought to {@code epoch}: a record of an earlier epoch gives its count as the epoch
   * before's; one stamped ahead of the clock (a failover to a replica whose clock is behind) carries the
   * most it knew; none ({@code null}) is empty.
   */
  public static FleetCount read(FleetCount stored, long epoch) {
    if (stored == null) {
      return new FleetCount(epoch, 0, 0);
    }
    if (stored.epoch == epoch) {
      return stored;
    }
    if (stored.epoch < epoch) {
      return new FleetCount(epoch, 0, stored.now);
    }
    return new FleetCount(epoch, 0, Math.max(stored.now, stored.before));
  }

  /**
   * Whether a client last counted in epoch {@code lastCounted} ({@code null}: never) is new to the union
   * of {@code epoch}'s clients and the epoch before's (budget.lua's {@code fleet_new}): never counted, or
   * last counted two or more epochs ago. One of a later epoch (an entry stamped ahead of the clock) is
   * in the count {@link #read} carried over.
   */
  public static boolean newToUnion(Long lastCounted, long epoch) {
    return lastCounted == null || lastCounted < epoch - 1;
  }

  /**
   * This record with one more client counted in its epoch, and in {@link #before} too when it is new to
   * the two epochs' union ({@link #newToUnion}): {@code before} is then every client heard from in the
   * epoch before or new in this one.
   */
  public FleetCount counted(boolean newToUnion) {
    return new FleetCount(epoch, now + 1, newToUnion ? before + 1 : before);
  }

  /** The fleet's size: the larger of the two counts ({@code before}, but for a record an older SDK wrote). */
  public long estimate() {
    return Math.max(now, before);
  }
}
