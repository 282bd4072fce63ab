package io.retrybudget.bench.tail;

import io.retrybudget.retry.RetryScheduler;
import java.util.PriorityQueue;

/**
 * Virtual time for the tail simulation: a clock, and a scheduler whose tasks run in due order (ties in
 * scheduling order) on the one simulation thread. The {@link io.retrybudget.retry.RetryExecutor} under
 * test gets {@link #nanos()} as its clock and this as its scheduler, so its hedge timers are events of
 * the simulation like replica completions and arrivals. Counts what the executor scheduled, so a run
 * can check that finished calls leave no live timer behind.
 */
final class VirtualTime implements RetryScheduler {
  static final long EPOCH = 1_000_000_000L;

  private long now = EPOCH;
  private long seq;
  private final PriorityQueue<Event> queue = new PriorityQueue<>((a, b) -> a.time != b.time
      ? Long.compare(a.time, b.time) : Long.compare(a.seq, b.seq));

  /** Timers the executor asked for, and how they ended. */
  long executorScheduled;
  long executorCancelled;
  long executorFired;

  static final class Event implements Cancellable {
    final long time;
    final long seq;
    final boolean executor;
    Runnable task;
    boolean cancelled;
    boolean fired;

    Event(long time, long seq, boolean executor, Runnable task) {
      this.time = time;
      this.seq = seq;
      this.executor = executor;
      this.task = task;
    }

    @Override
    public void cancel() {
      if (!cancelled && !fired) {
        cancelled = true;
        task = null;
        if (executor) {
          owner.executorCancelled++;
        }
      }
    }

    VirtualTime owner;
  }

  long nanos() {
    return now;
  }

  /** The executor's scheduler entry point. */
  @Override
  public Cancellable schedule(Runnable task, long delayNanos) {
    executorScheduled++;
    return add(task, delayNanos, true);
  }

  /** The simulation's own events (arrivals, replica completions). */
  Event at(long time, Runnable task) {
    return add(task, time - now, false);
  }

  private Event add(Runnable task, long delayNanos, boolean executor) {
    Event e = new Event(now + Math.max(0, delayNanos), seq++, executor, task);
    e.owner = this;
    queue.add(e);
    return e;
  }

  /** Runs the next live event; false when none is left. */
  boolean step() {
    Event e;
    do {
      e = queue.poll();
      if (e == null) {
        return false;
      }
    } while (e.cancelled);
    now = e.time;
    e.fired = true;
    if (e.executor) {
      executorFired++;
    }
    Runnable task = e.task;
    e.task = null;
    task.run();
    return true;
  }

  /** Live (not cancelled, not fired) events still queued. */
  long live() {
    return queue.stream().filter(e -> !e.cancelled).count();
  }
}
