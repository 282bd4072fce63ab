package io.retrybudget.relay;

/**
 * What a relay is built with, fixed for its life. Built by {@link #builder()}, whose setters reject a
 * wrong value at once and name it.
 *
 * @param clientCallsPerSecond the calls a second this relay takes from the clients of one budget (its
 *     clients stretch their flushes and sample their permit asks to stay under it, as they stay under
 *     a budget's {@code max_calls_per_s} when they talk to Redis)
 * @param minUpstreamMillis the shortest interval between two calls of one budget to Redis
 * @param maxUpstreamMillis the longest: Redis's counts lag the relay's by at most this
 * @param upstreamShare the share of a budget's {@code max_calls_per_s} its relays use together (the
 *     rest is left to clients that talk to Redis directly)
 * @param permitLifeMillis how long a permit drawn from Redis and not handed out yet is kept
 * @param failuresToCutOff calls to Redis in a row that fail before the relay decides from its own
 *     paced share ("cut off")
 * @param maxClients the client ids one budget's relay records at most ({@link ReportLedger}); one more
 *     evicts the one quiet the longest, so a caller that invents ids cannot grow the relay's memory
 */
public record RelaySettings(int clientCallsPerSecond, long minUpstreamMillis, long maxUpstreamMillis,
    double upstreamShare, long permitLifeMillis, int failuresToCutOff, int maxClients) {

  /** Validates as the builder does, naming the wrong field. */
  public RelaySettings {
    Builder check = new Builder();
    check.clientCallsPerSecond(clientCallsPerSecond);
    check.upstreamMillis(minUpstreamMillis, maxUpstreamMillis);
    check.upstreamShare(upstreamShare);
    check.permitLifeMillis(permitLifeMillis);
    check.failuresToCutOff(failuresToCutOff);
    check.maxClients(maxClients);
  }

  /**
   * The defaults: 100,000 client calls a second, Redis every 100 ms to 500 ms, half the ceiling, 1 s
   * permits, 2 failures, 100,000 client ids a budget.
   */
  public static RelaySettings defaults() {
    return builder().build();
  }

  public static Builder builder() {
    return new Builder();
  }

  /** Validates every value as it is set, naming the field that is wrong. */
  public static final class Builder {
    private int clientCallsPerSecond = 100_000;
    private long minUpstreamMillis = 100;
    private long maxUpstreamMillis = 500;
    private double upstreamShare = 0.5;
    private long permitLifeMillis = 1_000;
    private int failuresToCutOff = 2;
    private int maxClients = ReportLedger.DEFAULT_MAX_CLIENTS;

    private Builder() {}

    /** Calls a second the relay takes from one budget's clients, in [10, 10,000,000] (default 100,000). */
    public Builder clientCallsPerSecond(int calls) {
      if (calls < 10 || calls > 10_000_000) {
        throw new IllegalArgumentException("clientCallsPerSecond must be in [10, 10000000], was " + calls);
      }
      this.clientCallsPerSecond = calls;
      return this;
    }

    /**
     * The interval between a budget's calls to Redis, within [min, max] ms (default 100 to 500): the
     * relays of a budget stretch it so that together they use {@link #upstreamShare} of its ceiling.
     */
    public Builder upstreamMillis(long min, long max) {
      if (min < 10 || min > 1_000) {
        throw new IllegalArgumentException("minUpstreamMillis must be in [10, 1000], was " + min);
      }
      if (max < min || max > 1_000) {
        throw new IllegalArgumentException("maxUpstreamMillis must be in [minUpstreamMillis, 1000], was " + max);
      }
      this.minUpstreamMillis = min;
      this.maxUpstreamMillis = max;
      return this;
    }

    /** The share of a budget's call ceiling its relays use together, in (0, 1] (default 0.5). */
    public Builder upstreamShare(double share) {
      if (!(share > 0 && share <= 1)) {
        throw new IllegalArgumentException("upstreamShare must be in (0, 1], was " + share);
      }
      this.upstreamShare = share;
      return this;
    }

    /** How long a drawn permit is kept for the relay's clients, in [100, 10,000] ms (default 1,000). */
    public Builder permitLifeMillis(long millis) {
      if (millis < 100 || millis > 10_000) {
        throw new IllegalArgumentException("permitLifeMillis must be in [100, 10000], was " + millis);
      }
      this.permitLifeMillis = millis;
      return this;
    }

    /** Failed calls to Redis in a row before the relay decides alone, in [1, 10] (default 2). */
    public Builder failuresToCutOff(int failures) {
      if (failures < 1 || failures > 10) {
        throw new IllegalArgumentException("failuresToCutOff must be in [1, 10], was " + failures);
      }
      this.failuresToCutOff = failures;
      return this;
    }

    /**
     * Client ids one budget's relay records at most, in [100, 10,000,000] (default 100,000, about
     * 200 bytes each): the least recently heard is evicted past it.
     */
    public Builder maxClients(int clients) {
      if (clients < 100 || clients > 10_000_000) {
        throw new IllegalArgumentException("maxClients must be in [100, 10000000], was " + clients);
      }
      this.maxClients = clients;
      return this;
    }

    public RelaySettings build() {
      return new RelaySettings(clientCallsPerSecond, minUpstreamMillis, maxUpstreamMillis, upstreamShare,
          permitLifeMillis, failuresToCutOff, maxClients);
    }
  }
}
