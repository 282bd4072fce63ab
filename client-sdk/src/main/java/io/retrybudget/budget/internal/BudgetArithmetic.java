package io.retrybudget.budget.internal;

/**
 * The admission rule in integer arithmetic, the same as lua/budget.lua computes it:
 * {@code allowance = floor(ratioPpm * requests / 10^6) + minRetriesPerSecond * windowSeconds}.
 */
public final class BudgetArithmetic {
  public static final long PPM = 1_000_000L;

  private BudgetArithmetic() {}

  public static long ratioToPpm(double ratio) {
    return Math.round(ratio * PPM);
  }

  /** Retries allowed over a window that saw {@code requests} first attempts. */
  public static long allowance(long ratioPpm, long requests, long minRetriesPerSecond, long windowSeconds) {
    // split so that ratioPpm * requests cannot overflow
    long proportional = (requests / PPM) * ratioPpm + (requests % PPM) * ratioPpm / PPM;
    return proportional + minRetriesPerSecond * windowSeconds;
  }

  /** Whether {@code permits} more extra attempts fit: {@code retries + permits <= allowance}. */
  public static boolean admits(long allowance, long retries, long permits) {
    return retries + permits <= allowance;
  }

  /** Allowance left, never negative. */
  public static long remaining(long allowance, long retries) {
    return Math.max(0, allowance - retries);
  }
}
