package io.retrybudget.budget;

import java.util.HashMap;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * The periodic tasks of a {@link RedisBudgetClient}'s budgets (each budget's flush tick), grouped: tasks
 * of one period whose phase falls in the same slot of {@link #resolutionMillis} run together, one after
 * the other, from one periodic timer task. A process of 5,000 budgets ticking every 500 ms at random
 * phases had 10,000 timer runs a second, each a wake-up of the timer thread and of the connection's
 * event loop for one write (about 30-40 µs of CPU each on a 2-core virtual machine, measured in the
 * real relay run); grouped they are at most 100 wake-ups a second (50 slots of 10 ms), each sending
 * the calls that came due together, whatever the number of budgets. A budget's tick moves by less
 * than one slot: its flushes keep their random phase.
 *
 * <p>A task's first run comes within one slot of its initial delay, then every period with its group.
 * A task that throws does not stop the others, nor its own later runs. Thread-safe.
 */
final class TickGroups {
  /** Starts {@code task} every {@code periodNanos}, the first time after {@code initialNanos}. */
  @FunctionalInterface
  interface Periodic {
    EngineTimer.Cancel every(Runnable task, long initialNanos, long periodNanos);
  }

  private static final long NANOS = 1_000_000L;
  private final Periodic periodic;
  private final LongSupplier nanoClock;
  private final Map<Key, Group> groups = new HashMap<>(); // guarded by this

  private record Key(long periodMillis, long slot) {}

  private static final class Member {
    final Runnable task;
    final long firstNanos; // runs from here on (less one slot: its group's phase is within one of its own)
    volatile boolean cancelled;

    Member(Runnable task, long firstNanos) {
      this.task = task;
      this.firstNanos = firstNanos;
    }
  }

  private final class Group implements Runnable {
    final long slotNanos;
    volatile Member[] members = new Member[0]; // copied on write under the TickGroups lock
    EngineTimer.Cancel timer;

    Group(long slotNanos) {
      this.slotNanos = slotNanos;
    }

    @Override
    public void run() {
      long now = nanoClock.getAsLong();
      for (Member m : members) {
        if (m.cancelled || now - (m.firstNanos - slotNanos) < 0) {
          continue;
        }
        try {
          m.task.run();
        } catch (RuntimeException e) {
          // one budget's failure is its own: the group's other budgets and its later ticks go on
        }
      }
    }
  }

  TickGroups(Periodic periodic, LongSupplier nanoClock) {
    this.periodic = periodic;
    this.nanoClock = nanoClock;
  }

  /** The slot width for a period: 10 ms, or a tenth of a period under 100 ms (at least 1 ms). */
  static long resolutionMillis(long periodMillis) {
    return periodMillis >= 100 ? 10 : Math.max(1, periodMillis / 10);
  }

  /** Runs {@code task} every {@code periodMillis}, the first time after about {@code initialMillis}. */
  EngineTimer.Cancel every(Runnable task, long initialMillis, long periodMillis) {
    if (periodMillis <= 0) {
      throw new IllegalArgumentException("periodMillis must be positive, was " + periodMillis);
    }
    long res = resolutionMillis(periodMillis);
    long now = nanoClock.getAsLong();
    long first = now + Math.max(0, initialMillis) * NANOS;
    Key key = new Key(periodMillis, Math.floorMod(Math.floorDiv(first, NANOS), periodMillis) / res);
    Member member = new Member(task, first);
    synchronized (this) {
      Group g = groups.get(key);
      if (g == null) {
        g = new Group(res * NANOS);
        g.members = new Member[] {member};
        groups.put(key, g);
        g.timer = periodic.every(g, Math.max(0, first - now), periodMillis * NANOS);
      } else {
        Member[] m = java.util.Arrays.copyOf(g.members, g.members.length + 1);
        m[m.length - 1] = member;
        g.members = m;
      }
    }
    return () -> cancel(key, member);
  }

  private void cancel(Key key, Member member) {
    member.cancelled = true;
    EngineTimer.Cancel stop = null;
    synchronized (this) {
      Group g = groups.get(key);
      if (g == null) {
        return;
      }
      Member[] old = g.members;
      int at = -1;
      for (int i = 0; i < old.length; i++) {
        if (old[i] == member) {
          at = i;
          break;
        }
      }
      if (at < 0) {
        return;
      }
      if (old.length == 1) {
        groups.remove(key);
        g.members = new Member[0];
        stop = g.timer;
      } else {
        Member[] m = new Member[old.length - 1];
        System.arraycopy(old, 0, m, 0, at);
        System.arraycopy(old, at + 1, m, at, old.length - at - 1);
        g.members = m;
      }
    }
    if (stop != null) {
      stop.cancel();
    }
  }

  /** Periodic timer tasks running now (for tests). */
  synchronized int groups() {
    return groups.size();
  }
}
