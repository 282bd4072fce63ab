package io.retrybudget.coordinator.http;

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
 * @param probeReserve COORDINATOR_PROBE_RESERVE: connections admitted beyond the cap when every
 *     connection carries a young request, for one health probe each (anything else there is 503);
 *     default 16, 0 for none
 * @param metricsCacheMillis COORDINATOR_METRICS_CACHE_MS: a rendering of GET /metrics answers the
 *     scrapes of this long after it began (default 1000: one rendering a second however many
 *     scrape; 0: only the scrapes that arrive while it renders)
 * @param maxConnectionsPerIp COORDINATOR_MAX_CONNECTIONS_PER_IP: open connections from one client
 *     address at most; one more is closed at once, before Vert.x sees it (default 0: no limit, since
 *     behind an ingress or a NAT every client has the same address)
 */
public record HttpLimits(int maxConnections, int headerTimeoutMillis, int bodyTimeoutMillis, int idleTimeoutMillis,
    int probeReserve, int metricsCacheMillis, int maxConnectionsPerIp) {
  public static final int DEFAULT_MAX_CONNECTIONS = 10_000;
  public static final int DEFAULT_HEADER_TIMEOUT_MS = 10_000;
  public static final int DEFAULT_BODY_TIMEOUT_MS = 30_000;
  public static final int DEFAULT_IDLE_TIMEOUT_MS = 60_000;
  public static final int DEFAULT_PROBE_RESERVE = 16;
  public static final int DEFAULT_METRICS_CACHE_MS = 1_000;
  public static final int DEFAULT_MAX_CONNECTIONS_PER_IP = 0;

  public HttpLimits {
    positive("maxConnections", maxConnections);
    positive("headerTimeoutMillis", headerTimeoutMillis);
    positive("bodyTimeoutMillis", bodyTimeoutMillis);
    positive("idleTimeoutMillis", idleTimeoutMillis);
    if (probeReserve < 0) {
      throw new IllegalArgumentException("probeReserve must be at least 0, was " + probeReserve);
    }
    if (metricsCacheMillis < 0) {
      throw new IllegalArgumentException("metricsCacheMillis must be at least 0, was " + metricsCacheMillis);
    }
    if (maxConnectionsPerIp < 0) {
      throw new IllegalArgumentException("maxConnectionsPerIp must be at least 0 (0: no limit), was "
          + maxConnectionsPerIp);
    }
  }

  /** Same limits with another cap and no per-address limit: the management listener's. */
  public HttpLimits withCap(int cap) {
    return new HttpLimits(cap, headerTimeoutMillis, bodyTimeoutMillis, idleTimeoutMillis, probeReserve,
        metricsCacheMillis, 0);
  }

  public static HttpLimits defaults() {
    return new HttpLimits(DEFAULT_MAX_CONNECTIONS, DEFAULT_HEADER_TIMEOUT_MS, DEFAULT_BODY_TIMEOUT_MS,
        DEFAULT_IDLE_TIMEOUT_MS, DEFAULT_PROBE_RESERVE, DEFAULT_METRICS_CACHE_MS, DEFAULT_MAX_CONNECTIONS_PER_IP);
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
