package io.retrybudget.reactor;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import reactor.core.Disposable;
import reactor.core.scheduler.Scheduler;

/**
 * A scheduler that counts the timers (delayed tasks) set on it, fired and disposed of, around a
 * real one (a {@code VirtualTimeScheduler} in the tests): what shows that a cancelled call leaves
 * no timer behind.
 */
final class CountingScheduler implements Scheduler {
  final Scheduler delegate;
  final AtomicInteger timersSet = new AtomicInteger();
  final AtomicInteger timersFired = new AtomicInteger();
  final AtomicInteger timersDisposed = new AtomicInteger();

  CountingScheduler(Scheduler delegate) {
    this.delegate = delegate;
  }

  @Override
  public Disposable schedule(Runnable task) {
    return delegate.schedule(task);
  }

  @Override
  public Disposable schedule(Runnable task, long delay, TimeUnit unit) {
    timersSet.incrementAndGet();
    Disposable d = delegate.schedule(() -> {
      timersFired.incrementAndGet();
      task.run();
    }, delay, unit);
    return new Disposable() {
      @Override
      public void dispose() {
        if (!d.isDisposed()) {
          timersDisposed.incrementAndGet();
        }
        d.dispose();
      }

      @Override
      public boolean isDisposed() {
        return d.isDisposed();
      }
    };
  }

  @Override
  public long now(TimeUnit unit) {
    return delegate.now(unit);
  }

  @Override
  public Worker createWorker() {
    return delegate.createWorker();
  }

  /** Timers neither fired nor disposed of. */
  int pending() {
    return timersSet.get() - timersFired.get() - timersDisposed.get();
  }
}
