package io.retrybudget.relay;

import io.retrybudget.budget.internal.PaceArithmetic;
import io.retrybudget.budget.internal.PacedBalance;

/**
 * A relay's own paced share while it is cut off from Redis ({@link BudgetRelay}): its clients' first
 * attempts fill it by the ratio and the floor by time, as Redis's paced balance would, and each time
 * the relay is cut off it starts from nothing. Not thread-safe: its relay's thread only.
 */
final class LocalShare {
  private PacedBalance balance; // null: not drawn from since the relay was last cut off
  private long toDeposit; // first attempts received and not yet deposited
  private long granted; // granted from it, ever

  /** {@code requests} first attempts received. */
  void received(long requests) {
    toDeposit += requests;
  }

  /**
   * Up to {@code want} permits if at least {@code need} are there, else 0, at {@code nowMillis}; the
   * window's {@code requests} over {@code spanMillis}, its {@code windowSeconds} and {@code ratioPpm},
   * and the floor's share ({@code floorMicros}) as {@link PacedBalance#update} takes them.
   */
  long take(long need, long want, long nowMillis, long requests, long spanMillis, long windowSeconds, long ratioPpm,
      long floorMicros) {
    boolean fresh = balance == null;
    if (fresh) {
      balance = new PacedBalance();
    }
    balance.update(nowMillis, toDeposit, requests, spanMillis, windowSeconds, ratioPpm, floorMicros);
    toDeposit = 0;
    if (fresh) {
      balance.drain(); // each time the relay is cut off its share starts from nothing
    }
    long available = PaceArithmetic.available(balance.balance());
    if (available < need) {
      return 0;
    }
    long taken = Math.min(want, available);
    balance.take(taken);
    granted += taken;
    return taken;
  }

  /** Permits granted from it so far, every cut-off together. */
  long granted() {
    return granted;
  }

  /** Whether it was drawn from since the relay was last cut off. */
  boolean active() {
    return balance != null;
  }

  /** Milliseconds until it can grant again ({@link PacedBalance#nextMillis()}); only while {@link #active()}. */
  long nextMillis() {
    return balance.nextMillis();
  }

  /** Redis decides again: the next cut-off starts from nothing. */
  void reset() {
    balance = null;
  }
}
