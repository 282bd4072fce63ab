package io.retrybudget.server;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Objects;

/**
 * The admission queue's decisions as a pure state machine on the time it is given (nanoseconds of
 * any monotonic clock): K workers, a bounded queue, a CoDel-style bound on the time a request waits,
 * adaptive LIFO, deadlines, and retries behind first attempts. No threads, no clock, no I/O; not
 * thread-safe ({@link AdmissionQueue} runs it under a lock and does its actions). Every event
 * first drops what has expired at its time, and returns the actions to take, in order:
 * {@link Start} (the item has a worker: run it) and {@link Drop} (answer it, or for
 * {@link QueueDrop#CANCELLED} forget it; it never runs).
 *
 * <p>The rules:
 * <ul>
 *   <li><b>Work-conserving</b>: a request waits only while all K workers are busy; a freed worker
 *       takes the next request at once.
 *   <li><b>Deadline</b>: a request whose deadline has passed is never started: dropped
 *       ({@link QueueDrop#DEADLINE}) on arrival, or the moment its deadline passes while it waits.
 *   <li><b>Standing queue</b>: the queue is standing at time t when it has held at least one request
 *       without a break since {@code t - interval} or earlier. A waiting request is dropped
 *       ({@link QueueDrop#CODEL}) once it has waited {@code shortTimeout} while the queue is standing,
 *       or {@code longTimeout} in any case. So a request queued at {@code e} into a queue last empty
 *       at {@code L} is dropped at {@link #expiresAt} {@code = min(deadline, e + longTimeout,
 *       max(e + shortTimeout, L + interval))} unless a worker takes it first.
 *   <li><b>Order</b>: first attempts before retries; within each, oldest first, or newest first
 *       while the queue is standing and {@code adaptiveLifo} is on.
 *   <li><b>Bound</b>: at most {@code maxQueue} wait. A first attempt that finds the queue full takes
 *       the place of the oldest waiting retry (dropped {@link QueueDrop#FULL}); any other arrival
 *       finding it full is dropped {@link QueueDrop#FULL}.
 * </ul>
 *
 * @param <T> what the caller queues (a handle of its request); compared by identity
 */
public final class QueuePolicy<T> {
  /** No deadline: the request waits only as long as the queue's timeouts allow. */
  public static final long NO_DEADLINE = Long.MAX_VALUE;

  /** What to do with one item. */
  public sealed interface Action<T> permits Start, Drop {
    T item();
  }

  /** Run the item: it holds a worker until {@link #release}; {@code waitedNanos} it spent queued. */
  public record Start<T>(T item, boolean retry, long waitedNanos) implements Action<T> {}

  /** The item never runs; answer it by {@code reason} ({@link QueueDrop#CANCELLED}: nothing to answer). */
  public record Drop<T>(T item, boolean retry, QueueDrop reason, long waitedNanos) implements Action<T> {}

  private record Entry<T>(T item, boolean retry, long enqueuedNanos, long deadlineNanos) {}

  private final QueueConfig config;
  private final ArrayDeque<Entry<T>> firsts = new ArrayDeque<>();
  private final ArrayDeque<Entry<T>> retries = new ArrayDeque<>();
  private int running;
  private long lastEmptyNanos;
  private long lastNow;

  /** @param nowNanos the time the policy starts at (the queue is empty then) */
  public QueuePolicy(QueueConfig config, long nowNanos) {
    this.config = Objects.requireNonNull(config, "config must not be null");
    this.lastEmptyNanos = nowNanos;
    this.lastNow = nowNanos;
  }

  /**
   * A request arrives: started at once when a worker is free, else queued, else dropped. Its
   * deadline is absolute on the policy's clock, or {@link #NO_DEADLINE}.
   */
  public List<Action<T>> offer(T item, boolean retry, long deadlineNanos, long now) {
    Objects.requireNonNull(item, "item must not be null");
    List<Action<T>> actions = begin(now);
    if (deadlineNanos <= now) {
      actions.add(new Drop<>(item, retry, QueueDrop.DEADLINE, 0));
    } else if (running < config.workers()) {
      running++;
      actions.add(new Start<>(item, retry, 0));
    } else if (size() < config.maxQueue()) {
      enqueue(new Entry<>(item, retry, now, deadlineNanos), now);
    } else if (!retry && !retries.isEmpty()) {
      Entry<T> evicted = retries.pollFirst();
      actions.add(new Drop<>(evicted.item(), true, QueueDrop.FULL, now - evicted.enqueuedNanos()));
      enqueue(new Entry<>(item, false, now, deadlineNanos), now);
    } else {
      actions.add(new Drop<>(item, retry, QueueDrop.FULL, 0));
    }
    return end(actions, now);
  }

  /** A started request has finished: its worker takes the next waiting request, if any. */
  public List<Action<T>> release(long now) {
    if (running == 0) {
      throw new IllegalStateException("release without a running request");
    }
    List<Action<T>> actions = begin(now);
    running--;
    if (size() > 0) {
      boolean lifo = config.adaptiveLifo() && standing(now);
      ArrayDeque<Entry<T>> from = firsts.isEmpty() ? retries : firsts;
      Entry<T> next = lifo ? from.pollLast() : from.pollFirst();
      running++;
      actions.add(new Start<>(next.item(), next.retry(), now - next.enqueuedNanos()));
    }
    return end(actions, now);
  }

  /** Time passes (a timer at {@link #nextExpiryNanos()}): drops what has expired. */
  public List<Action<T>> expire(long now) {
    return end(begin(now), now);
  }

  /** The caller went away: the item, if it still waits, is dropped {@link QueueDrop#CANCELLED}. */
  public List<Action<T>> cancel(T item, long now) {
    List<Action<T>> actions = begin(now);
    for (ArrayDeque<Entry<T>> q : List.of(firsts, retries)) {
      for (Iterator<Entry<T>> it = q.iterator(); it.hasNext();) {
        Entry<T> e = it.next();
        if (e.item() == item) {
          it.remove();
          actions.add(new Drop<>(item, e.retry(), QueueDrop.CANCELLED, now - e.enqueuedNanos()));
          return end(actions, now);
        }
      }
    }
    return end(actions, now);
  }

  /**
   * When the next waiting request expires if no worker takes it ({@link #expiresAt}'s least value),
   * {@link Long#MAX_VALUE} when none waits. Fixed for a request while it waits.
   */
  public long nextExpiryNanos() {
    long next = Long.MAX_VALUE;
    for (ArrayDeque<Entry<T>> q : List.of(firsts, retries)) {
      for (Entry<T> e : q) {
        next = Math.min(next, expiresAt(e));
      }
    }
    return next;
  }

  /** When the item expires if no worker takes it, {@link Long#MAX_VALUE} when it does not wait. */
  public long expiresAt(T item) {
    for (ArrayDeque<Entry<T>> q : List.of(firsts, retries)) {
      for (Entry<T> e : q) {
        if (e.item() == item) {
          return expiresAt(e);
        }
      }
    }
    return Long.MAX_VALUE;
  }

  /** Whether the queue is standing at {@code now}: non-empty without a break for at least the interval. */
  public boolean standing(long now) {
    return size() > 0 && now - lastEmptyNanos >= config.intervalNanos();
  }

  /** Whether the next request a worker takes at {@code now} is the newest (adaptive LIFO in force). */
  public boolean lifo(long now) {
    return config.adaptiveLifo() && standing(now);
  }

  /** Requests waiting. */
  public int size() {
    return firsts.size() + retries.size();
  }

  /** Requests started and not yet released. */
  public int running() {
    return running;
  }

  /** Whether an arrival now would have to wait (every worker busy). */
  public boolean saturated() {
    return running >= config.workers();
  }

  public QueueConfig config() {
    return config;
  }

  private long expiresAt(Entry<T> e) {
    long codel = Math.min(sat(e.enqueuedNanos(), config.longTimeoutNanos()),
        Math.max(sat(e.enqueuedNanos(), config.shortTimeoutNanos()), sat(lastEmptyNanos, config.intervalNanos())));
    return Math.min(e.deadlineNanos(), codel);
  }

  private static long sat(long a, long b) {
    long r = a + b;
    return ((a ^ r) & (b ^ r)) < 0 ? Long.MAX_VALUE : r;
  }

  private void enqueue(Entry<T> e, long now) {
    if (size() == 0) {
      lastEmptyNanos = now; // empty until now
    }
    (e.retry() ? retries : firsts).addLast(e);
  }

  /** Time moves on (never back), and what has expired by {@code now} is dropped. */
  private List<Action<T>> begin(long now) {
    if (now < lastNow) {
      throw new IllegalArgumentException("time went back: " + now + " < " + lastNow);
    }
    lastNow = now;
    List<Action<T>> actions = new ArrayList<>(2);
    if (size() > 0) {
      for (ArrayDeque<Entry<T>> q : List.of(firsts, retries)) {
        for (Iterator<Entry<T>> it = q.iterator(); it.hasNext();) {
          Entry<T> e = it.next();
          if (expiresAt(e) <= now) {
            it.remove();
            QueueDrop why = e.deadlineNanos() <= now ? QueueDrop.DEADLINE : QueueDrop.CODEL;
            actions.add(new Drop<>(e.item(), e.retry(), why, now - e.enqueuedNanos()));
          }
        }
      }
    }
    return actions;
  }

  private List<Action<T>> end(List<Action<T>> actions, long now) {
    if (size() == 0) {
      lastEmptyNanos = now;
    }
    return actions;
  }
}
