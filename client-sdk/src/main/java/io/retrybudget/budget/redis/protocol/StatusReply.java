package io.retrybudget.budget.redis.protocol;

/**
 * The reply of status.lua: a budget's configuration (the defaults where none is stored) and window.
 *
 * @param keysPresent how many of the configuration and window keys exist (0, 1 or 2)
 * @param source who wrote the stored configuration
 * @param retryRatio retries / first attempts in the window (six decimals in Redis)
 * @param allowance the window's total (shown; the decision is the paced balance's)
 * @param available whole permits a permit request could be granted now
 * @param nextGrantMillis ms until a whole permit is available (0: one is; -1: never by itself)
 * @param refillPpm the paced balance's refill rate and cap, micro-permits a second
 * @param buckets the window bucket by bucket, when asked for; else null
 */
public record StatusReply(
    String name,
    int keysPresent,
    long requests,
    long retries,
    long denied,
    long allowance,
    long activeClients,
    BudgetSettings settings,
    double retryRatio,
    Source source,
    long available,
    long nextGrantMillis,
    long refillPpm,
    WindowBuckets buckets) {

  /** Without the buckets. */
  public StatusReply(String name, int keysPresent, long requests, long retries, long denied, long allowance,
      long activeClients, BudgetSettings settings, double retryRatio, Source source, long available,
      long nextGrantMillis, long refillPpm) {
    this(name, keysPresent, requests, retries, denied, allowance, activeClients, settings, retryRatio, source,
        available, nextGrantMillis, refillPpm, null);
  }

  /**
   * The window's buckets, oldest first (the one now filling last).
   *
   * @param bucketMillis the length of one bucket (a tenth of the window)
   * @param nowMillis Redis's clock when it answered
   */
  public record WindowBuckets(long bucketMillis, long nowMillis, java.util.List<Bucket> buckets) {}

  /**
   * One bucket of the window, counted in full (status.lua's totals count the leaving one by its share).
   *
   * @param startMillis when the bucket began, on Redis's clock
   */
  public record Bucket(long startMillis, long requests, long retries, long denied) {}

  /** Who wrote a stored configuration. */
  public enum Source {
    /** Nothing stored: the defaults. */
    NONE,
    /** Seeded by a budget call (an SDK client's builder values, or the coordinator's defaults). */
    SEED,
    /** Set by configure.lua (the coordinator's PUT or budgets file). */
    SET
  }

  public boolean exists() {
    return keysPresent > 0;
  }

  /** Permits that could be granted now. */
  public long remaining() {
    return available;
  }

  /**
   * Whole permits a paced balance refilling at {@code refillPpm} (micro-permits a second) holds at
   * most: lua/budget.lua's {@code pace_cap}, through its Java model (parity-checked against Redis).
   */
  public static long capPermits(long refillPpm) {
    return io.retrybudget.budget.internal.PaceArithmetic.available(io.retrybudget.budget.internal.PaceArithmetic.cap(refillPpm));
  }
}
