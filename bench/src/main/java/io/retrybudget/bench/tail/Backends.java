package io.retrybudget.bench.tail;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;

/** The simulated replicated backends: the pausing fleet and the uniformly saturated one. */
final class Backends {
  private Backends() {}

  /** One request (one attempt) sent to one replica; its future is what the executor waits on. */
  static final class Request {
    final CompletableFuture<Integer> future = new CompletableFuture<>();
    final long serviceNanos;
    final int attempt;
    VirtualTime.Event completion;
    boolean removed;

    Request(long serviceNanos, int attempt) {
      this.serviceNanos = serviceNanos;
      this.attempt = attempt;
    }
  }

  interface Backend {
    /** Sends {@code r} to replica {@code replica} now. */
    void submit(int replica, Request r);

    /** Server time spent on requests whose answer nobody used (cancelled in service), ns. */
    long wastedBusyNanos();

    /** Server time spent in all, ns. */
    long busyNanos();

    /** Cancelled requests taken out of a queue before service started. */
    long removedFromQueue();
  }

  /**
   * Replicas with unbounded parallelism (a request never waits for another) whose every request takes
   * its service time, except that each replica independently alternates healthy periods (exponential,
   * mean {@code healthyMeanNanos}) and pauses (uniform in [pauseMin, pauseMax]), like stop-the-world GC
   * pauses: a request in service when a pause starts, or arriving during one, is frozen until the pause
   * ends, then finishes its remaining service. A cancelled request (a losing attempt) is dropped from
   * the event queue; as parallelism is unbounded its work would delay nobody, so dropping it changes
   * no other request.
   */
  static final class Pausing implements Backend {
    private final VirtualTime time;
    private final Pauses[] replicas;
    long busy;
    long wasted;

    Pausing(VirtualTime time, int replicas, long seed, long healthyMeanNanos, long pauseMinNanos,
        long pauseMaxNanos) {
      this.time = time;
      this.replicas = new Pauses[replicas];
      for (int i = 0; i < replicas; i++) {
        this.replicas[i] = new Pauses(new SplittableRandom(seed * 1_000_003L + 7919L * (i + 1)), time.nanos(),
            healthyMeanNanos, pauseMinNanos, pauseMaxNanos);
      }
    }

    @Override
    public void submit(int replica, Request r) {
      long start = time.nanos();
      long done = replicas[replica].completion(start, r.serviceNanos);
      r.completion = time.at(done, () -> {
        busy += r.serviceNanos;
        r.future.complete(r.attempt);
      });
      r.future.whenComplete((v, e) -> {
        if (e instanceof CancellationException && r.completion != null && !r.completion.fired) {
          r.completion.cancel();
          // the work done until now (frozen time not counted) is what it cost
          long ran = Math.min(r.serviceNanos, Math.max(0, time.nanos() - start));
          busy += ran;
          wasted += ran;
        }
      });
    }

    /** Fraction of [from, to) that replica {@code i} spends paused (for the report). */
    double pausedFraction(long from, long to) {
      double sum = 0;
      for (Pauses p : replicas) {
        sum += p.pausedBetween(from, to);
      }
      return sum / replicas.length / (to - from);
    }

    @Override
    public long wastedBusyNanos() {
      return wasted;
    }

    @Override
    public long busyNanos() {
      return busy;
    }

    @Override
    public long removedFromQueue() {
      return 0;
    }
  }

  /** One replica's pause schedule, generated lazily from its own random stream. */
  static final class Pauses {
    private final SplittableRandom random;
    private final long healthyMean;
    private final long pauseMin;
    private final long pauseMax;
    private final List<long[]> pauses = new ArrayList<>(); // [start, end), sorted, never pruned
    private int head; // first pause that may still matter (ends after the latest request start)
    private long generatedUntil;

    Pauses(SplittableRandom random, long start, long healthyMean, long pauseMin, long pauseMax) {
      this.random = random;
      this.healthyMean = healthyMean;
      this.pauseMin = pauseMin;
      this.pauseMax = pauseMax;
      this.generatedUntil = start;
    }

    private long[] pause(int index) {
      while (index >= pauses.size()) {
        long healthy = (long) (-Math.log(1 - random.nextDouble()) * healthyMean);
        long begin = generatedUntil + Math.max(1, healthy);
        long length = pauseMin + (long) (random.nextDouble() * (pauseMax - pauseMin));
        pauses.add(new long[] {begin, begin + length});
        generatedUntil = begin + length;
      }
      return pauses.get(index);
    }

    /** When a request starting at {@code start} (non-decreasing over calls) with this service ends. */
    long completion(long start, long service) {
      while (pause(head)[1] <= start) {
        head++;
      }
      long t = start;
      long remaining = service;
      for (int i = head; ; i++) {
        long[] p = pause(i);
        if (p[0] >= t + remaining) {
          return t + remaining;
        }
        if (p[0] > t) {
          remaining -= p[0] - t;
        }
        t = Math.max(t, p[1]);
      }
    }

    double pausedBetween(long from, long to) {
      double sum = 0;
      for (int i = 0; ; i++) {
        long[] p = pause(i);
        if (p[0] >= to) {
          return sum;
        }
        sum += Math.max(0, Math.min(to, p[1]) - Math.max(from, p[0]));
      }
    }
  }

  /**
   * Replicas that are single-server FIFO queues with exponential service times: uniformly loaded, no
   * pauses. Hedges are real extra load. A cancelled request still waiting is taken out of the queue;
   * one already in service keeps the server busy until it is done (the server does not notice the
   * cancellation), unless {@code abortInService}, when the server drops it at once.
   */
  static final class Queues implements Backend {
    private final VirtualTime time;
    private final boolean abortInService;
    private final Server[] servers;
    long busy;
    long wasted;
    long removed;

    Queues(VirtualTime time, int replicas, boolean abortInService) {
      this.time = time;
      this.abortInService = abortInService;
      this.servers = new Server[replicas];
      for (int i = 0; i < replicas; i++) {
        servers[i] = new Server();
      }
    }

    final class Server {
      final ArrayDeque<Request> queue = new ArrayDeque<>();
      Request inService;
      long serviceStart;

      void submit(Request r) {
        r.future.whenComplete((v, e) -> {
          if (e instanceof CancellationException) {
            cancelled(r);
          }
        });
        if (inService == null) {
          start(r);
        } else {
          queue.add(r);
        }
      }

      void start(Request r) {
        inService = r;
        serviceStart = time.nanos();
        r.completion = time.at(serviceStart + r.serviceNanos, () -> finish(r));
      }

      void finish(Request r) {
        busy += r.serviceNanos;
        if (r.future.isCancelled()) {
          wasted += r.serviceNanos;
        }
        inService = null;
        startNext();
        r.future.complete(r.attempt); // may cancel the call's other attempt, on another server
      }

      void startNext() {
        Request next = queue.poll();
        if (next != null) {
          start(next);
        }
      }

      void cancelled(Request r) {
        if (r == inService) {
          if (abortInService) {
            long ran = time.nanos() - serviceStart;
            busy += ran;
            wasted += ran;
            r.completion.cancel();
            inService = null;
            startNext();
          }
          return;
        }
        for (Iterator<Request> it = queue.iterator(); it.hasNext(); ) {
          if (it.next() == r) {
            it.remove();
            r.removed = true;
            removed++;
            return;
          }
        }
      }
    }

    @Override
    public void submit(int replica, Request r) {
      servers[replica].submit(r);
    }

    @Override
    public long wastedBusyNanos() {
      return wasted;
    }

    @Override
    public long busyNanos() {
      return busy;
    }

    @Override
    public long removedFromQueue() {
      return removed;
    }
  }
}
