package io.retrybudget.bench.metastable;

/**
 * What waits for a worker, and in which order: the one piece of the backend that admission and
 * queueing policies replace (a deadline-aware, time-bounded queue implements this). Called on
 * the backend's thread only; implementations need no locking.
 */
interface WorkQueue {
  /**
   * A request arrived while every worker is busy.
   *
   * @return false when it is refused: the backend answers it 503 at once
   */
  boolean offer(Job job, long nowMillis);

  /**
   * The next request a free worker serves, or null when none waits. A policy may answer requests
   * itself here instead of serving them (through {@link Job#reply}); the backend counts those as
   * refused, not processed.
   */
  Job poll(long nowMillis);

  /** Requests waiting. */
  int size();
}
