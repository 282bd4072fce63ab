package io.retrybudget.retry;

import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/** Runs a task after a delay; the executor's only source of time passing (tests use a fake). */
public interface RetryScheduler {

  /** A scheduled task that can be called off. */
  interface Cancellable {
    void cancel();
  }

  Cancellable schedule(Runnable task, long delayNanos);

  static RetryScheduler of(ScheduledExecutorService executor) {
    return (task, delayNanos) -> {
      ScheduledFuture<?> f = executor.schedule(task, delayNanos, TimeUnit.NANOSECONDS);
      return () -> f.cancel(false);
    };
  }
}
