package io.retrybudget.bench.metastable;

import java.util.ArrayDeque;

/**
 * A bounded first-in first-out queue that knows nothing of deadlines: a request waits its turn and
 * is worked on even when its caller has given up long ago. That wasted work is what keeps an
 * overloaded backend overloaded once retries fill the queue.
 */
final class FifoWorkQueue implements WorkQueue {
  private final int limit;
  private final ArrayDeque<Job> jobs = new ArrayDeque<>();

  FifoWorkQueue(int limit) {
    if (limit < 0) {
      throw new IllegalArgumentException("limit must not be negative, was " + limit);
    }
    this.limit = limit;
  }

  @Override
  public boolean offer(Job job, long nowMillis) {
    if (jobs.size() >= limit) {
      return false;
    }
    jobs.addLast(job);
    return true;
  }

  @Override
  public Job poll(long nowMillis) {
    return jobs.pollFirst();
  }

  @Override
  public int size() {
    return jobs.size();
  }
}
