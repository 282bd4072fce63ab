package io.retrybudget.bench.metastable;

import java.util.Map;

/**
 * One request at the backend: when it arrived, when its caller gives up on it (from
 * {@code X-Request-Deadline-Ms}; {@link Long#MAX_VALUE} when it carried none), which attempt of its
 * call it is ({@code X-Retry-Attempt}), and how to answer it.
 */
final class Job {
  /** Answers a request: called once, on the backend's thread. */
  interface Reply {
    /** The answer's status and headers (a shed answer's pushback). */
    void send(int status, Map<String, String> headers);

    /** An answer without headers. */
    default void send(int status) {
      send(status, Map.of());
    }
  }

  final long arrivalMillis;
  final long deadlineMillis;
  final int attempt;
  final Reply reply;

  Job(long arrivalMillis, long deadlineMillis, int attempt, Reply reply) {
    this.arrivalMillis = arrivalMillis;
    this.deadlineMillis = deadlineMillis;
    this.attempt = attempt;
    this.reply = reply;
  }

  /** The caller has given up at {@code nowMillis}: an answer now is wasted work. */
  boolean callerGone(long nowMillis) {
    return nowMillis > deadlineMillis;
  }
}
