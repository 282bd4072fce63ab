package io.retrybudget.retry;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.PriorityQueue;

/** A fake clock with a scheduler and a sleeper that move it: no test waits for real time. */
public final class FakeTime implements RetryScheduler, RetryExecutor.Sleeper {
  private long now = 1_000_000_000L;
  private long scheduled;
  // by due time, then in the order scheduled
  private final PriorityQueue<Task> tasks =
      new PriorityQueue<>(Comparator.<Task>comparingLong(t -> t.due).thenComparingLong(t -> t.seq));
  final List<Long> sleeps = new ArrayList<>();

  private static final class Task implements Cancellable {
    final long due;
    final long seq;
    final Runnable run;
    boolean cancelled;

    Task(long due, long seq, Runnable run) {
      this.due = due;
      this.seq = seq;
      this.run = run;
    }

    @Override
    public void cancel() {
      cancelled = true;
    }
  }

  public synchronized long nanos() {
    return now;
  }

  @Override
  public synchronized Cancellable schedule(Runnable task, long delayNanos) {
    Task t = new Task(now + delayNanos, scheduled++, task);
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
  public void advance(long nanos) {
    long target;
    synchronized (this) {
      target = now + nanos;
    }
    while (true) {
      Task next;
      synchronized (this) {
        while (!tasks.isEmpty() && tasks.peek().cancelled) {
          tasks.poll();
        }
        next = tasks.isEmpty() || tasks.peek().due > target ? null : tasks.poll();
        if (next == null) {
          now = target;
          return;
        }
        now = Math.max(now, next.due);
      }
      next.run.run();
    }
  }

  /** Tasks scheduled and not cancelled: timers a finished call must not leave behind. */
  public synchronized int pendingTasks() {
    tasks.removeIf(t -> t.cancelled);
    return tasks.size();
  }
}
