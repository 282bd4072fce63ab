package io.retrybudget.relay;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.BudgetMode;
import io.retrybudget.budget.internal.PaceArithmetic;
import io.retrybudget.budget.internal.SlidingWindowCounts;
import io.retrybudget.budget.redis.protocol.BudgetCall;
import io.retrybudget.budget.redis.protocol.BudgetReply;
import io.retrybudget.budget.redis.protocol.CallExtras;
import io.retrybudget.budget.redis.protocol.CountsInDoubt;
import io.retrybudget.budget.redis.protocol.HeldCounts;
import java.util.function.DoubleSupplier;

/**
 * One budget at one relay, a pure core (no I/O, no clock: time comes in as an argument; not
 * thread-safe, the host runs it on one thread). Clients send it the calls they would send budget.lua
 * ({@link #client}); it answers as budget.lua answers, from what it holds, with a sixteenth value, the
 * call ceiling its clients pace against ({@link RelayArithmetic#clientCeiling}; the budget's own,
 * {@code max_calls_per_s}, is Redis's):
 *
 * <ul>
 *   <li>their counts are summed and sent to Redis in one budget.lua call of the relay's own
 *       ({@link #upstreamCall}), every 100-500 ms, so Redis's cost grows with the relays, not the clients;
 *       each call takes every count pending (what exceeds one call's trust cap is lost, the safe side) and
 *       closes a batch ({@link RelayBatches}): a client that asks is told the batch its counts went into
 *       and the last one Redis applied ({@link Answer}), and keeps its counts until then, so a relay
 *       killed with sums unsent loses none (the client carries them as held items, which this relay
 *       forwards for others' clients: {@link #upstreamExtras});
 *   <li>each such call also draws permits from the budget's paced balance for the asks expected until
 *       the next one ({@link RelayArithmetic#drawSize}); Redis counts them granted as it hands them out,
 *       and the relay hands them to its clients' asks ({@link PermitPool}); with none held it grants
 *       from its part of the balance Redis last reported, paid with its next call ({@link ShareLending}:
 *       a lone retry on a budget with permits to spare is granted at once); with nothing to lend either
 *       an ask is refused and counted as denied, as budget.lua refuses it. A cold relay (no draw in the
 *       last 2 s) draws at its first refusal, its next call brought forward, for its clients' paced
 *       share and burst less what it lent ({@link RelayArithmetic#coldDrawSize});
 *   <li>each report is applied at most once ({@link ReportLedger}); a call Redis did not apply (stale,
 *       missing) or that was refused unsent goes with the next one; a call whose fate is unknown (a
 *       timeout, a connection lost in flight) is sent again as it was, with its own number, until Redis
 *       answers it ({@link #upstreamInDoubt}, {@link #resending}), so its counts are applied exactly
 *       once; after a minute of that, or when a host cannot send it so, its counts are counted as lost
 *       (undercounting is the safe side; a count is never applied twice);
 *   <li>after {@link RelaySettings#failuresToCutOff} failed calls in a row the relay is cut off: it
 *       decides from its own paced share, the budget's rule over its clients' first attempts with their
 *       share of the floor ({@link RelayArithmetic#floorShareMicros}); it probes Redis with empty calls
 *       and keeps its counts and those grants until Redis answers, then reports them (the grants as a
 *       client's LOCAL fallback reports its own).
 * </ul>
 */
public final class BudgetRelay {
  private static final long PPM = PaceArithmetic.PPM;
  /** An idle relay still calls this often, so Redis counts it in every fleet epoch and it learns changes. */
  static final long KEEP_ALIVE_MILLIS = 10_000;
  private static final long DEMAND_MILLIS = 2_000;

  private final String name;
  private final RelaySettings settings;
  private final ReportLedger ledger;
  private final PermitPool pool = new PermitPool();
  private final SlidingWindowCounts demand = new SlidingWindowCounts(DEMAND_MILLIS); // asks (requests), refusals clients made (denied)
  private SlidingWindowCounts own = new SlidingWindowCounts(10_000); // first attempts received
  private SlidingWindowCounts applied = new SlidingWindowCounts(10_000); // first attempts Redis applied from this relay
  private final InForce inForce = new InForce(); // the seed, then Redis's last applied reply
  private final PendingSums pending = new PendingSums(); // counts to send with the next call
  private final UpstreamLink link; // when calls are due, the one in flight or in doubt, the cut-off
  private final UpstreamSchedule schedule; // link's
  private final LocalShare local = new LocalShare(); // the paced share it grants from while cut off
  private final ShareLending lending; // its part of Redis's balance, granted with nothing drawn
  private final RelayBatches batches = new RelayBatches();

  public BudgetRelay(String name, RelaySettings settings, DoubleSupplier random) {
    this.name = name;
    this.settings = settings;
    this.ledger = new ReportLedger(settings.maxClients());
    this.link = new UpstreamLink(settings, random);
    this.schedule = link.schedule();
    this.lending = new ShareLending(random);
  }

  public String name() {
    return name;
  }

  /**
   * A client's call ({@code seq}: its report number, strictly increasing per {@code clientId}) at
   * {@code now}; the reply says what budget.lua would, with the fleet's size as this relay estimates it
   * and a call ceiling in the client's terms ({@link RelayArithmetic#clientCeiling}).
   */
  public BudgetReply client(String clientId, long seq, BudgetCall call, long now) {
    return client(clientId, seq, call, java.util.List.of(), ReportLedger.Arrival.on(0), now);
  }

  /**
   * As {@link #client(String, long, BudgetCall, long)}, the call come as {@code arrival} tells (the
   * relay's connection, an id unique in this relay, and the client's floor on it) carrying
   * {@code carried}: the counts of the client's calls of unknown fate here, each added only if that call
   * never reached this relay ({@link ReportLedger#report(String, long, java.util.List, ReportLedger.Arrival, long)}).
   */
  public BudgetReply client(String clientId, long seq, BudgetCall call, java.util.List<CountsInDoubt> carried,
      ReportLedger.Arrival arrival, long now) {
    return answer(clientId, seq, call, carried, java.util.List.of(), arrival, now).reply();
  }

  /**
   * The answer to a client's call: the reply, the batch its counts went into, the last batch Redis
   * applied, and whether the relay took the held items it carried (another relay's batches, forwarded
   * to Redis with the next call; not when they would not fit, or the call is stale).
   */
  public record Answer(BudgetReply reply, long batch, long settled, boolean took) {}

  /**
   * As {@link #client(String, long, BudgetCall, java.util.List, ReportLedger.Arrival, long)}, the call
   * carrying {@code held} too (the client's counts of relays it left, {@link HeldCounts}).
   */
  public Answer answer(String clientId, long seq, BudgetCall call, java.util.List<CountsInDoubt> carried,
      java.util.List<HeldCounts> held, ReportLedger.Arrival arrival, long now) {
    long batch = batches.current(now);
    ReportLedger.Judged judged = ledger.report(clientId, seq, carried, arrival, now);
    if (judged.verdict() == ReportLedger.Verdict.STALE) {
      return new Answer(reply(BudgetReply.STALE, 0, now), batch, batches.settled(), false);
    }
    boolean took = batches.take(held);
    return new Answer(counted(call, judged, now), batch, batches.settled(), took);
  }

  private BudgetReply counted(BudgetCall call, ReportLedger.Judged judged, long now) {
    if (judged.verdict() == ReportLedger.Verdict.NEW_AND_CARRIED) {
      // capped as one call's report is (BudgetCall): the carried counts and the call's own together
      call = new BudgetCall(call.name(), call.requests() + judged.requests(), call.denied() + judged.denied(),
          call.retries() + judged.retries(), call.need(), call.want(), call.seed());
    }
    if (!inForce.seeded()) {
      inForce.seed(call.seed());
      schedule.dueNow(now); // the first client: say hello to Redis at once
    }
    pending.add(now, call.requests(), call.denied(), call.retries());
    lending.owe(call.retries()); // its clients' fallback grants: budget.lua pays them from the balance first
    own.add(now, call.requests(), call.retries(), call.denied());
    local.received(call.requests());
    demand.add(now, call.need(), 0, call.denied());
    if (call.need() == 0) {
      return reply(BudgetReply.COUNTED, 0, now);
    }
    long granted = pool.take(call.need(), call.want(), now);
    if (granted == 0) {
      granted = link.cutOff() ? takeLocal(call.need(), call.want(), now) : lend(call.need(), call.want(), now);
    }
    if (granted > 0) {
      return reply(BudgetReply.GRANTED, granted, now);
    }
    drawEarlyIfCold(now);
    pending.add(now, 0, call.need(), 0);
    if (inForce.mode() == BudgetMode.SHADOW) {
      return reply(BudgetReply.SHADOW, call.need(), now);
    }
    return reply(BudgetReply.DENIED, 0, now);
  }

  /**
   * The relay's own budget.lua call, if one is due at {@code now}: the counts summed since the last one
   * and the permits to draw. Null when none is due, one is in flight, or no client has called yet. The
   * host sends it with the relay's client id and numbering, then calls {@link #upstreamReplied},
   * {@link #upstreamRefused} or {@link #upstreamFailed}.
   */
  public BudgetCall upstreamCall(long now) {
    if (!inForce.seeded() || !link.mayCall(now)) {
      return null;
    }
    BudgetCall again = link.again(now, windowSeconds() * 1000L);
    if (again != null) { // (its batch and items: batches.inFlight(), as the first time)
      return again; // the call of unknown fate goes first, as it was (a cut-off relay's probe too)
    }
    BudgetCall expired = link.giveUpDoubt();
    if (expired != null) {
      pending.lost(expired.requests()); // held too long: Redis may forget the number it went with
      pending.add(now, 0, 0, expired.retries()); // grants go again: reported twice at worst (never: an over-grant)
      batches.lost();
    }
    if (batches.expired(now)) {
      // nothing applied for 2 minutes (cut off): Redis may forget the credits its clients' carried items
      // left, so these counts, sent later, could count twice; given up instead
      pending.giveUp();
    }
    if (link.cutOff()) {
      // a probe: empty, so that the counts (and the grants made alone) wait for an answer instead of
      // going with calls that are likely lost
      link.sent(now, false);
      batches.probe();
      return new BudgetCall(name, 0, 0, 0, 0, 0, inForce.seed());
    }
    long want = drawSize(now);
    boolean idle = pending.empty() && want == 0 && !batches.waiting();
    if (idle && inForce.upstream() != null && now - schedule.lastAt() < KEEP_ALIVE_MILLIS) {
      scheduleNext(now);
      return null;
    }
    BudgetCall c = pending.take(name, want, inForce.seed(), now); // every count: the call closes the batch
    lending.taken(); // and every grant lent so far
    batches.close();
    link.sent(now, want > 0);
    return c;
  }

  /** Redis answered {@code sent} at {@code now}. */
  public void upstreamReplied(BudgetCall sent, BudgetReply reply, long now) {
    boolean again = link.answered(sent);
    // sent again with its number and stale: the first was applied (its grants, if any, are lost)
    if (!reply.applied() && !(again && BudgetReply.STALE.equals(reply.status()))) {
      giveBack(sent, now); // nothing of it was applied: it goes with the next call
      scheduleNext(now);
      return;
    }
    batches.applied(now);
    inForce.upstream(reply);
    long windowMillis = windowSeconds() * 1000L; // within the range budget.lua stores (InForce)
    pending.window(windowMillis);
    if (applied.windowMillis() != windowMillis) {
      applied = new SlidingWindowCounts(windowMillis);
      own = new SlidingWindowCounts(windowMillis);
    }
    applied.add(now, sent.requests(), 0, 0);
    lending.applied(reply, now);
    if (link.reconnected()) {
      local.reset(); // Redis decides again; the next cut-off starts its balance from nothing
    }
    if (BudgetReply.GRANTED.equals(reply.status())) {
      pool.add(reply.granted(), now, settings.permitLifeMillis());
    } else if (BudgetReply.DENIED.equals(reply.status())) {
      pending.refusedDraw(sent.need()); // budget.lua counted the relay's refused draw as a denial
    }
    scheduleNext(now);
  }

  /**
   * The call {@code sent} was refused before Redis ran it (the connection's queue full, the connection
   * down: {@code BudgetScripts.neverRun}): its counts go with the next call, as a reply that applied
   * nothing puts them back; a failure all the same (a relay whose calls are all refused is cut off).
   */
  public void upstreamRefused(BudgetCall sent, long now) {
    if (!link.inDoubt(sent)) { // a call in doubt refused again is still in doubt: its first may have been applied
      giveBack(sent, now);
    }
    failed(now);
  }

  /**
   * The call {@code sent} timed out, or its connection was lost with it in flight: it may have been
   * applied. It is held and sent again as it was ({@link #resending}: with the number it went with)
   * until Redis answers it, for at most {@link CallInDoubt#LIMIT_MILLIS}; a failure meanwhile.
   */
  public void upstreamInDoubt(BudgetCall sent, long now) {
    link.hold(sent, now);
    failed(now);
  }

  /**
   * The call {@code sent} failed and will not be sent again with its number (a host that cannot): its
   * counts are lost (it may have been applied), but for the retries granted here, which go again with
   * the next call (reported twice at worst, the safe side; never reported, an over-grant). A call in
   * doubt stays in doubt.
   */
  public void upstreamFailed(BudgetCall sent, long now) {
    if (!link.inDoubt(sent)) {
      pending.lost(sent.requests());
      pending.add(now, 0, 0, sent.retries());
      batches.lost();
    }
    failed(now);
  }

  /**
   * Whether the call {@link #upstreamCall} returned is one of unknown fate sent again: the host sends
   * it with the number it last went with, never a fresh one ({@code BudgetScripts.again}).
   */
  public boolean resending() {
    return link.resending();
  }

  /**
   * What the call {@link #upstreamCall} returned says beyond its counts: the batch it closes and the held
   * items it forwards ({@code through=<batch>}, budget.lua's held items; the same when sent again).
   */
  public CallExtras upstreamExtras() {
    return batches.inFlight();
  }

  /** Held items carried here and given up with calls given up. */
  public long droppedHeldItems() {
    return batches.droppedItems();
  }

  /** Whether a call of unknown fate is held, to be sent again with its number. */
  public boolean inDoubt() {
    return link.inDoubt();
  }

  /** A call to Redis came to nothing: one more failure in a row (enough of them cut the relay off). */
  private void failed(long now) {
    link.failed();
    lending.unknown();
    scheduleNext(now);
  }

  private void giveBack(BudgetCall sent, long now) {
    lending.unknown(); // its grants lent go again with the next call
    pending.giveBack(sent, now);
    batches.givenBack();
  }

  /**
   * An ask refused with nothing held, by a relay that has drawn for none of its clients' asks (no
   * draw within the demand window): its next call to Redis, a draw, is brought forward to {@code now}
   * (the host sends it at once) instead of the asks being refused until that call comes round, and
   * the refusal tells the client to ask again then. It takes the place of the call that was due
   * ({@link UpstreamSchedule#bringForward}): Redis's cost is unchanged.
   */
  private void drawEarlyIfCold(long now) {
    if (inForce.upstream() != null && link.coldAndIdle(now, DEMAND_MILLIS)) {
      schedule.bringForward(now, DEMAND_MILLIS);
    }
  }

  private void scheduleNext(long now) {
    BudgetReply upstream = inForce.upstream();
    long callers = upstream == null ? 1 : upstream.activeClients();
    int ceiling = inForce.maxCallsPerSecond();
    schedule.next(now, RelayArithmetic.upstreamIntervalMillis(callers, ceiling, settings.upstreamShare(),
        settings.minUpstreamMillis(), settings.maxUpstreamMillis()));
  }

  /**
   * A grant with nothing drawn, from this relay's part of the balance Redis last reported
   * ({@link ShareLending}): reported to Redis with the next call as a retry granted here, which
   * budget.lua pays from the balance before it grants a draw.
   */
  private long lend(long need, long want, long now) {
    long lendable = lending.lendable();
    if (lendable < need) {
      return 0;
    }
    long granted = Math.min(want, lendable);
    lending.lent(granted);
    pending.add(now, 0, 0, granted);
    return granted;
  }

  /** A grant from the relay's own paced share while cut off; it is reported to Redis as a fallback's grants are. */
  private long takeLocal(long need, long want, long now) {
    long floor = RelayArithmetic.floorShareMicros(minRetriesPerSecond(), ledger.clients(now), fleet(now));
    long granted = local.take(need, want, now, own.requests(now), own.spanMillis(now), windowSeconds(), ratioPpm(),
        floor);
    pending.add(now, 0, 0, granted);
    lending.owe(granted);
    return granted;
  }

  private BudgetReply reply(String status, long granted, long now) {
    long fleet = fleet(now);
    long held = available(now);
    long next;
    if (held > 0) {
      next = 0;
    } else if (link.cutOff() && local.active()) {
      next = local.nextMillis();
    } else {
      next = Math.max(1, schedule.nextAt() - now + 1);
    }
    BudgetReply u = inForce.upstream();
    return new BudgetReply(status, granted, u == null ? 0 : u.requests(), u == null ? 0 : u.retries(),
        u == null ? 0 : u.denied(), u == null ? 0 : u.allowance(), fleet, ratioPpm(), windowSeconds(),
        minRetriesPerSecond(), inForce.mode().wireName(), held, next, u == null ? 0 : u.refillPpm(), maxCallsPerSecond(),
        RelayArithmetic.clientCeiling(settings.clientCallsPerSecond(), fleet, ledger.clients(now)));
  }

  /** What an ask could be granted at {@code now}: the permits held and, unless cut off, what may be lent. */
  private long available(long now) {
    return pool.held(now) + (link.cutOff() ? 0 : lending.lendable());
  }

  /** The fleet's size as this relay estimates it ({@link RelayArithmetic#fleetEstimate}). */
  public long fleet(long now) {
    long mine = ledger.clients(now);
    BudgetReply u = inForce.upstream();
    return u == null ? mine : RelayArithmetic.fleetEstimate(mine, applied.requests(now), u.requests(), u.activeClients());
  }

  /**
   * Asks a second: those of the demand window over the time they span ({@link
   * SlidingWindowCounts#spanMillis}: since the first ask's bucket, at least one bucket), so that asks
   * that began 300 ms ago are a rate over 300 ms, not over the whole window.
   */
  private double demandPerSecond(long now) {
    return (demand.requests(now) + demand.denied(now)) * 1000.0 / demand.spanMillis(now);
  }

  /**
   * The permits a call at {@code now} draws: for the asks a second seen until the call after it
   * ({@link RelayArithmetic#drawSize}); a cold relay's, whose clients' asks have only begun, at least
   * their paced share and burst ({@link RelayArithmetic#coldDrawSize}).
   */
  private long drawSize(long now) {
    long horizon = schedule.horizonMillis(now);
    long held = available(now); // what may be lent needs no draw: the call pays for it first
    long cap = BudgetCall.callCap(inForce.seed());
    double asks = demandPerSecond(now);
    long want = RelayArithmetic.drawSize(asks, horizon, held, cap);
    if (!(asks > 0) || !schedule.cold(now, DEMAND_MILLIS)) {
      return want;
    }
    long floor = RelayArithmetic.floorShareMicros(minRetriesPerSecond(), ledger.clients(now), fleet(now));
    double firstPerSecond = own.requests(now) * 1000.0 / own.spanMillis(now);
    // the burst part of a cold draw less what was lent from this relay's part of the balance since
    // Redis last answered: that part is handed out already
    return Math.max(want, RelayArithmetic.coldDrawSize(firstPerSecond, ratioPpm(), floor, horizon,
        held + lending.outstanding(), cap));
  }

  private long ratioPpm() {
    return inForce.ratioPpm();
  }

  private int windowSeconds() {
    return inForce.windowSeconds();
  }

  private int maxCallsPerSecond() {
    return inForce.maxCallsPerSecond();
  }

  private int minRetriesPerSecond() {
    return inForce.minRetriesPerSecond();
  }

  /** This relay's clients of the budget. */
  public long clients(long now) {
    return ledger.clients(now);
  }

  /** Forgets clients quiet for two fleet epochs ({@link ReportLedger#sweep}); for the host's timer. */
  public int sweep(long now) {
    return ledger.sweep(now);
  }

  /** Client ids recorded: at most {@link RelaySettings#maxClients}. */
  public int recordedClients() {
    return ledger.entries();
  }

  /** Client ids evicted to keep {@link RelaySettings#maxClients} (a steady rise means ids are invented). */
  public long evictedClients() {
    return ledger.evicted();
  }

  /** When the next call to Redis is due (Long.MIN_VALUE before the first client called). */
  public long nextUpstreamAt() {
    return schedule.nextAt();
  }

  /** Whether the relay decides from its own paced share because Redis did not answer. */
  public boolean cutOff() {
    return link.cutOff();
  }

  /** Permits held for the clients at {@code now}. */
  public long held(long now) {
    return pool.held(now);
  }

  /**
   * Permits granted with nothing drawn, from this relay's part of the balance Redis last reported
   * ({@link ShareLending}); each is reported to Redis as a retry granted here.
   */
  public long lent() {
    return lending.lent();
  }

  /** Permits granted from the relay's own paced share while cut off; each is reported to Redis later. */
  public long grantedAlone() {
    return local.granted();
  }

  /** Permits drawn from Redis and never handed out. */
  public long droppedPermits() {
    return pool.dropped();
  }

  /**
   * First attempts of calls to Redis given up as lost (they may have been applied): of calls in doubt
   * longer than {@link CallInDoubt#LIMIT_MILLIS}, or that a host could not send again with their number.
   */
  public long lostRequests() {
    return pending.lost();
  }

  /** First attempts received and not yet applied by Redis (sent or waiting). */
  public long pendingRequests() {
    return pending.requests();
  }
}
