package io.retrybudget.budget;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The budgets' ticks grouped by phase: few timer tasks, each budget's tick where it was, by one slot at most. */
class TickGroupsTest {
  private static final long MS = 1_000_000L;

  /** A fake timer: the periodic tasks it holds, run by {@link #advanceTo} on fake time. */
  private static final class FakePeriodic implements TickGroups.Periodic {
    final class Entry {
      final Runnable task;
      final long period;
      long next;
      boolean cancelled;

      Entry(Runnable task, long next, long period) {
        this.task = task;
        this.next = next;
        this.period = period;
      }
    }

    long now = 7_777 * MS; // not a multiple of any period
    final List<Entry> entries = new ArrayList<>();

    @Override
    public EngineTimer.Cancel every(Runnable task, long initialNanos, long periodNanos) {
      Entry e = new Entry(task, now + initialNanos, periodNanos);
      entries.add(e);
      return () -> e.cancelled = true;
    }

    void advanceTo(long target) {
      while (true) {
        Entry due = null;
        for (Entry e : entries) {
          if (!e.cancelled && e.next <= target && (due == null || e.next < due.next)) {
            due = e;
          }
        }
        if (due == null) {
          now = target;
          return;
        }
        now = due.next;
        due.next += due.period;
        due.task.run();
      }
    }

    long live() {
      return entries.stream().filter(e -> !e.cancelled).count();
    }
  }

  @Test
  void aClientsBudgetsTickFromOneTimerTaskPerSlot() throws Exception {
    // the production timer: 1,000 budgets ticking every 500 ms at random phases share at most 50 timer tasks
    AtomicInteger periodicTasks = new AtomicInteger();
    ScheduledThreadPoolExecutor executor = new ScheduledThreadPoolExecutor(1) {
      @Override
      public ScheduledFuture<?> scheduleAtFixedRate(Runnable command, long initialDelay, long period, TimeUnit unit) {
        periodicTasks.incrementAndGet();
        return super.scheduleAtFixedRate(command, initialDelay, period, unit);
      }
    };
    executor.setRemoveOnCancelPolicy(true); // as the client's own timer (Schedulers.daemon)
    try {
      EngineTimer timer = EngineTimer.of(executor);
      SplittableRandom random = new SplittableRandom(3);
      List<EngineTimer.Cancel> ticks = new ArrayList<>();
      for (int i = 0; i < 1_000; i++) {
        ticks.add(timer.every(() -> { }, 500 + random.nextInt(500), 500));
      }
      assertTrue(periodicTasks.get() <= 50, periodicTasks.get() + " periodic timer tasks for 1,000 budgets");
      ticks.forEach(EngineTimer.Cancel::cancel);
      assertEquals(0, executor.getQueue().size(), "every group's timer task gone with its last budget");
    } finally {
      executor.shutdownNow();
    }
  }

  @Test
  void eachTaskRunsEveryPeriodFromWithinASlotOfItsFirstTime() {
    FakePeriodic fake = new FakePeriodic();
    TickGroups groups = new TickGroups(fake, () -> fake.now);
    SplittableRandom random = new SplittableRandom(11);
    int n = 400;
    long period = 500;
    long[] firstAt = new long[n];
    List<List<Long>> runs = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      runs.add(new ArrayList<>());
      // budgets made over 2 s, each with an initial delay of 1 to 2 periods, as RedisRetryBudget asks
      fake.advanceTo(fake.now + random.nextInt(5) * MS);
      long initial = period + random.nextInt((int) period);
      firstAt[i] = fake.now + initial * MS;
      List<Long> mine = runs.get(i);
      groups.every(() -> mine.add(fake.now), initial, period);
    }
    assertTrue(groups.groups() <= period / TickGroups.resolutionMillis(period), groups.groups() + " groups");
    long end = fake.now + 10_000 * MS;
    fake.advanceTo(end);
    long slot = TickGroups.resolutionMillis(period) * MS;
    for (int i = 0; i < n; i++) {
      List<Long> mine = runs.get(i);
      assertTrue(Math.abs(mine.get(0) - firstAt[i]) < slot, "task " + i + " first ran " + (mine.get(0) - firstAt[i])
          + " ns from its first time");
      for (int k = 1; k < mine.size(); k++) {
        assertEquals(period * MS, mine.get(k) - mine.get(k - 1), "task " + i + ": one period between runs");
      }
      long expected = (end - mine.get(0)) / (period * MS) + 1;
      assertEquals(expected, mine.size(), "task " + i + " ran every period to the end");
    }
  }

  @Test
  void aCancelledTaskStopsAndTheLastOfAGroupStopsItsTimer() {
    FakePeriodic fake = new FakePeriodic();
    TickGroups groups = new TickGroups(fake, () -> fake.now);
    AtomicInteger a = new AtomicInteger();
    AtomicInteger b = new AtomicInteger();
    EngineTimer.Cancel ca = groups.every(a::incrementAndGet, 100, 100);
    EngineTimer.Cancel cb = groups.every(b::incrementAndGet, 101, 100); // the same 10 ms slot
    assertEquals(1, fake.live());
    fake.advanceTo(fake.now + 350 * MS);
    assertEquals(3, a.get());
    assertEquals(3, b.get());
    ca.cancel();
    fake.advanceTo(fake.now + 300 * MS);
    assertEquals(3, a.get(), "cancelled: never again");
    assertEquals(6, b.get());
    cb.cancel();
    assertEquals(0, fake.live(), "the group's timer task is cancelled with its last task");
    assertEquals(0, groups.groups());
    cb.cancel(); // twice: nothing
    EngineTimer.Cancel cc = groups.every(a::incrementAndGet, 100, 100);
    fake.advanceTo(fake.now + 100 * MS);
    assertEquals(4, a.get(), "a new task of that slot gets a new group");
    cc.cancel();
  }

  @Test
  void aTaskThatThrowsStopsNeitherItsGroupNorItsOwnLaterRuns() {
    FakePeriodic fake = new FakePeriodic();
    TickGroups groups = new TickGroups(fake, () -> fake.now);
    AtomicInteger thrown = new AtomicInteger();
    AtomicInteger other = new AtomicInteger();
    groups.every(() -> {
      thrown.incrementAndGet();
      throw new IllegalStateException("a budget's tick failed");
    }, 200, 200);
    groups.every(other::incrementAndGet, 202, 200);
    fake.advanceTo(fake.now + 1_000 * MS);
    assertEquals(5, thrown.get());
    assertEquals(5, other.get());
  }
}
