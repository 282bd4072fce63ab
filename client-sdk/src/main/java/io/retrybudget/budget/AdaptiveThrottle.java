package io.retrybudget.budget;

import java.time.Duration;
import java.util.Objects;

/**
 * Client-side adaptive throttling (Google SRE book, "Handling Overload"): over a sliding window a
 * client counts the attempts it made ({@code requests}) and those the backend accepted
 * ({@code accepts}: answered with success or with the request's own non-retryable answer), and
 * refuses an extra attempt with probability
 * {@code max(0, (requests - K * accepts) / (requests + 1))}.
 *
 * <p>It tells an outage from random failures where a fixed-ratio budget cannot: when the backend
 * accepts nothing the probability approaches 1 and retries stop whatever a budget would allow;
 * while it accepts more than {@code 1/K} of the attempts (K = 2: more than half) it is 0 and
 * retries flow. Pure policy: time ({@code nowNanos}, any monotonic nanosecond clock) and the
 * random draw are arguments, so tests assert exact values. Thread-safe (one short lock).
 *
 * <p>Refused attempts count as {@code requests} too, as in the SRE formula ({@link #refuse}). One
 * addition: nothing is refused while the window holds fewer than {@code minRequests} requests
 * (default 5), so one unlucky failure at the start (p = 1/2 after a single failed request) does not
 * throttle a healthy client; a closed throttle lets that many more through per window.
 */
public final class AdaptiveThrottle {
  private final Config config;
  private final long bucketNanos;
  private final long[] requests;
  private final long[] accepts;
  private long requestSum;
  private long acceptSum;
  /** Absolute bucket number ({@code floorDiv(now, bucketNanos)}) the ring's newest slot holds. */
  private long newest;
  private boolean started;

  public AdaptiveThrottle(Config config) {
    this.config = Objects.requireNonNull(config, "config must not be null");
    this.bucketNanos = config.window.toNanos() / config.buckets;
    this.requests = new long[config.buckets];
    this.accepts = new long[config.buckets];
  }

  public Config config() {
    return config;
  }

  /**
   * The SRE formula on its own: {@code max(0, (requests - k * accepts) / (requests + 1))}, in
   * [0, 1) for non-negative counts.
   */
  public static double rejectProbability(long requests, long accepts, double k) {
    if (requests <= 0) {
      return 0.0;
    }
    double p = (requests - k * Math.max(0, accepts)) / (requests + 1.0);
    return p <= 0.0 ? 0.0 : Math.min(p, 1.0);
  }

  /** One attempt was sent. */
  public synchronized void recordRequest(long nowNanos) {
    int i = slot(nowNanos);
    requests[i]++;
    requestSum++;
  }

  /** One attempt was accepted by the backend. */
  public synchronized void recordAccept(long nowNanos) {
    int i = slot(nowNanos);
    accepts[i]++;
    acceptSum++;
  }

  /** {@code requests} attempts sent, of which {@code accepts} were accepted (counts of one call, say). */
  public synchronized void record(long nowNanos, long requests, long accepts) {
    if (requests < 0 || accepts < 0) {
      throw new IllegalArgumentException("counts must not be negative, were requests=" + requests + " accepts=" + accepts);
    }
    int i = slot(nowNanos);
    this.requests[i] += requests;
    this.accepts[i] += accepts;
    requestSum += requests;
    acceptSum += accepts;
  }

  /** The probability an extra attempt asked now is refused. */
  public synchronized double rejectProbability(long nowNanos) {
    slot(nowNanos);
    return probability();
  }

  private double probability() {
    return requestSum < config.minRequests ? 0.0 : rejectProbability(requestSum, acceptSum, config.k);
  }

  /**
   * Decides one extra attempt: refused when {@code uniform} (a draw from [0, 1)) falls below the
   * reject probability. A refused attempt is counted as a request (the SRE formula counts what the
   * client wanted to send); an allowed one is counted when it is really sent
   * ({@link #recordRequest}).
   *
   * @return true when the attempt is refused
   */
  public synchronized boolean refuse(long nowNanos, double uniform) {
    int i = slot(nowNanos);
    boolean refused = uniform < probability();
    if (refused) {
      requests[i]++;
      requestSum++;
    }
    return refused;
  }

  /** The counts in the window now. */
  public synchronized Snapshot snapshot(long nowNanos) {
    slot(nowNanos);
    return new Snapshot(requestSum, acceptSum, probability());
  }

  /** Moves the window to {@code nowNanos} (clearing the buckets that left it) and returns its slot. */
  private int slot(long nowNanos) {
    long bucket = Math.floorDiv(nowNanos, bucketNanos);
    if (!started) {
      started = true;
      newest = bucket;
    } else if (bucket > newest) {
      long steps = bucket - newest;
      if (steps >= requests.length) {
        java.util.Arrays.fill(requests, 0);
        java.util.Arrays.fill(accepts, 0);
        requestSum = 0;
        acceptSum = 0;
      } else {
        for (long b = newest + 1; b <= bucket; b++) {
          int i = (int) Math.floorMod(b, (long) requests.length);
          requestSum -= requests[i];
          acceptSum -= accepts[i];
          requests[i] = 0;
          accepts[i] = 0;
        }
      }
      newest = bucket;
    }
    // a clock that stepped back counts into the newest bucket: nothing is lost or double-cleared
    return (int) Math.floorMod(newest, (long) requests.length);
  }

  /** Requests and accepts in the window, and the reject probability they give. */
  public record Snapshot(long requests, long accepts, double rejectProbability) {}

  /** Immutable configuration; {@link #defaults()}: K 2, window 10 s in 10 buckets, at least 5 requests. */
  public static final class Config {
    private final double k;
    private final Duration window;
    private final int buckets;
    private final int minRequests;

    private Config(Builder b) {
      this.k = b.k;
      this.window = b.window;
      this.buckets = b.buckets;
      this.minRequests = b.minRequests;
    }

    public int minRequests() {
      return minRequests;
    }

    public static Config defaults() {
      return builder().build();
    }

    public static Builder builder() {
      return new Builder();
    }

    public double k() {
      return k;
    }

    public Duration window() {
      return window;
    }

    public int buckets() {
      return buckets;
    }

    @Override
    public String toString() {
      return "AdaptiveThrottle.Config{k=" + k + ", window=" + window + ", buckets=" + buckets + ", minRequests="
          + minRequests + "}";
    }
  }

  public static final class Builder {
    private double k = 2.0;
    private Duration window = Duration.ofSeconds(10);
    private int buckets = 10;
    private int minRequests = 5;

    private Builder() {}

    /** Nothing is refused while the window holds fewer requests than this (0 to 1,000,000). */
    public Builder minRequests(int minRequests) {
      if (minRequests < 0 || minRequests > 1_000_000) {
        throw new IllegalArgumentException("min_requests must be in [0, 1000000], was " + minRequests);
      }
      this.minRequests = minRequests;
      return this;
    }

    /**
     * The multiplier K: retries are refused once the backend accepts fewer than 1/K of the
     * attempts. Lower is more aggressive; SRE's usual value is 2. At least 1, at most 100.
     */
    public Builder k(double k) {
      if (!(k >= 1.0 && k <= 100.0)) {
        throw new IllegalArgumentException("k must be in [1, 100], was " + k);
      }
      this.k = k;
      return this;
    }

    /**
     * The sliding window the counts cover (100 ms to 1 h). After an outage begins, retries keep
     * flowing (within the fleet budget) until the failures fill about {@code 1 - 1/K} of it.
     */
    public Builder window(Duration window) {
      Objects.requireNonNull(window, "window must not be null");
      if (window.compareTo(Duration.ofMillis(100)) < 0 || window.compareTo(Duration.ofHours(1)) > 0) {
        throw new IllegalArgumentException("window must be in [100ms, 1h], was " + window);
      }
      this.window = window;
      return this;
    }

    /** How many buckets the window is counted in (1 to 1,000). */
    public Builder buckets(int buckets) {
      if (buckets < 1 || buckets > 1000) {
        throw new IllegalArgumentException("buckets must be in [1, 1000], was " + buckets);
      }
      this.buckets = buckets;
      return this;
    }

    public Config build() {
      if (window.toNanos() / buckets < 1_000_000L) {
        throw new IllegalArgumentException("window / buckets must be at least 1 ms, was window=" + window
            + " buckets=" + buckets);
      }
      return new Config(this);
    }
  }
}
