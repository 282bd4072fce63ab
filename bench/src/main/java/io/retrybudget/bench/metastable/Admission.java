package io.retrybudget.bench.metastable;

import java.util.Map;

/**
 * Which arriving request gets one of the backend's K workers, when, and which is answered without
 * being served: the one piece of the backend that the arms' servers differ in. An admission owns
 * the count of busy workers (a queue that drops requests as time passes must know when a worker
 * frees, so it cannot leave that count to the core). {@link FifoAdmission} is the plain bounded
 * FIFO queue; {@link ServerKitAdmission} is server-kit's {@code AdmissionQueue}. Called on the
 * backend's one thread; implementations need no locking.
 */
interface Admission {
  /** What an admission decides, told to the {@link ServerCore}. */
  interface Decisions {
    /**
     * The job holds a worker from now on: the core serves it, answers it, then runs {@code release}
     * (exactly once), which frees the worker.
     */
    void start(Job job, Runnable release);

    /** The job is answered now ({@code status}, {@code headers}) and never served. */
    void refuse(Job job, int status, Map<String, String> headers);
  }

  /** A request arrives at {@code nowMillis}: started, queued, or refused, now or later. */
  void arrive(Job job, long nowMillis, Decisions decisions);

  /** Requests waiting for a worker. */
  int waiting();
}
