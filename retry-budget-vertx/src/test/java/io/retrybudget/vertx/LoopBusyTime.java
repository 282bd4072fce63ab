package io.retrybudget.vertx;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * How long an event loop was busy, as opposed to how long it waited for a core. Vert.x's
 * blocked-thread checker measures wall time since a task began; on a machine at a load of 16 on 2
 * cores a runnable thread can wait a second for a core, so a 5 ms task "blocks" for 150 ms. A loop
 * that is really blocked is either on a core (CPU time) or parked, sleeping or waiting for a lock
 * (the JVM's waited and blocked times): this samples that sum for every event loop thread every 10
 * ms, and {@link #busyMillis} says how much of it fell in a reported block. Time the thread waited
 * for a core counts in neither. Where no sample precedes a block (a loop thread younger than the
 * last lookup), the wall time is all it has, and it says that.
 */
final class LoopBusyTime implements AutoCloseable {
  private static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();
  private static final long KEEP_NANOS = TimeUnit.SECONDS.toNanos(30);

  private java.util.List<Thread> loops = java.util.List.of(); // sampler thread only
  private long ticks; // sampler thread only
  private final Map<Thread, ArrayDeque<long[]>> samples = new ConcurrentHashMap<>(); // {nanoTime, busyNanos}
  private final ScheduledExecutorService sampler = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread t = new Thread(r, "loop-busy-sampler");
    t.setDaemon(true);
    return t;
  });

  LoopBusyTime() {
    if (!MX.isThreadContentionMonitoringSupported() || !MX.isThreadCpuTimeSupported()) {
      throw new IllegalStateException("this JVM measures no thread CPU or waited time: the blocked-loop check needs both");
    }
    MX.setThreadContentionMonitoringEnabled(true);
    MX.setThreadCpuTimeEnabled(true);
    sampler.scheduleAtFixedRate(this::sample, 0, 10, TimeUnit.MILLISECONDS);
  }

  private void sample() {
    if (ticks++ % 100 == 0) { // the event loop threads, looked up once a second (a lookup stops every thread)
      loops = Thread.getAllStackTraces().keySet().stream()
          .filter(t -> t.getName().startsWith("vert.x-eventloop-thread")).toList();
    }
    for (Thread t : loops) {
      record(t);
    }
  }

  private void record(Thread t) {
    long now = System.nanoTime();
    long busy = busyNanos(t);
    if (busy < 0) {
      return;
    }
    ArrayDeque<long[]> q = samples.computeIfAbsent(t, k -> new ArrayDeque<>());
    synchronized (q) {
      q.addLast(new long[] {now, busy});
      while (!q.isEmpty() && now - q.peekFirst()[0] > KEEP_NANOS) {
        q.removeFirst();
      }
    }
  }

  /** CPU time plus time blocked and waiting, ns; -1 when the thread has ended. */
  private static long busyNanos(Thread t) {
    long cpu = MX.getThreadCpuTime(t.getId());
    ThreadInfo info = MX.getThreadInfo(t.getId());
    if (cpu < 0 || info == null) {
      return -1;
    }
    return cpu + TimeUnit.MILLISECONDS.toNanos(info.getBlockedTime() + info.getWaitedTime());
  }

  /**
   * How long {@code t} was busy from {@code beganNanos} (System.nanoTime()) until now, ms. Counted
   * from the last sample at or before that instant; the time between that sample and the instant is
   * taken off as if the thread had been busy all of it, so a late sample never makes a block look
   * longer than it was (it can make one look shorter only while the sampler itself waits for a core).
   */
  long busyMillis(Thread t, long beganNanos, long wallMillis) {
    long busyNow = busyNanos(t);
    ArrayDeque<long[]> q = samples.get(t);
    if (busyNow < 0 || q == null) {
      return wallMillis; // a thread not sampled yet: only the wall time is known
    }
    long[] before = null;
    synchronized (q) {
      for (Iterator<long[]> it = q.iterator(); it.hasNext(); ) {
        long[] s = it.next();
        if (s[0] <= beganNanos) {
          before = s;
        }
      }
    }
    if (before == null) {
      return wallMillis; // no sample from before the block began: only the wall time is known
    }
    return Math.max(0, busyNow - before[1] - (beganNanos - before[0])) / 1_000_000;
  }

  @Override
  public void close() {
    sampler.shutdownNow();
  }
}
