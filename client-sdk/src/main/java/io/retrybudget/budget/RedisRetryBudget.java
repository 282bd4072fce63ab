package io.retrybudget.budget;

import io.retrybudget.budget.redis.protocol.BudgetReply;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.LongSupplier;

/**
 * One client's view of a fleet-wide budget in Redis, made of parts that each keep one concern:
 * {@link PendingCounts} (counts not sent yet), {@link LocalFallback} (its own window and the
 * fallback), {@link PermitCache} (leases, late permits, the refusal cache, sampling of asks),
 * {@link FlushSchedule} (when the timer sends) and {@link BudgetFlusher} (what it sends), {@link HealthTracker} (how it sees Redis: the
 * {@link RedisHealth} state machine) and {@link BudgetLink} (its calls, and what their replies taught:
 * {@link Learned}).
 *
 * <ul>
 *   <li>First attempts are counted without a lock and sent by a timer and with every permit
 *       request: a successful first attempt costs no round trip.
 *   <li>A permit request is one atomic script call, bounded by the call timeout; an "exhausted"
 *       answer is reused locally for a short time and those refusals are counted too.
 *   <li>Every call carries a client id and sequence number, so a call given up on is applied at
 *       most once (a late or replayed one is ignored by the script); the counts of one whose fate is
 *       unknown go with the next call on its way, added only if it never ran ({@link BudgetLink}).
 *   <li>When Redis fails or is slower than the call timeout, decisions come from the fallback at
 *       once and the timer probes Redis until it answers again (in time).
 *   <li>The budget's script calls stay under its {@code max_calls_per_s} (C) for the whole fleet,
 *       whatever its size N (the active clients Redis counts): flushes come every {@code N / C}
 *       seconds (within [flushInterval, maxFlushInterval], with a random phase), permit requests go to
 *       Redis with a probability that keeps the fleet's permit calls under {@code C / 3} a second,
 *       each asks for a lease of the permits one such call has to carry ({@code 3 G / C}, G the
 *       budget's refill rate) and a refusal is reused for as long as the budget needs to refill a
 *       permit. Rules and bounds in client-sdk/README.md.
 * </ul>
 */
final class RedisRetryBudget implements RetryBudget {
  static final long CLOSE_FLUSH_TIMEOUT_MILLIS = 2_000;
  private final EngineSettings settings;
  private final FleetRegistry fleet;
  private final BudgetConfig seed;
  private final LongSupplier clock;
  private final PendingCounts pending;
  private final LocalFallback own;
  private final PermitCache permits;
  private final FlushSchedule schedule;
  private final EngineTimer.Cancel flushTask;
  private final BudgetFlusher flusher;
  private final HealthTracker health; // how this budget sees Redis
  // its calls, and the last configuration and fleet size Redis told it (one immutable snapshot)
  private final BudgetLink link;
  private final AskAhead ahead; // a relay's client in a storm decides from what it holds, asking ahead
  private volatile boolean closed;

  RedisRetryBudget(EngineSettings settings, FleetRegistry fleet, BudgetConfig seed) {
    this(settings, fleet, seed, RedisHealth::next);
  }

  /** With another health rule than {@link RedisHealth#next}: for tests that show their checks catch a wrong one. */
  RedisRetryBudget(EngineSettings settings, FleetRegistry fleet, BudgetConfig seed, RedisHealth.Rule healthRule) {
    this.settings = settings;
    this.fleet = fleet;
    this.seed = seed;
    this.clock = settings.clock();
    this.pending = new PendingCounts(seed.windowSeconds() * 1000L);
    this.own = new LocalFallback(pending, seed.windowSeconds() * 1000L, settings.random(), settings.fallbackSharesFloor());
    this.health = new HealthTracker(seed.name(), settings.fallbackPolicy(), fleet, own, clock, healthRule);
    this.permits = new PermitCache(settings.exhaustedCacheMillis(), settings.random());
    this.schedule = new FlushSchedule(settings.flushIntervalMillis(), settings.maxFlushIntervalMillis(), settings.random(),
        () -> fleet.fleetEstimate(seed.name()), clock.getAsLong());
    this.link = new BudgetLink(seed, fleet, pending, own, schedule);
    this.ahead = new AskAhead(settings, link, permits, health, own, pending);
    this.flusher = new BudgetFlusher(settings, fleet, schedule, link, own, pending, health);
    long interval = settings.flushIntervalMillis();
    // the timer ticks at a random phase too: a process's budgets made together do not all tick in one millisecond
    long tickPhase = Math.min(interval - 1, Math.max(0, (long) (interval * settings.random().getAsDouble())));
    this.flushTask = settings.timer().every(() -> flush(false), interval + tickPhase, interval);
    long known = fleet.fleetEstimate(seed.name());
    if (known <= 1) {
      // the first budget of its name in this process: say hello at once (seeds the configuration,
      // learns the fleet's size, warms the script cache and the code path, so the first permit
      // request of a caller is not the slow one)
      settings.timer().execute(() -> flush(true));
    } else {
      schedule.deferFirstCall(known, link.learned().callCeiling());
    }
  }

  @Override
  public String name() {
    return seed.name();
  }

  @Override
  public void recordFirstAttempt() {
    pending.firstAttempt();
  }

  @Override
  public BudgetDecision acquireBlocking() {
    CompletableFuture<BudgetDecision> decision = acquire().toCompletableFuture();
    try {
      // acquire() completes within the call timeout on its own; this bound only guards the guard
      return decision.get(settings.callTimeoutMillis() + 50, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return fallback(clock.getAsLong());
    } catch (ExecutionException | TimeoutException e) {
      return fallback(clock.getAsLong());
    }
  }

  @Override
  public CompletionStage<BudgetDecision> acquire() {
    long now = clock.getAsLong();
    boolean active = ahead.active(now); // a relay's client asking again within 3 s (AskAhead)
    if (permits.refusing(now)) {
      if (!ahead.refusalCounted()) {
        pending.denied();
      }
      return CompletableFuture.completedFuture(permits.reusedRefusal(now));
    }
    RedisHealth.State h = health.state();
    if (!closed && permits.take(now)) {
      own.record(now, 0, 1, 0);
      if (!h.asksRedis() && settings.fallbackPolicy() == FallbackPolicy.LOCAL) {
        own.charge(now, link.learned()); // the fallback decides: Redis's late grant is paid from its share, not added to it
      } else if (active && h == RedisHealth.State.HEALTHY && permits.holdsNone(now)) {
        ahead.decidedFromHeld();
        askAhead(now); // the last one held went: the next ask finds one, if the relay has one
      }
      return CompletableFuture.completedFuture(BudgetDecision.GRANTED);
    }
    FleetRegistry.Port port = fleet.port();
    if (closed || port == null || !h.asksRedis()) {
      BudgetDecision decision = fallback(now);
      if (h == RedisHealth.State.SLOW && !closed && port != null
          && permits.permitsToAsk(link.learned(), own.asksPerSecond(now)) > 0) {
        // an ask Redis would have had: a count-only call with the flush timeout instead (it carries
        // this decision's counts), whose answer in time ends SLOW
        flush(true);
      }
      return CompletableFuture.completedFuture(decision);
    }
    Learned l = link.learned();
    long want = permits.permitsToAsk(l, own.asksPerSecond(now));
    if (want == 0) {
      // not this client's turn to ask: the fleet's permit calls stay under their share of the ceiling
      ahead.sampledOut(now); // a relay's client: its next asks within 3 s are decided ahead (AskAhead)
      if (!ahead.refusalCounted()) { // the relay counted a refusal no ask stood for: this is it
        pending.denied();
      }
      return CompletableFuture.completedFuture(
          l.mode() == BudgetMode.SHADOW ? BudgetDecision.GRANTED_SHADOW : BudgetDecision.DENIED_EXHAUSTED_CACHED);
    }
    if (active && ahead.refusesAtOnce(h, now)) {
      // a relay's client in a storm, refused lately: no ask waits for a round trip; this one
      // is refused at once and an ask goes in the background, its grant held for the next (AskAhead)
      boolean counted = ahead.refusalCounted(); // the relay counted a refusal no ask stood for: this is it
      if (!ahead.ask(port, now, want, !counted) && !counted) {
        pending.denied(); // no ask stands for it
      }
      return CompletableFuture.completedFuture(
          l.mode() == BudgetMode.SHADOW ? BudgetDecision.GRANTED_SHADOW : BudgetDecision.DENIED_EXHAUSTED_CACHED);
    }
    CompletableFuture<BudgetReply> call = link.call(port, now, 1, want);
    return settings.timer().within(call, settings.callTimeoutMillis()).handle((reply, error) -> {
      if (error != null) {
        RedisHealth.State after = health.failure(error);
        if (error instanceof TimeoutException) {
          // only slow: when its reply comes after all, Redis is up but slower than the call timeout
          // (SLOW: the fallback's paced share decides, never a timeout per ask and no retry at all)
          call.thenAccept(late -> {
            if (late.applied()) {
              health.on(RedisHealth.Event.REPLY_LATE, null);
            }
          });
        }
        BudgetDecision decision = after.asksRedis() ? inDoubt() : fallback(clock.getAsLong());
        if (!decision.granted()) {
          // Redis may still grant it; then the permit is kept for this client's next retry
          call.thenAccept(late -> permits.keepLate(late, clock.getAsLong(), link.learned()));
        }
        return decision;
      }
      BudgetDecision d = decide(reply);
      if (active && d == BudgetDecision.GRANTED && health.state() == RedisHealth.State.HEALTHY) {
        askAhead(clock.getAsLong()); // granted: the client's next ask finds one
      }
      return d;
    });
  }

  /** An ask in the background that no refusal stands for (AskAhead), if it is this client's turn. */
  private void askAhead(long now) {
    FleetRegistry.Port port = fleet.port();
    long want = port == null || closed ? 0 : permits.permitsToAsk(link.learned(), own.asksPerSecond(now));
    if (want > 0) {
      ahead.ask(port, now, want, false);
    }
  }

  private BudgetDecision decide(BudgetReply reply) {
    if (!reply.applied()) {
      // not applied even when sent again (its counts go with the next call): Redis answered, so this
      // is no failure of Redis, but it did not decide either
      return inDoubt();
    }
    health.on(RedisHealth.Event.REPLY_IN_TIME, null);
    long now = clock.getAsLong();
    switch (reply.status()) {
      case BudgetReply.GRANTED:
        own.record(now, 0, 1, 0);
        permits.lease(reply, now, link.learned());
        return BudgetDecision.GRANTED;
      case BudgetReply.SHADOW:
        own.record(now, 0, 1, 1);
        return BudgetDecision.GRANTED_SHADOW;
      case BudgetReply.DENIED:
        own.record(now, 0, 0, 1);
        permits.exhausted(now, reply, link.learned());
        ahead.refused(now);
        return BudgetDecision.denied(BudgetDecision.Reason.DENIED_EXHAUSTED, reply.nextGrantMillis());
      default:
        // a status no script of this version answers to a permit request (a relay or script of another
        // version): decided as a call in doubt, never thrown to the caller (RetryBudget: acquire never
        // fails because of the store)
        return inDoubt();
    }
  }

  /**
   * One call failed but Redis is not (yet) taken for down: Redis may well have granted it, and a
   * local grant on top would spend the fleet's allowance twice. Unless the policy is ALLOW, refuse
   * it; a late grant from Redis is kept for the next retry.
   */
  private BudgetDecision inDoubt() {
    if (settings.fallbackPolicy() == FallbackPolicy.ALLOW) {
      return BudgetDecision.GRANTED_FALLBACK;
    }
    pending.denied();
    return link.learned().mode() == BudgetMode.SHADOW ? BudgetDecision.GRANTED_SHADOW : BudgetDecision.DENIED_FALLBACK;
  }

  private BudgetDecision fallback(long now) {
    return own.decide(now, settings.fallbackPolicy(), link.learned()); // one snapshot of the configuration
  }

  @Override
  public Optional<BudgetConfig> configInForce() {
    return link.configInForce();
  }

  /** Timer task: sends pending counts; while SLOW or DEGRADED it is also the probe that ends that state. */
  CompletableFuture<Void> flush(boolean evenIfIdle) {
    return flusher.flush(evenIfIdle);
  }

  @Override
  public java.util.OptionalLong remainingPermits() {
    return link.remainingPermits();
  }

  @Override
  public boolean isDegraded() {
    return health.state() == RedisHealth.State.DEGRADED || fleet.port() == null;
  }

  @Override
  public boolean isSlow() {
    return health.state() == RedisHealth.State.SLOW && !isDegraded();
  }

  /** How this budget sees Redis (for tests and diagnostics). */
  RedisHealth.State health() {
    return health.state();
  }

  /** How often this budget went from healthy to degraded (for tests and diagnostics). */
  int timesDegraded() {
    return health.timesDegraded();
  }

  /** Permits Redis granted to this client that it never used (dropped, or held at close). */
  long unusedPermits() {
    return permits.unused();
  }

  /** When the timer's next flush is due (for tests). */
  long nextFlushAt() {
    return schedule.nextFlushAt();
  }

  /** Whether a relay applied this budget's last applied call: its asks are then decided ahead (for tests). */
  boolean viaRelay() {
    return link.viaRelay();
  }

  /** Whether its relay refused an ask of this budget within AskAhead's 3 s of {@code now} (for tests). */
  boolean refusedLately(long now) {
    return ahead.refusedLately(now);
  }

  /** Refusals dropped with counts kept longer than the window, and the relay's denials no refusal stood for (for tests). */
  long[] refusalAccounts() {
    return new long[] {pending.staleDenials(), ahead.refusalCredits()};
  }

  /** Asks this budget decided ahead, from what it held, without waiting for a reply (for tests and benchmarks). */
  long decidedAhead() {
    return ahead.decided();
  }

  /** Whether Redis has applied a call of this budget (counted it in the fleet). */
  boolean heardFromRedis() {
    return link.heard();
  }

  /** First attempts dropped from being sent again for being older than the window (for tests). */
  long staleRequests() {
    return pending.stale();
  }

  /** First attempts given up in doubt (for tests and diagnostics; see {@link BudgetLink}). */
  long lostInDoubt() {
    return link.lostInDoubt();
  }

  /** Whether counts of a call of unknown fate wait for a call on their way (for tests). */
  boolean holdsDoubt() {
    return link.holdsDoubt();
  }

  /** Script calls this budget has sent, hellos, flushes, probes and permit requests (for tests). */
  long callsSent() {
    return link.callsSent();
  }

  /** What Redis last said about the budget (for tests). */
  Learned learned() {
    return link.learned();
  }

  /** This client's own first attempts in its window, sent or not (for tests). */
  long ownRequests() {
    return own.requests(clock.getAsLong());
  }

  /** The id budget.lua de-duplicates this client's calls by (for tests). */
  String clientId() {
    return link.clientId();
  }

  @Override
  public void close() {
    CompletableFuture<?> last = beginClose();
    awaitLastCalls(List.of(last), closeWaitMillis(settings));
    finishClose();
  }

  /**
   * Stops the budget and sends its last counts (none when it is already closed, holds none, or is
   * DEGRADED: a degraded budget does not wait for a Redis that is not answering; a client of 200
   * degraded budgets took 70 s to close, each waiting out the refusals' re-sends). The future is the
   * last call's; {@link #finishClose} after it. {@link RedisBudgetClient#close} starts every budget's
   * this way, then waits once, so a Redis that stopped answering costs one wait, not one a budget.
   */
  CompletableFuture<?> beginClose() {
    if (closed) {
      return CompletableFuture.completedFuture(null);
    }
    closed = true;
    flushTask.cancel();
    permits.close();
    FleetRegistry.Port port = fleet.port();
    if (port == null || (!pending.any() && !link.holdsDoubt()) || health.state() == RedisHealth.State.DEGRADED) {
      return CompletableFuture.completedFuture(null);
    }
    try {
      return link.call(port, clock.getAsLong(), 0, 0);
    } catch (RuntimeException e) {
      return CompletableFuture.completedFuture(null); // the last counts are lost: undercounting is the safe side
    }
  }

  /** After {@link #beginClose} and its wait: the budget leaves the fleet's registry. */
  void finishClose() {
    fleet.forget(this);
  }

  /** How long a close waits for the last calls: off the hot path, longer than a timer flush would. */
  static long closeWaitMillis(EngineSettings settings) {
    return Math.max(settings.flushTimeoutMillis(), CLOSE_FLUSH_TIMEOUT_MILLIS);
  }

  /** Waits for {@code calls} together, at most {@code millis}; what has not answered by then is lost. */
  static void awaitLastCalls(List<CompletableFuture<?>> calls, long millis) {
    try {
      CompletableFuture.allOf(calls.toArray(CompletableFuture[]::new)).get(millis, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (ExecutionException | TimeoutException | RuntimeException e) {
      // a failed or late last call: its counts are lost (undercounting is the safe side)
    }
  }

  @Override
  public String toString() {
    return "RedisRetryBudget{" + seed.name() + ", client=" + link.clientId() + ", " + health.state() + "}";
  }
}
