package io.retrybudget.server;

import java.util.Locale;

/**
 * Why a request left the {@link AdmissionQueue} without running. Every reason but
 * {@link #CANCELLED} is answered at once; the handler never runs.
 */
public enum QueueDrop {
  /**
   * Its {@code X-Request-Deadline-Ms} passed while it waited (or had passed when it arrived): 504
   * with {@code X-Retry-Pushback-Ms: -1} (do not retry: its caller has stopped waiting).
   */
  DEADLINE,
  /**
   * It waited longer than the queue's timeout (the short one while the queue is standing, the
   * long one otherwise): 503 with a spread pushback.
   */
  CODEL,
  /** The queue was at its bound (or a first attempt took a queued retry's place): 503 with a spread pushback. */
  FULL,
  /** The caller went away (connection closed, request abandoned) while it waited: nothing is answered. */
  CANCELLED;

  /** Lower-case name for metric tags. */
  public String tag() {
    return name().toLowerCase(Locale.ROOT);
  }
}
