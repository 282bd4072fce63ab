package io.retrybudget.server;

import io.retrybudget.retry.RetryScheduler;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.function.LongSupplier;

/**
 * The one timer of an {@link AdmissionQueue}: armed for the queue's next expiry, re-armed only when
 * that comes earlier than the armed one (a timer that fires early finds nothing to drop and is
 * re-armed). Called under the queue's lock; the expiry runs outside it.
 */
final class ExpiryTimer {
  private final RetryScheduler scheduler;
  private final ScheduledThreadPoolExecutor own; // null when the scheduler is the caller's
  private final LongSupplier nanoClock;
  private final Runnable expire;
  private RetryScheduler.Cancellable armed;
  private long armedAt = Long.MAX_VALUE;

  ExpiryTimer(RetryScheduler scheduler, String name, LongSupplier nanoClock, Runnable expire) {
    this.nanoClock = nanoClock;
    this.expire = expire;
    if (scheduler != null) {
      this.scheduler = scheduler;
      this.own = null;
    } else {
      // one daemon thread that drops what has waited too long
      this.own = new ScheduledThreadPoolExecutor(1, r -> {
        Thread t = new Thread(r, "admission-queue-" + name);
        t.setDaemon(true);
        return t;
      });
      own.setRemoveOnCancelPolicy(true);
      this.scheduler = RetryScheduler.of(own);
    }
  }

  /** Arms for {@code next} (nanos on the queue's clock; {@link Long#MAX_VALUE}: nothing waits). */
  synchronized void rearm(long next) {
    if (next == Long.MAX_VALUE) {
      if (armed != null) {
        armed.cancel();
        armed = null;
        armedAt = Long.MAX_VALUE;
      }
      return;
    }
    if (armed != null && armedAt <= next) {
      return;
    }
    if (armed != null) {
      armed.cancel();
    }
    armedAt = next;
    armed = scheduler.schedule(this::fired, Math.max(0, next - nanoClock.getAsLong()));
  }

  private void fired() {
    synchronized (this) {
      armed = null;
      armedAt = Long.MAX_VALUE;
    }
    expire.run();
  }

  void close() {
    if (own != null) {
      own.shutdownNow();
    }
  }
}
