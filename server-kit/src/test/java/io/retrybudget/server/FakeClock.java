package io.retrybudget.server;

import io.retrybudget.retry.RetryScheduler;
import java.util.PriorityQueue;

/**
 * Fake time for the guard: a clock and a scheduler that runs due tasks in order (ties in the order
 * they were scheduled) when {@link #runUntil} moves time on. Single-threaded: no test waits.
 */
final class FakeClock implements RetryScheduler {
  private long now = 1_000_000_000L;
  private long sequence;
  private final PriorityQueue<Task> tasks = new PriorityQueue<>((a, b) -> a.due != b.due ? Long.compare(a.due, b.due)
      : Long.compare(a.order, b.order));

  private static final class Task implements Cancellable {
    final long due;
    final long order;
    final Runnable run;
    boolean cancelled;

    Task(long due, long order, Runnable run) {
      this.due = due;
      this.order = order;
      this.run = run;
    }

    @Override
    public void cancel() {
      cancelled = true;
    }
  }

  long nanos() {
    return now;
  }

  long millis() {
    return now / 1_000_000L;
  }

  @Override
  public Cancellable schedule(Runnable task, long delayNanos) {
    Task t = new Task(now + Math.max(0, delayNanos), sequence++, task);
    tasks.add(t);
    return t;
  }

  Cancellable afterMillis(long millis, Runnable task) {
    return schedule(task, millis * 1_000_000L);
  }

  /** Runs every task due up to {@code target} (nanos), in order; time ends at {@code target}. */
  void runUntil(long target) {
    while (!tasks.isEmpty() && tasks.peek().due <= target) {
      Task t = tasks.poll();
      if (!t.cancelled) {
        now = Math.max(now, t.due);
        t.run.run();
      }
    }
    now = Math.max(now, target);
  }

  /** Tasks scheduled and not called off. */
  int pending() {
    tasks.removeIf(t -> t.cancelled);
    return tasks.size();
  }

  /** Runs until no task is left (at most until {@code limit}); false when tasks were left at the limit. */
  boolean drain(long limit) {
    runUntil(limit);
    tasks.removeIf(t -> t.cancelled);
    return tasks.isEmpty();
  }
}
