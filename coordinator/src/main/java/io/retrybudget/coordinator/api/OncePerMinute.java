package io.retrybudget.coordinator.api;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import java.util.logging.Logger;

/** A low-level log line at most once a minute, with how many events it stands for. */
public final class OncePerMinute {
  /** The API's logger: the logging configuration that quiets aborted uploads names it. */
  private static final Logger LOG = Logger.getLogger(BudgetApi.class.getName());
  private static final long REPORT_EVERY_NANOS = TimeUnit.MINUTES.toNanos(1);

  private final String what;
  private final LongSupplier nanoClock;
  private final AtomicLong last;
  private final AtomicLong count = new AtomicLong();

  public OncePerMinute(String what) {
    this(what, System::nanoTime);
  }

  public OncePerMinute(String what, LongSupplier nanoClock) {
    this.what = what;
    this.nanoClock = nanoClock;
    this.last = new AtomicLong(nanoClock.getAsLong() - REPORT_EVERY_NANOS);
  }

  /** @return whether this event was logged */
  public boolean report(String example) {
    long n = count.incrementAndGet();
    long now = nanoClock.getAsLong();
    long prev = last.get();
    if (now - prev >= REPORT_EVERY_NANOS && last.compareAndSet(prev, now)) {
      count.addAndGet(-n);
      LOG.fine(what + ": " + n + " in the last minute (e.g. " + RequestChecks.abbreviate(example) + ")");
      return true;
    }
    return false;
  }
}
