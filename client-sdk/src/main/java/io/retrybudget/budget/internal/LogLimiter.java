package io.retrybudget.budget.internal;

import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * At most one log record per interval at one level; what it held back is counted and said with the
 * next record, so a storm of identical events is one line, not thousands.
 */
public final class LogLimiter {
  private final System.Logger logger;
  private final System.Logger.Level level;
  private final long intervalMillis;
  private final LongSupplier clock;
  private final AtomicLong nextAllowed = new AtomicLong(Long.MIN_VALUE);
  private final AtomicLong suppressed = new AtomicLong();

  public LogLimiter(System.Logger logger, System.Logger.Level level, long intervalMillis, LongSupplier millisClock) {
    this.logger = logger;
    this.level = level;
    this.intervalMillis = intervalMillis;
    this.clock = millisClock;
  }

  /** Logs the message unless one was logged less than the interval ago; true when it was logged. */
  public boolean log(Supplier<String> message) {
    if (!logger.isLoggable(level)) {
      return false;
    }
    long now = clock.getAsLong();
    long next = nextAllowed.get();
    if (now < next || !nextAllowed.compareAndSet(next, now + intervalMillis)) {
      suppressed.incrementAndGet();
      return false;
    }
    long held = suppressed.getAndSet(0);
    logger.log(level, held == 0 ? message.get()
        : message.get() + " (" + held + " similar messages held back in the last " + intervalMillis / 1000 + " s)");
    return true;
  }
}
