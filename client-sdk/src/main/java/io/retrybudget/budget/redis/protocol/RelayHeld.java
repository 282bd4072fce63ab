package io.retrybudget.budget.redis.protocol;

import java.util.ArrayList;
import java.util.List;

/**
 * A budget's counts that relays took and Redis may not have applied yet, kept so that a relay killed
 * with sums it never sent loses none of them (docs/RELAY.md, "A relay killed"). A relay tells each call
 * the batch its counts went into and the last batch Redis applied ({@link RelayTag}); the counts of a
 * batch above that are kept here until a later reply of the same relay settles it. A call on a way that
 * is not their relay's (another relay, Redis directly) carries them as held items ({@link HeldCounts}),
 * which budget.lua adds only if that relay never applied the batch, once however often they are carried;
 * a relay that takes them forwards them with its next call and they are kept until it settles that.
 * Redis's own applied reply lets them go (judged there). At most {@link #MAX} are kept, each at most
 * {@link #KEPT_MILLIS}; beyond that they are given up ({@link #lostRequests}: the safe side).
 * Thread-safe (a lock: a budget's calls are a few a second).
 */
public final class RelayHeld {
  /** The most kept: as many as one call to a relay may carry. */
  public static final int MAX = 16;
  /** How long counts are kept (as a call's in doubt are): well inside the 4 minutes Redis keeps the records that judge them. */
  public static final long KEPT_MILLIS = 60_000;

  /**
   * Counts of batch {@code batch} of relay {@code origin}, the client's {@code part}th of it; held by
   * {@code via} (batch {@code viaBatch}) once forwarded; {@code offered}: carried by a call at least once,
   * so no count joins it any more (a later one would be taken for a copy).
   */
  private record Entry(String origin, long batch, long part, long requests, long denied, long retries, String via,
      long viaBatch, long since, boolean offered) {
    String holder() {
      return via != null ? via : origin;
    }

    long holderBatch() {
      return via != null ? viaBatch : batch;
    }

    HeldCounts item(String client) {
      return new HeldCounts(origin, batch, client, requests, denied, retries, part);
    }

    boolean is(HeldCounts h) {
      return origin.equals(h.relay()) && batch == h.batch() && part == h.part();
    }

    Entry asOffered() {
      return new Entry(origin, batch, part, requests, denied, retries, via, viaBatch, since, true);
    }

    Entry forwardedBy(String relay, long relayBatch) {
      return new Entry(origin, batch, part, requests, denied, retries, relay, relayBatch, since, offered);
    }
  }

  /**
   * What a way's last tag told ({@code relay}, its {@code batch}) on connection {@code connection} (the
   * store's count of connections opened as that call was sent, {@code NumberedCall#connection()};
   * -1: not known): a call sent later on the same connection went, if at all, to that relay process, into
   * that batch or a later one.
   */
  public record Known(String relay, long batch, long connection) {}

  /** What a call on a way carries ({@code items}) and what its last tag told ({@code known}; null: none). */
  public record Offer(List<HeldCounts> items, Known known) {
    /** Nothing carried, nothing known. */
    public static final Offer NONE = new Offer(List.of(), null);
  }

  private static final java.util.Comparator<HeldCounts> ITEM_ORDER = java.util.Comparator
      .comparing(HeldCounts::relay).thenComparingLong(HeldCounts::batch).thenComparingLong(HeldCounts::part);

  private final String client;
  private final List<Entry> entries = new ArrayList<>(); // oldest first
  private Known[] relayAt = new Known[0]; // by way: what the relay that last answered on it told (a reply reads it)
  // the last parts made: (relay, batch) -> part, a ring of PARTS (an entry made is one of them until
  // MAX later ones; budget.lua adds a relay's items of this client in (batch, part) order only)
  private static final int PARTS = 4 * MAX;
  private final String[] partRelay = new String[PARTS];
  private final long[] partBatch = new long[PARTS];
  private final long[] partNumber = new long[PARTS];
  private int partNext;
  private long lost;

  /** For the client whose id is {@code client} (its {@code ClientSequence}'s). */
  public RelayHeld(String client) {
    this.client = client;
  }

  /**
   * The held items a call on {@code way} at {@code now} carries: the counts kept for another relay than
   * the one that last answered on that way, neither the one that holds them nor the one whose batch they
   * are (that one applies its batch itself); all of them on a way no relay answered (Redis).
   */
  public synchronized Offer offer(int way, long now) {
    expire(now);
    Known known = known(way);
    String there = known == null ? null : known.relay();
    List<HeldCounts> items = null;
    for (int i = 0; i < entries.size(); i++) {
      Entry e = entries.get(i);
      if (!e.holder().equals(there) && !e.origin.equals(there)) {
        if (items == null) {
          items = new ArrayList<>();
        }
        items.add(e.item(client));
        entries.set(i, e.asOffered());
      }
    }
    if (items == null) {
      return known == null ? Offer.NONE : new Offer(List.of(), known);
    }
    // a relay's items in batch and part order: budget.lua adds only what comes after the last it added
    items.sort(ITEM_ORDER);
    return new Offer(items, known);
  }

  /**
   * A call on {@code way} (sent on connection {@code connection}, -1: not known) with the counts of
   * {@code call}, carrying {@code carried}, was applied at {@code now}; {@code tag} is the relay's (null:
   * Redis's reply, which judged the items). Returns the relay that answered on that way before, if
   * another one answers now (a relay restarted at the same address), else null.
   */
  public synchronized String applied(int way, RelayTag tag, long connection, List<HeldCounts> carried, BudgetCall call,
      long now) {
    if (tag == null) {
      entries.removeIf(e -> carried.stream().anyMatch(e::is));
      if (way >= 0 && way < relayAt.length) {
        relayAt[way] = null;
      }
      return null;
    }
    Known before = known(way);
    // the relay's id as kept since its first reply on this way: compared by identity from here on
    String relay = before != null && before.relay().equals(tag.relay()) ? before.relay() : tag.relay();
    if (way >= 0 && (before == null || before.batch() != tag.batch() || before.connection() != connection
        || before.relay() != relay)) {
      if (way >= relayAt.length) {
        relayAt = java.util.Arrays.copyOf(relayAt, way + 1);
      }
      relayAt[way] = new Known(relay, tag.batch(), connection);
    }
    if (tag.took() && !carried.isEmpty()) {
      for (int i = 0; i < entries.size(); i++) {
        Entry e = entries.get(i);
        if (carried.stream().anyMatch(e::is)) { // the relay forwards them: kept until it settles that batch
          entries.set(i, e.forwardedBy(relay, tag.batch()));
        }
      }
    }
    if (call.requests() > 0 || call.denied() > 0 || call.retries() > 0) {
      keep(relay, tag.batch(), call, now);
    }
    // settled where they are held, or by the relay whose batch they are (its own call applied them, or
    // budget.lua's credit takes them off it: in Redis once either way)
    long settled = tag.settled();
    for (int i = entries.size() - 1; i >= 0; i--) {
      Entry e = entries.get(i);
      if ((e.holderBatch() <= settled && relay.equals(e.holder())) || (e.batch <= settled && relay.equals(e.origin))) {
        entries.remove(i);
      }
    }
    return before != null && before.relay() != relay ? before.relay() : null;
  }

  /**
   * Counts of a call of unknown fate given up where it went: it went, if at all, to {@code origin}'s
   * relay, into that batch or a later one, so it is kept as that relay's counts of that batch (budget.lua
   * adds it only if the relay never applied the batch; should the call have gone into a later batch, the
   * relay's call with it takes the credit off, as far as it goes: never counted twice).
   */
  public synchronized void adopt(Known origin, long requests, long denied, long retries, long now) {
    if (requests == 0 && denied == 0 && retries == 0) {
      return;
    }
    long part = nextPart(origin.relay(), origin.batch());
    entries.add(new Entry(origin.relay(), origin.batch(), part, requests, denied, retries, null, 0, now, true));
    bound();
  }

  private void keep(String relay, long batch, BudgetCall call, long now) {
    for (int i = 0; i < entries.size(); i++) {
      Entry e = entries.get(i);
      if (!e.offered && e.via == null && e.batch == batch && relay.equals(e.origin)) {
        entries.set(i, new Entry(e.origin, e.batch, e.part, e.requests + call.requests(), e.denied + call.denied(),
            e.retries + call.retries(), null, 0, e.since, false));
        return;
      }
    }
    long part = nextPart(relay, batch);
    entries.add(new Entry(relay, batch, part, call.requests(), call.denied(), call.retries(), null, 0, now, false));
    bound();
  }

  private long nextPart(String relay, long batch) {
    long part = 1;
    for (int i = 0; i < PARTS; i++) {
      if (partBatch[i] == batch && relay.equals(partRelay[i])) {
        part = Math.max(part, partNumber[i] + 1);
      }
    }
    partRelay[partNext] = relay;
    partBatch[partNext] = batch;
    partNumber[partNext] = part;
    partNext = (partNext + 1) % PARTS;
    return part;
  }

  private void bound() {
    while (entries.size() > MAX) {
      lost += entries.remove(0).requests;
    }
  }

  private void expire(long now) {
    while (!entries.isEmpty() && now - entries.get(0).since >= KEPT_MILLIS) {
      lost += entries.remove(0).requests;
    }
  }

  private Known known(int way) {
    return way >= 0 && way < relayAt.length ? relayAt[way] : null;
  }

  /** Whether counts are kept. */
  public synchronized boolean any() {
    return !entries.isEmpty();
  }

  /** First attempts given up (held too long, beyond {@link #MAX}). */
  public synchronized long lostRequests() {
    return lost;
  }
}
