package io.retrybudget.budget.internal;

/**
 * The paced admission rule of lua/budget.lua in Java, in the same integers (lua/fragments/pace.lua,
 * assembled into budget.lua and status.lua; parity-tested inside Redis against both assembled scripts).
 *
 * <p>A budget holds a balance in micro-permits ({@link #PPM} per permit). Every first attempt
 * deposits {@code ratioPpm}; the floor refills {@code floorPpmPerSecond} a second; a grant withdraws
 * {@code PPM} per permit. The balance refills at {@link #refillRate} (the window's average first
 * attempts a second times the ratio, plus the floor) and never exceeds the cap, half a second of that
 * rate (at least one whole permit when the rate is not zero). So retries follow the request rate, with
 * a burst of at most half a second's worth saved up.
 */
public final class PaceArithmetic {
  public static final long PPM = 1_000_000L;
  /** First attempts per second above this are taken as this (keeps every product exact in a double). */
  public static final long MAX_RATE = 1_000_000_000L;
  /** A gap at least this long (ms) refills to the cap whatever the floor (and keeps products exact). */
  static final long FULL_REFILL_MILLIS = 9_000_000L;
  /** A deposit of at least this many first attempts fills to the cap (and keeps products exact). */
  static final long FULL_DEPOSIT_REQUESTS = 9_000_000_000L;

  private PaceArithmetic() {}

  /**
   * The time (ms) the window's first attempts span: the whole window once it has had first attempts
   * for that long ({@code oldestBucket}, the oldest bucket in it with first attempts, is the leaving
   * one, or there is none: {@link Long#MIN_VALUE}); a younger or newly busy budget's since the start of
   * that bucket, within [one bucket, the window].
   */
  public static long span(long oldestBucket, long currentBucket, long nowMillis, long bucketMillis, long windowMillis) {
    if (oldestBucket == Long.MIN_VALUE || oldestBucket <= currentBucket - 10) {
      return windowMillis;
    }
    long span = nowMillis - oldestBucket * bucketMillis;
    return Math.max(bucketMillis, Math.min(windowMillis, span));
  }

  /**
   * The rate the balance refills at, micro-permits a second: {@code floor(requests * 1000 * ratioPpm /
   * spanMillis)} (first attempts above {@link #MAX_RATE} a second count as that), plus the floor.
   *
   * @param requests first attempts in the window
   * @param spanMillis the time they span ({@link #span})
   * @param floorPpmPerSecond the floor in micro-permits per second ({@code minRetriesPerSecond * PPM}
   *     for the fleet; a fallback's share of it for one client)
   */
  public static long refillRate(long requests, long spanMillis, long ratioPpm, long floorPpmPerSecond) {
    if (requests >= MAX_RATE * spanMillis / 1000 + 1 || requests * 1000 >= MAX_RATE * spanMillis) {
      return MAX_RATE * ratioPpm + floorPpmPerSecond;
    }
    long reqk = requests * 1000;
    long whole = reqk / spanMillis;
    long rest = reqk - whole * spanMillis;
    return whole * ratioPpm + rest * ratioPpm / spanMillis + floorPpmPerSecond;
  }

  /** The balance's cap for a refill rate: half a second of it, at least one whole permit unless zero. */
  public static long cap(long refillRate) {
    long cap = refillRate / 2;
    return refillRate > 0 && cap < PPM ? PPM : cap;
  }

  /**
   * A new balance: what the window's first attempts and floor deposited ({@code requests * ratioPpm +
   * floorPpmPerSecond * windowSeconds}), under the cap.
   */
  public static long start(long requests, long windowSeconds, long ratioPpm, long floorPpmPerSecond, long cap) {
    if (requests >= FULL_DEPOSIT_REQUESTS) {
      return cap;
    }
    return Math.min(cap, requests * ratioPpm + floorPpmPerSecond * windowSeconds);
  }

  /**
   * The balance brought from {@code atMillis} to {@code nowMillis}: the floor's refill for the time
   * between (none when time went back), then {@code add} first attempts' deposits, capped.
   */
  public static long refill(long balance, long atMillis, long nowMillis, long add, long ratioPpm,
      long floorPpmPerSecond, long cap) {
    long elapsed = Math.max(0, nowMillis - atMillis);
    long b = elapsed >= FULL_REFILL_MILLIS ? cap : balance + elapsed * floorPpmPerSecond / 1000;
    b = add >= FULL_DEPOSIT_REQUESTS ? cap : b + add * ratioPpm;
    return Math.min(b, cap);
  }

  /** Whole permits in a balance. */
  public static long available(long balance) {
    return balance / PPM;
  }

  /** Milliseconds until the balance holds a whole permit at {@code refillRate}; 0: it does; -1: never. */
  public static long nextMillis(long balance, long refillRate) {
    if (balance >= PPM) {
      return 0;
    }
    if (refillRate == 0) {
      return -1;
    }
    return ((PPM - balance) * 1000 + refillRate - 1) / refillRate;
  }
}
