package io.retrybudget.budget;

import java.util.function.DoubleSupplier;
import java.util.function.LongSupplier;

/**
 * What a {@link RedisRetryBudget} is built with, fixed for its life: the {@link RedisBudgetClient}'s
 * settings, its clock, random source and timer.
 *
 * @param callTimeoutMillis the hard limit on a permit request
 * @param flushIntervalMillis the timer's tick, and the shortest flush interval
 * @param maxFlushIntervalMillis the longest the flush interval is stretched to
 * @param exhaustedCacheMillis the shortest time a refusal from Redis is reused
 * @param clock a monotonic clock in milliseconds
 * @param random uniform in [0, 1): flush phases, sampling of permit asks, fallback thresholds
 */
record EngineSettings(long callTimeoutMillis, long flushIntervalMillis, long maxFlushIntervalMillis,
    long exhaustedCacheMillis, FallbackPolicy fallbackPolicy, boolean fallbackSharesFloor, LongSupplier clock,
    DoubleSupplier random, EngineTimer timer) {

  /** How long a flush waits for its reply: half the flush interval, at least the call timeout. */
  long flushTimeoutMillis() {
    return Math.max(callTimeoutMillis, flushIntervalMillis / 2);
  }
}
