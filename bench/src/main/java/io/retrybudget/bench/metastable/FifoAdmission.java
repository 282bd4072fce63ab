package io.retrybudget.bench.metastable;

import java.util.ArrayDeque;
import java.util.Map;

/**
 * K workers and a bounded first-in first-out queue that knows nothing of deadlines: a request waits
 * its turn and is worked on even when its caller has given up long ago. That wasted work is what
 * keeps an overloaded backend overloaded once retries fill the queue. A request that finds the
 * queue full is answered 503 at once, without headers.
 */
final class FifoAdmission implements Admission {
  private final int workers;
  private final int limit;
  private final ArrayDeque<Job> jobs = new ArrayDeque<>();
  private int busy;

  FifoAdmission(int workers, int limit) {
    if (workers < 1) {
      throw new IllegalArgumentException("workers must be at least 1, was " + workers);
    }
    if (limit < 0) {
      throw new IllegalArgumentException("limit must not be negative, was " + limit);
    }
    this.workers = workers;
    this.limit = limit;
  }

  @Override
  public void arrive(Job job, long nowMillis, Decisions decisions) {
    if (busy < workers && jobs.isEmpty()) {
      start(job, decisions);
    } else if (jobs.size() >= limit) {
      decisions.refuse(job, 503, Map.of());
    } else {
      jobs.addLast(job);
    }
  }

  private void start(Job job, Decisions decisions) {
    busy++;
    decisions.start(job, () -> release(decisions));
  }

  private void release(Decisions decisions) {
    busy--;
    Job next = jobs.pollFirst();
    if (next != null) {
      start(next, decisions);
    }
  }

  @Override
  public int waiting() {
    return jobs.size();
  }
}
