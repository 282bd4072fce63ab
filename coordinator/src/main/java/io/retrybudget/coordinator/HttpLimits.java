package io.retrybudget.coordinator;

/**
 * What one client connection may hold, and for how long (environment, see the README).
 *
 * @param maxConnections COORDINATOR_MAX_CONNECTIONS: open connections at most (default 10000). At the
 *     cap a new connection closes the one that has waited longest for a request; when every
 *     connection carries a request, the new one is closed at once
 * @param headerTimeoutMillis COORDINATOR_HEADER_TIMEOUT_MS: from the first byte of a request (or
 *     from the accept) to the end of its headers (default 10000)
 * @param bodyTimeoutMillis COORDINATOR_BODY_TIMEOUT_MS: from the end of the headers to the end of
 *     the body, and again from there to the last byte of the answer (default 30000)
 * @param idleTimeoutMillis COORDINATOR_IDLE_TIMEOUT_MS: a keep-alive connection with no request
 *     (default 60000)
 */
public record HttpLimits(int maxConnections, int headerTimeoutMillis, int bodyTimeoutMillis, int idleTimeoutMillis) {
  public static final int DEFAULT_MAX_CONNECTIONS = 10_000;
  public static final int DEFAULT_HEADER_TIMEOUT_MS = 10_000;
  public static final int DEFAULT_BODY_TIMEOUT_MS = 30_000;
  public static final int DEFAULT_IDLE_TIMEOUT_MS = 60_000;

  public HttpLimits {
    positive("maxConnections", maxConnections);
    positive("headerTimeoutMillis", headerTimeoutMillis);
    positive("bodyTimeoutMillis", bodyTimeoutMillis);
    positive("idleTimeoutMillis", idleTimeoutMillis);
  }

  static HttpLimits defaults() {
    return new HttpLimits(DEFAULT_MAX_CONNECTIONS, DEFAULT_HEADER_TIMEOUT_MS, DEFAULT_BODY_TIMEOUT_MS,
        DEFAULT_IDLE_TIMEOUT_MS);
  }

  /** How often deadlines are checked: a quarter of the shortest, between 20 ms and 1 s. */
  long sweepMillis() {
    int shortest = Math.min(headerTimeoutMillis, Math.min(bodyTimeoutMillis, idleTimeoutMillis));
    return Math.max(20, Math.min(1000, shortest / 4));
  }

  private static void positive(String name, int v) {
    if (v < 1) {
      throw new IllegalArgumentException(name + " must be at least 1, was " + v);
    }
  }
}
