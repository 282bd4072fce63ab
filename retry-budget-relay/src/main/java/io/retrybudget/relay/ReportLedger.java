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
     * A report not seen before, carrying the counts of calls of unknown fate this relay never applied
     * ({@link #report(String, long, java.util.List, long, long)}): apply it and them.
     */
    NEW_AND_CARRIED
  }

  private static final class Entry {
    long lastSeq;
    long epoch;
    long seen; // bit i: number lastSeq - i was applied here (a report, or carried counts)
    boolean trusted; // made with no eviction near: its record is the client's whole history here
    Link link; // the connection its last report came on

    /** Whether number {@code n}'s counts were applied here, as far as the record tells (64 numbers back). */
    boolean seen(long n) {
      if (n > lastSeq) {
        return false;
      }
      long back = lastSeq - n;
      return back >= 64 || (seen >>> back & 1) != 0;
    }

    void mark(long n) {
      long back = lastSeq - n;
      if (back >= 0 && back < 64) {
        seen |= 1L << back;
      }
    }
  }

  /** The connection an entry's last report came on: the relay's id for it, and the first number seen on it. */
  private record Link(long session, long first) {}

  /**
   * How a report arrived: on the relay's connection {@code session} (an id unique in this relay; 0: not
   * known, and then no carried count is added), with what the client told of that connection (budget.lua's ARGV[13] from an SDK that talks to
   * relays, {@code ConnectionFloor}): the lowest number it knows to have gone, if at all, on this same
   * connection ({@code first}; 0: not told).
   */
  public record Arrival(long session, long first) {
    public Arrival {
      if (first < 0) {
        throw new IllegalArgumentException("first must be positive, or 0 when not told, was " + first);
      }
    }

    /** On connection {@code session}, the client telling nothing of it. */
    public static Arrival on(long session) {
      return new Arrival(session, 0);
    }
  }

  /**
   * A report judged: its verdict, and the carried counts to add with it (0 unless
   * {@link Verdict#NEW_AND_CARRIED}).
   */
  public record Judged(Verdict verdict, long requests, long denied, long retries) {}

  /**
   * How long after an eviction a new entry adds no carried counts: twice the SDK's 60 s of counts in
   * doubt ({@code CallsInDoubt.KEPT_MILLIS}).
   */
  static final long DISTRUST_AFTER_EVICTION_MILLIS = 120_000;

  /** The default bound: four times the 25,000 clients a relay is planned for. */
  public static final int DEFAULT_MAX_CLIENTS = 100_000;

  private final int maxClients;
  private final Map<String, Entry> clients;
  private FleetCount fleet;
  private long sweptEpoch = Long.MIN_VALUE;
  private long evicted;
  private long lastEvictionAt = Long.MIN_VALUE; // when a report last made the ledger evict a client

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
    return report(clientId, seq, java.util.List.of(), 0, nowMillis).verdict();
  }

  /**
   * As {@link #report(String, long, long)}, for a report that came on connection {@code session} (an id
   * unique in this relay) carrying {@code carried}: the counts of the client's calls of unknown fate on
   * this way. Each is added ({@link Verdict#NEW_AND_CARRIED}) only if this entry never applied its call:
   * the entry is held (and was not made just after an eviction), the report came on the same connection
   * as the entry's last one, the call is numbered after the first report seen on that connection, and
   * its number is not in the record of the last 64 applied here. Why that is enough: a number at or
   * below the entry's last is answered stale, never applied, so every number the entry applied is at or
   * below its connection's first, marked in the record, or more than 64 back; and a call numbered after
   * a connection's first was sent on that connection or never, so it cannot have run at another relay
   * process behind the same address (a Service of several pods, each with its own ledger). This is
   * finer than budget.lua's rule (a last number below the call's): a call that timed out unwritten
   * while a later one ran is still added. Else they are dropped, the safe side: without an entry (a
   * client new to this relay, evicted, swept, a relay restarted), after a reconnect, or more than 64
   * numbers back.
   */
  public Judged report(String clientId, long seq, java.util.List<CountsInDoubt> carried, long session, long nowMillis) {
    return report(clientId, seq, carried, Arrival.on(session), nowMillis);
  }

  /**
   * As {@link #report(String, long, java.util.List, long, long)}, the client having told of its
   * connection ({@link Arrival}): a carried call numbered at or below the first report seen on the
   * connection is added too when it is numbered at or above the client's {@code first}. Why that is
   * safe: the client's floor holds for every call but the first it sends on a connection, which may
   * tell the floor of the connection before (ConnectionFloor in the SDK); that call is the first of its
   * client's numbers to arrive on the connection or is answered stale (a later number arrived first),
   * and neither adds anything here (the rule above: the same connection as the last report). The calls
   * of a budget's first moments that timed out unwritten while later ones went ahead are so recovered.
   */
  public Judged report(String clientId, long seq, java.util.List<CountsInDoubt> carried, Arrival arrival, long nowMillis) {
    long session = arrival.session();
    if (clientId == null || clientId.isEmpty()) {
      throw new IllegalArgumentException("clientId must not be empty");
    }
    if (seq <= 0) {
      throw new IllegalArgumentException("seq must be positive, was " + seq);
    }
    long epoch = FleetCount.epochOf(nowMillis);
    fleet = FleetCount.read(fleet, epoch);
    Entry e = clients.get(clientId);
    if (e != null && seq <= e.lastSeq) {
      return new Judged(Verdict.STALE, 0, 0, 0);
    }
    long requests = 0;
    long denied = 0;
    long retries = 0;
    java.util.List<CountsInDoubt> added = new java.util.ArrayList<>();
    if (e != null && e.trusted && session != 0 && e.link.session() == session) { // 0: a connection not known
      long floor = e.link.first(); // numbers at or below it may have gone on an earlier connection
      if (arrival.first() > 0) {
        floor = Math.min(floor, arrival.first() - 1); // but not the client's own floor on this connection
      }
      for (CountsInDoubt d : carried) {
        if (d.seq() > floor && d.seq() < seq && !e.seen(d.seq()) && !added.contains(d)) {
          added.add(d);
          requests += d.requests();
          denied += d.denied();
          retries += d.retries();
        }
      }
    }
    if (e == null) {
      e = new Entry();
      e.epoch = Long.MIN_VALUE;
      e.lastSeq = seq;
      // a client evicted lately may come back through a late copy of an older call: what its lost
      // entry applied is unknown, so this one adds no carried counts (a copy is never more than the
      // SDK's 60 s of counts in doubt late when it matters)
      e.trusted = lastEvictionAt == Long.MIN_VALUE || nowMillis - lastEvictionAt > DISTRUST_AFTER_EVICTION_MILLIS;
      long before = evicted;
      clients.put(clientId, e);
      if (evicted != before) {
        lastEvictionAt = nowMillis;
      }
    }
    if (e.link == null || e.link.session() != session || e.seen == 0) {
      e.link = new Link(session, seq);
    }
    long shift = seq - e.lastSeq;
    e.seen = shift >= 64 ? 0 : e.seen << shift;
    e.lastSeq = seq;
    e.seen |= 1;
    for (CountsInDoubt d : added) {
      e.mark(d.seq());
    }
    if (e.epoch != epoch) {
      // an entry stamped ahead of this clock (a clock that went back) is counted again, as budget.lua does
      boolean fresh = FleetCount.newToUnion(e.epoch == Long.MIN_VALUE ? null : e.epoch, epoch);
      e.epoch = epoch;
      fleet = fleet.counted(fresh);
    }
    return added.isEmpty() ? new Judged(Verdict.NEW, 0, 0, 0) : new Judged(Verdict.NEW_AND_CARRIED, requests, denied, retries);
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
