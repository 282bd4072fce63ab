package io.retrybudget.budget.internal;

/**
 * One paced balance ({@link PaceArithmetic}) with the time it was last brought up to date: what
 * lua/budget.lua keeps in a budget's {@code pace} key, for budgets decided in this process. A new
 * balance starts with what the window deposited ({@link PaceArithmetic#start}). Not thread-safe;
 * callers synchronize.
 */
public final class PacedBalance {
  private long balance = -1; // none yet
  private long atMillis;
  private long refillRate;
  private long cap;

  /**
   * Brings the balance to {@code nowMillis} with {@code add} first attempts' deposits, under the cap
   * that {@code requests} first attempts in the window give (these include {@code add}) over the
   * {@code spanMillis} they span ({@link SlidingWindowCounts#spanMillis}); returns the whole permits
   * available.
   */
  public long update(long nowMillis, long add, long requests, long spanMillis, long windowSeconds, long ratioPpm,
      long floorPpmPerSecond) {
    refillRate = PaceArithmetic.refillRate(requests, spanMillis, ratioPpm, floorPpmPerSecond);
    cap = PaceArithmetic.cap(refillRate);
    if (balance < 0) {
      balance = PaceArithmetic.start(requests, windowSeconds, ratioPpm, floorPpmPerSecond, cap);
    } else {
      balance = PaceArithmetic.refill(balance, atMillis, nowMillis, add, ratioPpm, floorPpmPerSecond, cap);
    }
    atMillis = nowMillis;
    return PaceArithmetic.available(balance);
  }

  /** Takes {@code permits} whole permits; call after {@link #update} said they are available. */
  public void take(long permits) {
    if (permits > PaceArithmetic.available(balance)) {
      throw new IllegalStateException("only " + PaceArithmetic.available(balance) + " permits, " + permits + " taken");
    }
    balance -= permits * PaceArithmetic.PPM;
  }

  /** Withdraws up to {@code micros} micro-permits; returns how many it could (not more than the balance). */
  public long withdraw(long micros) {
    long taken = Math.max(0, Math.min(micros, balance));
    balance -= taken;
    return taken;
  }

  /** Empties the balance (from the last update on it refills as before). */
  public void drain() {
    if (balance > 0) {
      balance = 0;
    }
  }


  public long balance() {
    return Math.max(0, balance);
  }

  /** The cap of the last update, micro-permits. */
  public long cap() {
    return cap;
  }

  /** The refill rate of the last update, micro-permits a second. */
  public long refillRate() {
    return refillRate;
  }

  /** Milliseconds until a whole permit is available, as of the last update; -1: never by itself. */
  public long nextMillis() {
    return PaceArithmetic.nextMillis(balance(), refillRate);
  }
}
