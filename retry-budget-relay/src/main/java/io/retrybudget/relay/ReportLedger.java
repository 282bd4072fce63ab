package io.retrybudget.relay;

import io.retrybudget.budget.internal.FleetCount;
import io.retrybudget.budget.redis.protocol.CountsInDoubt;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The clients of one budget a relay has heard from: each one's last report number, so that a report
 * that arrives again (a transport's re-send, a reply lost and the call repeated) or late is applied at
 * most once, and how many clients there are, counted per fleet epoch as budget.lua counts them in
 * Redis ({@link FleetCount}: each client once per epoch it reports in, the estimate the clients of this
 * epoch and the last one together). Time comes in as an argument. Not thread-safe: the relay's host
 * runs each budget on one thread.
 *
 * <p>Bounded: it keeps at most {@code maxClients} clients. One more evicts the client that reported
 * least recently, so a caller that invents ids cannot grow the record, and a live client that reports
 * more often than {@code maxClients} invented ids arrive keeps its numbers. An evicted client that
 * reports again starts as new (its numbers only grow, so only a late copy of a report it had already
 * sent could then be applied again), and is counted again in the epoch: the count is capped at
 * {@code maxClients}, as no more clients than that are ever recorded at once.
 */
public final class ReportLedger {
  /** What a report is to the ledger. */
  public enum Verdict {
    /** A report not seen before: apply it. */
    NEW,
    /** Its number is not above the client's last: already applied, or overtaken; apply nothing. */
    STALE,
    /**
     * A report not seen before, carrying the counts of a call of unknown fate that never reached this
     * relay (the client's entry held with a last number below it: {@link CountsInDoubt#applies}): apply both.
     */
    NEW_AND_CARRIED
  }

  private static final class Entry {
    long lastSeq;
    long epoch;
    long session; // the connection its last report came on
  }

  /** The default bound: four times the 25,000 clients a relay is planned for. */
  public static final int DEFAULT_MAX_CLIENTS = 100_000;

  private final int maxClients;
  private final Map<String, Entry> clients;
  private FleetCount fleet;
  private long sweptEpoch = Long.MIN_VALUE;
  private long evicted;

  /** A ledger of at most {@link #DEFAULT_MAX_CLIENTS} clients. */
  public ReportLedger() {
    this(DEFAULT_MAX_CLIENTS);
  }

  /** A ledger of at most {@code maxClients} clients (at least 1). */
  public ReportLedger(int maxClients) {
    if (maxClients < 1) {
      throw new IllegalArgumentException("maxClients must be at least 1, was " + maxClients);
    }
    this.maxClients = maxClients;
    // in access order: a report moves its client to the end, the eldest is the one quiet the longest
    this.clients = new LinkedHashMap<>(16, 0.75f, true) {
      @Override
      protected boolean removeEldestEntry(Map.Entry<String, Entry> eldest) {
        if (size() <= ReportLedger.this.maxClients) {
          return false;
        }
        evicted++;
        return true;
      }
    };
  }

  /** Judges report {@code seq} of {@code clientId} at {@code nowMillis}; a new one is recorded and its client counted. */
  public Verdict report(String clientId, long seq, long nowMillis) {
    return report(clientId, seq, null, 0, nowMillis);
  }

  /**
   * As {@link #report(String, long, long)}, for a report that came on connection {@code session} (an id
   * unique in this relay) carrying {@code carried} (or null): its counts are to be added too
   * ({@link Verdict#NEW_AND_CARRIED}) only when the client's entry is held with a last number below
   * theirs ({@link CountsInDoubt#applies}, as budget.lua adds them) and its last report came on this
   * same connection. A client's calls on one connection arrive in the order it numbered them, so the
   * call in doubt never ran here; on another connection it may have gone to another relay process
   * behind the same address (a Service of several pods), whose ledger is not this one. Else they are
   * dropped, the safe side: without an entry (a client new to this relay, evicted, swept, a relay
   * restarted) or after a reconnect.
   */
  public Verdict report(String clientId, long seq, CountsInDoubt carried, long session, long nowMillis) {
    if (clientId == null || clientId.isEmpty()) {
      throw new IllegalArgumentException("clientId must not be empty");
    }
    if (seq <= 0) {
      throw new IllegalArgumentException("seq must be positive, was " + seq);
    }
    long epoch = FleetCount.epochOf(nowMillis);
    fleet = FleetCount.read(fleet, epoch);
    Entry e = clients.get(clientId);
    boolean carries = carried != null && e != null && e.session == session && carried.applies(e.lastSeq, seq);
    if (e == null) {
      e = new Entry();
      e.epoch = Long.MIN_VALUE;
      clients.put(clientId, e);
    } else if (seq <= e.lastSeq) {
      return Verdict.STALE;
    }
    e.lastSeq = seq;
    e.session = session;
    if (e.epoch != epoch) {
      // an entry stamped ahead of this clock (a clock that went back) is counted again, as budget.lua does
      boolean fresh = FleetCount.newToUnion(e.epoch == Long.MIN_VALUE ? null : e.epoch, epoch);
      e.epoch = epoch;
      fleet = fleet.counted(fresh);
    }
    return carries ? Verdict.NEW_AND_CARRIED : Verdict.NEW;
  }

  /**
   * The clients of this budget: those counted in this epoch and in the one before together, at most
   * {@code maxClients}.
   */
  public long clients(long nowMillis) {
    return Math.min(maxClients, FleetCount.read(fleet, FleetCount.epochOf(nowMillis)).estimate());
  }

  /** Entries kept (for tests and diagnostics); never more than {@code maxClients}. */
  public int entries() {
    return clients.size();
  }

  /** Clients evicted so far to keep the bound (for diagnostics: a steady rise means ids are invented). */
  public long evicted() {
    return evicted;
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
