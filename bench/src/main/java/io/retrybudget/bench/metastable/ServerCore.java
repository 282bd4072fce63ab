package io.retrybudget.bench.metastable;

import java.util.List;
import java.util.function.LongToDoubleFunction;

/**
 * The backend's capacity, apart from I/O: {@code workers} requests are served at once, each for
 * the service time the schedule gives when it starts (a timer, not CPU); the others wait in the
 * {@link WorkQueue}. Every served request is answered 200, and counted as wasted when its caller
 * had given up before the answer. The real backend drives it from one Vert.x event loop, the model
 * from fake time; either way it runs on one thread and needs no locking.
 */
final class ServerCore {
  /** Per-second columns of the backend. */
  static final List<String> COLUMNS = List.of("arrived", "processed", "wasted", "refused", "queue_max");

  /** The backend's clock and timers. */
  interface Timers {
    long nowMillis();

    void after(long delayMillis, Runnable task);
  }

  private final int workers;
  private final WorkQueue queue;
  private final Timers timers;
  private final long startMillis;
  private final LongToDoubleFunction serviceMillisAt; // millis since start -> service time
  private final PerSecond stats;
  private final int arrived;
  private final int processed;
  private final int wasted;
  private final int refused;
  private final int queueMax;
  private int busy;

  ServerCore(int workers, WorkQueue queue, Timers timers, long startMillis, LongToDoubleFunction serviceMillisAt,
      PerSecond stats) {
    if (workers < 1) {
      throw new IllegalArgumentException("workers must be at least 1, was " + workers);
    }
    this.workers = workers;
    this.queue = queue;
    this.timers = timers;
    this.startMillis = startMillis;
    this.serviceMillisAt = serviceMillisAt;
    this.stats = stats;
    this.arrived = stats.column("arrived");
    this.processed = stats.column("processed");
    this.wasted = stats.column("wasted");
    this.refused = stats.column("refused");
    this.queueMax = stats.column("queue_max");
  }

  private int second(long now) {
    return (int) Math.floorDiv(now - startMillis, 1000L);
  }

  /** A request arrives. */
  void arrive(Job job) {
    long now = timers.nowMillis();
    stats.add(second(now), arrived, 1);
    if (busy < workers && queue.size() == 0) {
      start(job, now);
    } else if (!queue.offer(job, now)) {
      stats.add(second(now), refused, 1);
      job.reply.send(503);
    }
    stats.max(second(now), queueMax, queue.size());
  }

  private void start(Job job, long now) {
    busy++;
    long service = Math.max(1, Math.round(serviceMillisAt.applyAsDouble(now - startMillis)));
    timers.after(service, () -> finish(job));
  }

  private void finish(Job job) {
    long now = timers.nowMillis();
    busy--;
    int s = second(now);
    stats.add(s, processed, 1);
    if (job.callerGone(now)) {
      stats.add(s, wasted, 1);
    }
    job.reply.send(200);
    int before = queue.size();
    Job next = queue.poll(now);
    // what the queue answered itself instead of serving it
    int answered = before - queue.size() - (next == null ? 0 : 1);
    if (answered > 0) {
      stats.add(s, refused, answered);
    }
    if (next != null) {
      start(next, now);
    }
  }

  int busy() {
    return busy;
  }

  int queued() {
    return queue.size();
  }
}
