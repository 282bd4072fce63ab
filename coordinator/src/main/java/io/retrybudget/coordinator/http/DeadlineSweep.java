package io.retrybudget.coordinator.http;

import io.netty.util.concurrent.EventExecutor;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The slow-client timer: a periodic sweep on the acceptor thread over every open connection hands
 * those past their phase's deadline to their event loops, where {@link GuardedConnection#deadlinePassed}
 * answers 408 or closes them. At most {@link ConnectionGuard#MAX_EXPIRING} such closes are queued at
 * once.
 */
final class DeadlineSweep {
  /** While more connections are past their deadline than one pass closes, the next pass after this. */
  static final long BACKLOG_PASS_MILLIS = 2;

  private final Set<GuardedConnection> all = ConcurrentHashMap.newKeySet();
  private final AtomicBoolean sweeping = new AtomicBoolean();
  private volatile ScheduledFuture<?> sweep;
  /** Deadline closes handed to event loops and not run yet: at most {@link ConnectionGuard#MAX_EXPIRING}. */
  private final AtomicInteger expiring = new AtomicInteger();
  // the acceptor thread (the sweep's) only:
  private EventExecutor sweeper;
  private boolean backlogPass;
  private volatile int mostExpiring;

  /** Starts sweeping every {@code everyMillis} on {@code executor} (the acceptor's); once. */
  void start(EventExecutor executor, long everyMillis) {
    if (sweeping.compareAndSet(false, true)) {
      sweeper = executor;
      sweep = executor.scheduleAtFixedRate(this::sweep, everyMillis, everyMillis, TimeUnit.MILLISECONDS);
    }
  }

  /** The listening socket closed. */
  void stop() {
    ScheduledFuture<?> s = sweep;
    if (s != null) {
      s.cancel(false);
    }
  }

  void add(GuardedConnection c) {
    all.add(c);
  }

  void remove(GuardedConnection c) {
    all.remove(c);
  }

  /** The most deadline closes queued on event loops at once so far. */
  int mostExpiringAtOnce() {
    return mostExpiring;
  }

  /**
   * Closes the connections past their deadline, at most {@link ConnectionGuard#MAX_EXPIRING} at a
   * time: each close (and 408) is a task on the connection's event loop, and a mass expiry (3,000
   * bodies that all began within two seconds) queued at once would put a health probe's accept
   * behind all of them. While more are due, the next pass follows after {@link #BACKLOG_PASS_MILLIS},
   * and a pass only issues as many as the event loop has finished (self-clocked). Runs on the
   * acceptor thread.
   */
  private void sweep() {
    long now = System.nanoTime();
    boolean more = false;
    for (GuardedConnection c : all) {
      if (now - c.deadline > 0 && !c.picked && !c.closing.get()) {
        if (expiring.get() >= ConnectionGuard.MAX_EXPIRING) {
          more = true;
          break;
        }
        int queued = expiring.incrementAndGet();
        if (queued > mostExpiring) {
          mostExpiring = queued;
        }
        expire(c);
      }
    }
    if (more && !backlogPass && sweeper != null && !sweeper.isShuttingDown()) {
      backlogPass = true;
      try {
        sweeper.schedule(() -> {
          backlogPass = false;
          sweep();
        }, BACKLOG_PASS_MILLIS, TimeUnit.MILLISECONDS);
      } catch (RejectedExecutionException stopping) {
        backlogPass = false; // the server is stopping: its connections close with it
      }
    }
  }

  /** Past its deadline (the sweep, any thread): the close runs on the connection's event loop. */
  private void expire(GuardedConnection c) {
    c.picked = true;
    try {
      c.ch.eventLoop().execute(() -> expired(c));
    } catch (RejectedExecutionException shuttingDown) {
      expiring.decrementAndGet();
      c.ch.close();
    }
  }

  /** The expiry, on the connection's event loop. */
  private void expired(GuardedConnection c) {
    try {
      if (!c.ch.isOpen() || System.nanoTime() - c.deadline <= 0) {
        return; // closed meanwhile, or its phase moved on (a request began)
      }
      c.deadlinePassed();
    } finally {
      c.picked = false;
      expiring.decrementAndGet();
    }
  }
}
