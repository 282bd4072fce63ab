package io.retrybudget.coordinator;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.logging.Filter;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * A bound on what the Redis client logs: Lettuce logs a WARNING with a stack trace for every command
 * it refuses or fails (a full queue, a lost connection), thousands a second under load, which would
 * fill a node's disk. Of the records at WARNING or above of one logger and one kind (the exception's
 * type, else the message without its numbers), one passes every {@link #EVERY_SECONDS} seconds; the
 * next one that passes says how many were suppressed meanwhile. Records below WARNING pass.
 */
final class LettuceLogThrottle implements Filter {
  static final long EVERY_SECONDS = 10;
  /** Most kinds tracked; records of further kinds share one. */
  static final int MAX_KINDS = 64;
  /** The Lettuce loggers that log per command or per connection event. */
  static final List<String> LOGGERS = List.of(
      "io.lettuce.core.protocol.CommandHandler",
      "io.lettuce.core.protocol.DefaultEndpoint",
      "io.lettuce.core.protocol.ConnectionWatchdog",
      "io.lettuce.core.protocol.ReconnectionHandler",
      "io.lettuce.core.protocol.CommandExpiryWriter",
      "io.lettuce.core.RedisChannelHandler",
      "io.lettuce.core.RedisPublisher",
      "io.lettuce.core.cluster.ClusterNodeEndpoint",
      "io.lettuce.core.cluster.ClusterDistributionChannelWriter",
      "io.lettuce.core.cluster.topology.ClusterTopologyRefresh",
      "io.lettuce.core.cluster.ClusterTopologyRefreshScheduler");
  /** Held so that the filtered loggers are never collected (and their filters lost). */
  private static final List<Logger> INSTALLED = new ArrayList<>();

  private final Filter previous;
  private final LongSupplier nanoClock;
  private final long everyNanos;
  private final Map<String, long[]> kinds = new HashMap<>(); // kind -> {last passed at, suppressed since}

  LettuceLogThrottle(Filter previous, LongSupplier nanoClock, long everySeconds) {
    this.previous = previous;
    this.nanoClock = nanoClock;
    this.everyNanos = TimeUnit.SECONDS.toNanos(everySeconds);
  }

  /** Puts the throttle on every logger of {@link #LOGGERS}, once per process. */
  static synchronized void install() {
    if (!INSTALLED.isEmpty()) {
      return;
    }
    for (String name : LOGGERS) {
      Logger logger = Logger.getLogger(name);
      logger.setFilter(new LettuceLogThrottle(logger.getFilter(), System::nanoTime, EVERY_SECONDS));
      INSTALLED.add(logger);
    }
  }

  @Override
  public boolean isLoggable(LogRecord r) {
    if (previous != null && !previous.isLoggable(r)) {
      return false;
    }
    if (r.getLevel().intValue() < Level.WARNING.intValue()) {
      return true;
    }
    long now = nanoClock.getAsLong();
    long suppressed;
    synchronized (kinds) {
      String kind = kind(r);
      long[] state = kinds.get(kind);
      if (state == null) {
        if (kinds.size() >= MAX_KINDS) {
          // kinds whose period is over are forgotten (a record of theirs would pass anyway; what they
          // suppressed since their last record goes untold), so a long-lived process still logs the
          // first record of a new kind
          kinds.values().removeIf(k -> now - k[0] >= everyNanos);
        }
        if (kinds.size() >= MAX_KINDS) {
          kind = "(other)";
          state = kinds.get(kind);
        }
        if (state == null) {
          kinds.put(kind, new long[] {now, 0});
          return true;
        }
      }
      if (now - state[0] < everyNanos) {
        state[1]++;
        return false;
      }
      suppressed = state[1];
      state[0] = now;
      state[1] = 0;
    }
    if (suppressed > 0) {
      r.setMessage("(" + suppressed + " more like this were not logged since the last one) " + r.getMessage());
    }
    return true;
  }

  static String kind(LogRecord r) {
    String what = r.getThrown() != null
        ? r.getThrown().getClass().getName() + ": " + r.getThrown().getMessage()
        : r.getMessage();
    String text = what == null ? "" : what.replaceAll("0x[0-9a-fA-F]+|[0-9]+", "#");
    return r.getLoggerName() + " " + (text.length() > 120 ? text.substring(0, 120) : text);
  }
}
