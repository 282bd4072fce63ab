package io.retrybudget.coordinator.relay;

import java.util.function.Consumer;
import java.util.function.LongSupplier;

/**
 * The scripts a relay refused because they are not its own budget.lua ({@link RelaySession}): a client
 * of another SDK version, whose budget.lua differs. Each is refused, so that client goes to its next
 * way (another relay, Redis directly if its route allows it) or decides from its fallback; the operator
 * is told at most once a minute, with how many were refused and the last one's SHA, instead of a line
 * for every call. Not thread-safe: run on the relay's event loop.
 */
final class ForeignScripts {
  static final long LOG_EVERY_MILLIS = 60_000;

  private final LongSupplier clock;
  private final Consumer<String> log;
  private final String runs; // the SHA-1 of the budget.lua this relay runs
  private long refused;
  private long sinceLog;
  private long loggedAt;
  private boolean logged;

  /** {@code clock} in milliseconds, monotonic; {@code log} takes each warning; {@code runs}: its budget.lua's SHA-1. */
  ForeignScripts(LongSupplier clock, Consumer<String> log, String runs) {
    this.clock = clock;
    this.log = log;
    this.runs = runs;
  }

  /** A client sent a script whose SHA-1 is {@code sha}, refused. */
  void refused(String sha) {
    refused++;
    sinceLog++;
    long now = clock.getAsLong();
    if (logged && now - loggedAt < LOG_EVERY_MILLIS) {
      return;
    }
    log.accept("refused " + sinceLog + " call(s) of a script that is not this relay's budget.lua"
        + (logged ? " in the last minute" : "") + " (the last: sha " + sha + "; this relay runs "
        + runs + "): those clients run another version of the SDK; relays and SDKs must"
        + " run the same one, and until then such clients go to Redis directly if their route allows it,"
        + " else decide from their fallback (docs/RELAY.md, \"Upgrading\")");
    logged = true;
    loggedAt = now;
    sinceLog = 0;
  }

  /** Calls refused since the relay started. */
  long refused() {
    return refused;
  }
}
