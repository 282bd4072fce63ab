package io.retrybudget.relay;

import io.retrybudget.budget.internal.FleetCount;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;

/**
 * The clients of one budget a relay has heard from: each one's last report number, so that a report
 * that arrives again (a transport's re-send, a reply lost and the call repeated) or late is applied at
 * most once, and how many clients there are, counted per fleet epoch as budget.lua counts them in
 * Redis ({@link FleetCount}: each client once per epoch it reports in, the estimate the larger of this
 * epoch's count and the last one's). Time comes in as an argument. Not thread-safe: the relay's host
 * runs each budget on one thread.
 */
public final class ReportLedger {
  /** What a report is to the ledger. */
  public enum Verdict {
    /** A report not seen before: apply it. */
    NEW,
    /** Its number is not above the client's last: already applied, or overtaken; apply nothing. */
    STALE
  }

  private static final class Entry {
    long lastSeq;
    long epoch;
  }

  private final Map<String, Entry> clients = new HashMap<>();
  private FleetCount fleet;
  private long sweptEpoch = Long.MIN_VALUE;

  /** Judges report {@code seq} of {@code clientId} at {@code nowMillis}; a new one is recorded and its client counted. */
  public Verdict report(String clientId, long seq, long nowMillis) {
    if (clientId == null || clientId.isEmpty()) {
      throw new IllegalArgumentException("clientId must not be empty");
    }
    if (seq <= 0) {
      throw new IllegalArgumentException("seq must be positive, was " + seq);
    }
    long epoch = FleetCount.epochOf(nowMillis);
    fleet = FleetCount.read(fleet, epoch);
    Entry e = clients.get(clientId);
    if (e == null) {
      e = new Entry();
      e.epoch = Long.MIN_VALUE;
      clients.put(clientId, e);
    } else if (seq <= e.lastSeq) {
      return Verdict.STALE;
    }
    e.lastSeq = seq;
    if (e.epoch != epoch) {
      // an entry stamped ahead of this clock (a clock that went back) is counted again, as budget.lua does
      e.epoch = epoch;
      fleet = fleet.counted();
    }
    return Verdict.NEW;
  }

  /** The clients of this budget: the larger of those counted in this epoch and in the one before. */
  public long clients(long nowMillis) {
    return FleetCount.read(fleet, FleetCount.epochOf(nowMillis)).estimate();
  }

  /** Entries kept (for tests and diagnostics). */
  public int entries() {
    return clients.size();
  }

  /**
   * Forgets clients quiet for two epochs or more (their numbers no longer matter: a client that comes
   * back after that long starts as new, and its numbers only grow). Once per epoch does the whole
   * table; the host calls it from its timer, off the clients' path. Returns how many were dropped.
   */
  public int sweep(long nowMillis) {
    long epoch = FleetCount.epochOf(nowMillis);
    if (epoch == sweptEpoch) {
      return 0;
    }
    sweptEpoch = epoch;
    int dropped = 0;
    for (Iterator<Entry> it = clients.values().iterator(); it.hasNext(); ) {
      if (it.next().epoch < epoch - 2) {
        it.remove();
        dropped++;
      }
    }
    return dropped;
  }
}
