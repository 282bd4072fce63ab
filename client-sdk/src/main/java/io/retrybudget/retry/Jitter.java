package io.retrybudget.retry;

/**
 * How a backoff delay is randomized, with {@code temp = min(cap, base * 2^attempt)} and
 * {@code U(a, b)} uniform.
 */
public enum Jitter {
  /** {@code temp}: every client waits the same; only when asked for by name. */
  NONE,
  /** {@code U(0, temp)}: the default; fewest total calls in contention. */
  FULL,
  /** {@code temp/2 + U(0, temp/2)}: never waits less than half. */
  EQUAL,
  /** {@code min(cap, U(base, previous * 3))}: piles up at the cap once it reaches it. */
  DECORRELATED
}
