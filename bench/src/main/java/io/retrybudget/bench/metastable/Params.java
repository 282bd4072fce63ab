package io.retrybudget.bench.metastable;

import java.time.Duration;

/**
 * The backend and the fleet of one run. Capacity is {@code workers / serviceMillis} requests per
 * millisecond; the fleet offers {@code load} of it as first attempts.
 *
 * @param workers       K: requests served at once
 * @param serviceMillis S: how long one request holds its worker (a timer, not CPU)
 * @param queueLimit    requests that may wait for a worker; more are answered 503 at once
 * @param attemptTimeoutMillis T: the client's per-attempt timeout
 * @param load          F as a share of capacity
 * @param clients       clients of each arm in the whole fleet
 * @param maxAttempts   attempts per call, the first included
 * @param backoffBaseMillis full jitter's base; {@code backoffCapMillis} its cap
 */
record Params(int workers, int serviceMillis, int queueLimit, int attemptTimeoutMillis, double load, int clients,
    int maxAttempts, int backoffBaseMillis, int backoffCapMillis) {

  Params {
    check("workers", workers, 1, 10_000);
    check("serviceMillis", serviceMillis, 1, 60_000);
    check("queueLimit", queueLimit, 0, 1_000_000);
    check("attemptTimeoutMillis", attemptTimeoutMillis, 1, 600_000);
    check("clients", clients, 1, 100_000);
    check("maxAttempts", maxAttempts, 1, 10);
    check("backoffBaseMillis", backoffBaseMillis, 1, 60_000);
    check("backoffCapMillis", backoffCapMillis, backoffBaseMillis, 600_000);
    if (!(load > 0 && load < 1)) {
      throw new IllegalArgumentException("load must be in (0, 1), was " + load);
    }
  }

  /** The tuned defaults (bench/metastable/README.md says why each value). */
  static Params defaults() {
    return new Params(30, 100, 320, 1000, 0.7, 300, 3, 50, 1000);
  }

  private static void check(String name, int value, int min, int max) {
    if (value < min || value > max) {
      throw new IllegalArgumentException(name + " must be in [" + min + ", " + max + "], was " + value);
    }
  }

  Params withClients(int n) {
    return new Params(workers, serviceMillis, queueLimit, attemptTimeoutMillis, load, n, maxAttempts,
        backoffBaseMillis, backoffCapMillis);
  }

  Params withAttemptTimeout(int millis) {
    return new Params(workers, serviceMillis, queueLimit, millis, load, clients, maxAttempts, backoffBaseMillis,
        backoffCapMillis);
  }

  /** The parameters on one line, for a child process's command line ({@link #decode}). */
  String encode() {
    return workers + ":" + serviceMillis + ":" + queueLimit + ":" + attemptTimeoutMillis + ":" + load + ":" + clients
        + ":" + maxAttempts + ":" + backoffBaseMillis + ":" + backoffCapMillis;
  }

  static Params decode(String s) {
    String[] f = s.split(":");
    if (f.length != 9) {
      throw new IllegalArgumentException("params must have 9 fields separated by ':', was " + s);
    }
    return new Params(Integer.parseInt(f[0]), Integer.parseInt(f[1]), Integer.parseInt(f[2]), Integer.parseInt(f[3]),
        Double.parseDouble(f[4]), Integer.parseInt(f[5]), Integer.parseInt(f[6]), Integer.parseInt(f[7]),
        Integer.parseInt(f[8]));
  }

  /** Requests per second the backend serves when healthy. */
  double capacityPerSecond() {
    return workers * 1000.0 / serviceMillis;
  }

  /** First attempts per second the fleet offers outside a load spike. */
  double firstRate() {
    return load * capacityPerSecond();
  }

  Duration attemptTimeout() {
    return Duration.ofMillis(attemptTimeoutMillis);
  }

  @Override
  public String toString() {
    return "K=" + workers + " S=" + serviceMillis + "ms queue=" + queueLimit + " T=" + attemptTimeoutMillis
        + "ms F=" + Math.round(load * 100) + "% of " + Math.round(capacityPerSecond()) + "/s clients=" + clients
        + " attempts=" + maxAttempts + " backoff=full jitter " + backoffBaseMillis + ".." + backoffCapMillis + "ms";
  }
}
