package io.retrybudget.bench.metastable;

import java.util.List;
import java.util.Map;
import java.util.function.LongToDoubleFunction;

/**
 * The backend's capacity, apart from I/O: the {@link Admission} decides which request holds one of
 * the K workers and when; a started request is served for the service time the schedule gives
 * when it starts (a timer, not CPU), answered 200, and counted as wasted when its caller had given
 * up before the answer. The real backend drives it from one Vert.x event loop, the model from fake
 * time; either way it runs on one thread and needs no locking.
 */
final class ServerCore {
  /**
   * Per-second columns of the backend; {@code lag_max} is how late the backend's event loop ran a
   * 10 ms probe timer, the largest delay in the second in milliseconds (the real run's; 0 in the model).
   */
  static final List<String> COLUMNS = List.of("arrived", "processed", "wasted", "refused", "queue_max", "lag_max");

  /** The backend's clock and timers. */
  interface Timers {
    long nowMillis();

    void after(long delayMillis, Runnable task);
  }

  private final Admission admission;
  private final Timers timers;
  private final long startMillis;
  private final LongToDoubleFunction serviceMillisAt; // millis since start -> service time
  private final PerSecond stats;
  private final int arrived;
  private final int processed;
  private final int wasted;
  private final int refused;
  private final int queueMax;
  private final Admission.Decisions decisions = new Admission.Decisions() {
    @Override
    public void start(Job job, Runnable release) {
      long now = timers.nowMillis();
      long service = Math.max(1, Math.round(serviceMillisAt.applyAsDouble(now - startMillis)));
      timers.after(service, () -> finish(job, release));
    }

    @Override
    public void refuse(Job job, int status, Map<String, String> headers) {
      stats.add(second(timers.nowMillis()), refused, 1);
      job.reply.send(status, headers);
    }
  };

  ServerCore(Admission admission, Timers timers, long startMillis, LongToDoubleFunction serviceMillisAt,
      PerSecond stats) {
    this.admission = admission;
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
    admission.arrive(job, now, decisions);
    stats.max(second(now), queueMax, admission.waiting());
  }

  private void finish(Job job, Runnable release) {
    long now = timers.nowMillis();
    int s = second(now);
    stats.add(s, processed, 1);
    if (job.callerGone(now)) {
      stats.add(s, wasted, 1);
    }
    job.reply.send(200);
    release.run();
  }
}
