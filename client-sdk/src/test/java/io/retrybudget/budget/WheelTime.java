package io.retrybudget.budget;

import io.retrybudget.retry.RetryScheduler;
import java.util.ArrayDeque;
import java.util.Comparator;
import java.util.PriorityQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;

/**
 * Fake time in whole milliseconds for fleets of up to millions of budget engines: a timing wheel (one
 * slot per millisecond for the next 65 s, a heap beyond) instead of {@code FakeTime}'s one heap of
 * every task, so a timer tick costs O(1). Tasks due in the same millisecond run in the order scheduled;
 * a task scheduled with no delay while a millisecond runs runs in it too. The clock, scheduler and
 * {@link EngineTimer} of {@link VirtualFleet}. Single-threaded: everything runs inside {@link #advanceTo}.
 */
public final class WheelTime implements RetryScheduler, EngineTimer {
  private static final int SLOTS = 1 << 16;
  private static final long NANOS = 1_000_000L;

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

  @SuppressWarnings("unchecked")
  private final ArrayDeque<Task>[] wheel = new ArrayDeque[SLOTS];
  private final PriorityQueue<Task> far =
      new PriorityQueue<>(Comparator.<Task>comparingLong(t -> t.due).thenComparingLong(t -> t.seq));
  private long now;
  private long seq;
  private long ran;

  /** Time starts at {@code startMillis}. */
  public WheelTime(long startMillis) {
    this.now = startMillis;
  }

  /** The time, ms. */
  public long millis() {
    return now;
  }

  /** Tasks run so far. */
  public long tasksRun() {
    return ran;
  }

  /** Runs {@code task} {@code delayMillis} from now (0: in this millisecond, after those already due in it). */
  public Cancellable at(long delayMillis, Runnable task) {
    Task t = new Task(now + Math.max(0, delayMillis), seq++, task);
    if (t.due - now < SLOTS) {
      int slot = (int) (t.due & (SLOTS - 1));
      ArrayDeque<Task> q = wheel[slot];
      if (q == null) {
        q = wheel[slot] = new ArrayDeque<>();
      }
      q.addLast(t);
    } else {
      far.add(t);
    }
    return t;
  }

  /** Moves time to {@code targetMillis}, running every task due up to it, in order. */
  public void advanceTo(long targetMillis) {
    while (true) {
      ArrayDeque<Task> q = wheel[(int) (now & (SLOTS - 1))];
      while (!far.isEmpty() && far.peek().due <= now) {
        Task t = far.poll();
        if (!t.cancelled) {
          ran++;
          t.run.run();
        }
      }
      if (q != null) {
        Task t;
        while ((t = q.pollFirst()) != null) {
          if (!t.cancelled) {
            ran++;
            t.run.run();
          }
        }
      }
      if (now >= targetMillis) {
        return;
      }
      now++;
    }
  }

  // ---- RetryScheduler (delays in ns, rounded up to whole ms)
  @Override
  public Cancellable schedule(Runnable task, long delayNanos) {
    return at((Math.max(0, delayNanos) + NANOS - 1) / NANOS, task);
  }

  // ---- EngineTimer
  @Override
  public EngineTimer.Cancel every(Runnable task, long initialMillis, long periodMillis) {
    Cancellable[] next = new Cancellable[1];
    boolean[] cancelled = new boolean[1];
    Runnable[] self = new Runnable[1];
    self[0] = () -> {
      if (cancelled[0]) {
        return;
      }
      next[0] = at(periodMillis, self[0]);
      task.run();
    };
    next[0] = at(initialMillis, self[0]);
    return () -> {
      cancelled[0] = true;
      next[0].cancel();
    };
  }

  @Override
  public void execute(Runnable task) {
    at(0, task);
  }

  @Override
  public <T> CompletableFuture<T> within(CompletableFuture<T> call, long timeoutMillis) {
    CompletableFuture<T> copy = call.copy();
    if (copy.isDone()) {
      return copy; // no timer for a call already answered
    }
    Cancellable timeout = at(timeoutMillis, () -> copy.completeExceptionally(new TimeoutException()));
    copy.whenComplete((v, e) -> timeout.cancel());
    return copy;
  }
}
