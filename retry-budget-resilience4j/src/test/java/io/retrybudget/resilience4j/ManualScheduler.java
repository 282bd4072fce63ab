package io.retrybudget.resilience4j;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.Callable;
import java.util.concurrent.Delayed;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * A scheduler that runs nothing by itself: it records what it was given (with the delay asked) and
 * runs it when the test says so. Thread-safe, so a budget's I/O thread may hand it work.
 */
final class ManualScheduler extends AbstractExecutorService implements ScheduledExecutorService {

  /** A task handed to the scheduler, with the delay it was asked to wait. */
  static final class Task implements ScheduledFuture<Object> {
    final Runnable runnable;
    final long delayMillis;
    volatile boolean cancelled;
    volatile boolean done;

    Task(Runnable runnable, long delayMillis) {
      this.runnable = runnable;
      this.delayMillis = delayMillis;
    }

    @Override
    public long getDelay(TimeUnit unit) {
      return unit.convert(delayMillis, TimeUnit.MILLISECONDS);
    }

    @Override
    public int compareTo(Delayed o) {
      return Long.compare(delayMillis, o.getDelay(TimeUnit.MILLISECONDS));
    }

    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
      if (done) {
        return false;
      }
      cancelled = true;
      return true;
    }

    @Override
    public boolean isCancelled() {
      return cancelled;
    }

    @Override
    public boolean isDone() {
      return done || cancelled;
    }

    @Override
    public Object get() {
      throw new UnsupportedOperationException("not used");
    }

    @Override
    public Object get(long timeout, TimeUnit unit) {
      throw new UnsupportedOperationException("not used");
    }
  }

  private final List<Task> queued = new ArrayList<>();
  private final List<Task> history = new ArrayList<>();

  @Override
  public synchronized ScheduledFuture<?> schedule(Runnable command, long delay, TimeUnit unit) {
    Task task = new Task(command, unit.toMillis(delay));
    queued.add(task);
    history.add(task);
    return task;
  }

  @Override
  public void execute(Runnable command) {
    schedule(command, 0, TimeUnit.MILLISECONDS);
  }

  /** Every task handed over so far, run or not. */
  synchronized List<Task> history() {
    return new ArrayList<>(history);
  }

  synchronized int queuedCount() {
    return queued.size();
  }

  /** Runs the tasks queued now (not those they queue), skipping cancelled ones; returns how many ran. */
  int runQueued() {
    List<Task> batch;
    synchronized (this) {
      batch = new ArrayList<>(queued);
      queued.clear();
    }
    int ran = 0;
    for (Task task : batch) {
      if (!task.cancelled) {
        task.done = true;
        task.runnable.run();
        ran++;
      }
    }
    return ran;
  }

  @Override
  public <V> ScheduledFuture<V> schedule(Callable<V> callable, long delay, TimeUnit unit) {
    throw new UnsupportedOperationException("not used");
  }

  @Override
  public ScheduledFuture<?> scheduleAtFixedRate(Runnable command, long initialDelay, long period, TimeUnit unit) {
    throw new UnsupportedOperationException("not used");
  }

  @Override
  public ScheduledFuture<?> scheduleWithFixedDelay(Runnable command, long initialDelay, long delay, TimeUnit unit) {
    throw new UnsupportedOperationException("not used");
  }

  @Override
  public void shutdown() {}

  @Override
  public List<Runnable> shutdownNow() {
    return List.of();
  }

  @Override
  public boolean isShutdown() {
    return false;
  }

  @Override
  public boolean isTerminated() {
    return false;
  }

  @Override
  public boolean awaitTermination(long timeout, TimeUnit unit) {
    return true;
  }
}
