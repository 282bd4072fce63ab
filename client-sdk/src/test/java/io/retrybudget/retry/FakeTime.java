package io.retrybudget.retry;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/** A fake clock with a scheduler and a sleeper that move it: no test waits for real time. */
final class FakeTime implements RetryScheduler, RetryExecutor.Sleeper {
  private long now = 1_000_000_000L;
  private final List<Task> tasks = new ArrayList<>();
  final List<Long> sleeps = new ArrayList<>();

  private static final class Task implements Cancellable {
    final long due;
    final Runnable run;
    boolean cancelled;

    Task(long due, Runnable run) {
      this.due = due;
      this.run = run;
    }

    @Override
    public void cancel() {
      cancelled = true;
    }
  }

  synchronized long nanos() {
    return now;
  }

  @Override
  public synchronized Cancellable schedule(Runnable task, long delayNanos) {
    Task t = new Task(now + delayNanos, task);
    tasks.add(t);
    return t;
  }

  @Override
  public void sleepNanos(long nanos) {
    synchronized (this) {
      sleeps.add(nanos);
    }
    advance(nanos);
  }

  /** Moves time on, running every task that falls due, in order. */
  void advance(long nanos) {
    long target;
    synchronized (this) {
      target = now + nanos;
    }
    while (true) {
      Task next;
      synchronized (this) {
        tasks.removeIf(t -> t.cancelled);
        next = tasks.stream().filter(t -> t.due <= target).min(Comparator.comparingLong(t -> t.due)).orElse(null);
        if (next == null) {
          now = target;
          return;
        }
        tasks.remove(next);
        now = Math.max(now, next.due);
      }
      next.run.run();
    }
  }

  /** Tasks scheduled and not cancelled: timers a finished call must not leave behind. */
  synchronized int pendingTasks() {
    tasks.removeIf(t -> t.cancelled);
    return tasks.size();
  }
}
