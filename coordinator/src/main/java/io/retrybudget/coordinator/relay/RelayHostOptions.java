package io.retrybudget.coordinator.relay;

import io.retrybudget.relay.RelaySettings;
import java.util.Objects;
import java.util.function.DoubleSupplier;
import java.util.function.LongSupplier;

/**
 * How a {@link RelayHost} listens and what it bounds, fixed for its life. Built by {@link #builder()},
 * whose setters reject a wrong value at once and name it.
 *
 * @param host the address to listen on (default 127.0.0.1)
 * @param port the port (0: a free one, see {@link RelayHost#port()})
 * @param password what clients send with AUTH or HELLO (user {@code default}), or null for none
 * @param maxConnections client connections at once; one more is answered an error and closed
 * @param maxBudgets budgets the relay serves at once; a call for one more is answered an error
 * @param maxCommandBytes the largest request (budget.lua's text, sent by EVAL or SCRIPT LOAD, fits)
 * @param upstreamTimeoutMillis a call to Redis not answered within this is in doubt: sent again with its number
 * @param settings each budget's relay ({@link io.retrybudget.relay.BudgetRelay})
 * @param clock milliseconds, monotonic (the relay's time: leases, intervals, epochs)
 * @param random the relay's jitter and its id towards Redis
 */
public record RelayHostOptions(String host, int port, String password, int maxConnections, int maxBudgets,
    int maxCommandBytes, long upstreamTimeoutMillis, RelaySettings settings, LongSupplier clock, DoubleSupplier random) {
  /** Validates as the builder does, naming the wrong field. */
  public RelayHostOptions {
    Objects.requireNonNull(host, "host");
    Objects.requireNonNull(settings, "settings");
    Objects.requireNonNull(clock, "clock");
    Objects.requireNonNull(random, "random");
    Builder check = new Builder();
    check.port(port);
    check.maxConnections(maxConnections);
    check.maxBudgets(maxBudgets);
    check.maxCommandBytes(maxCommandBytes);
    check.upstreamTimeoutMillis(upstreamTimeoutMillis);
  }

  public static Builder builder() {
    return new Builder();
  }

  /** Validates every value as it is set, naming the field that is wrong. */
  public static final class Builder {
    private String host = "127.0.0.1";
    private int port;
    private String password;
    private int maxConnections = 10_000;
    private int maxBudgets = 1_000;
    private int maxCommandBytes = 256 * 1024;
    private long upstreamTimeoutMillis = 1_000;
    private RelaySettings settings = RelaySettings.defaults();
    private LongSupplier clock = () -> System.nanoTime() / 1_000_000;
    private DoubleSupplier random = new java.util.SplittableRandom()::nextDouble;

    private Builder() {}

    public Builder host(String host) {
      if (host == null || host.isBlank()) {
        throw new IllegalArgumentException("host must not be empty, was " + host);
      }
      this.host = host;
      return this;
    }

    /** In [0, 65535]; 0 (the default) takes a free port. */
    public Builder port(int port) {
      if (port < 0 || port > 65_535) {
        throw new IllegalArgumentException("port must be in [0, 65535], was " + port);
      }
      this.port = port;
      return this;
    }

    /** Null (the default) asks for none. */
    public Builder password(String password) {
      if (password != null && password.isEmpty()) {
        throw new IllegalArgumentException("password must be null (none) or not empty");
      }
      this.password = password;
      return this;
    }

    /** In [1, 1,000,000] (default 10,000). */
    public Builder maxConnections(int n) {
      if (n < 1 || n > 1_000_000) {
        throw new IllegalArgumentException("maxConnections must be in [1, 1000000], was " + n);
      }
      this.maxConnections = n;
      return this;
    }

    /** In [1, 100,000] (default 1,000). */
    public Builder maxBudgets(int n) {
      if (n < 1 || n > 100_000) {
        throw new IllegalArgumentException("maxBudgets must be in [1, 100000], was " + n);
      }
      this.maxBudgets = n;
      return this;
    }

    /** In [64 KiB, 16 MiB] (default 256 KiB): budget.lua's text is about 25 KiB. */
    public Builder maxCommandBytes(int n) {
      if (n < 64 * 1024 || n > 16 * 1024 * 1024) {
        throw new IllegalArgumentException("maxCommandBytes must be in [65536, 16777216], was " + n);
      }
      this.maxCommandBytes = n;
      return this;
    }

    /** In [10, 60,000] ms (default 1,000). */
    public Builder upstreamTimeoutMillis(long millis) {
      if (millis < 10 || millis > 60_000) {
        throw new IllegalArgumentException("upstreamTimeoutMillis must be in [10, 60000], was " + millis);
      }
      this.upstreamTimeoutMillis = millis;
      return this;
    }

    public Builder settings(RelaySettings settings) {
      this.settings = Objects.requireNonNull(settings, "settings");
      return this;
    }

    /** Milliseconds, monotonic (default System.nanoTime in ms). */
    public Builder clock(LongSupplier clock) {
      this.clock = Objects.requireNonNull(clock, "clock");
      return this;
    }

    public Builder random(DoubleSupplier random) {
      this.random = Objects.requireNonNull(random, "random");
      return this;
    }

    public RelayHostOptions build() {
      return new RelayHostOptions(host, port, password, maxConnections, maxBudgets, maxCommandBytes,
          upstreamTimeoutMillis, settings, clock, random);
    }
  }
}
