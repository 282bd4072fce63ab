package io.retrybudget.budget;

import io.retrybudget.budget.internal.BudgetArithmetic;
import io.retrybudget.budget.internal.SlidingWindowCounts;
import io.retrybudget.budget.redis.BrokenBudgetException;
import io.retrybudget.budget.redis.BudgetCall;
import io.retrybudget.budget.redis.BudgetKeys;
import io.retrybudget.budget.redis.BudgetReply;
import io.retrybudget.budget.redis.BudgetScripts;
import io.retrybudget.budget.redis.ClientSequence;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;

/**
 * One client's view of a fleet-wide budget in Redis.
 *
 * <ul>
 *   <li>First attempts are counted in a {@link LongAdder} and sent by a timer and with every permit
 *       request: a successful first attempt costs no round trip.
 *   <li>A permit request is one atomic script call, bounded by the call timeout; an "exhausted"
 *       answer is reused locally for a short time and those refusals are counted too.
 *   <li>Every call carries a client id and sequence number, so a call given up on is applied at
 *       most once (a late or replayed one is ignored by the script; its counts are lost, which
 *       undercounts: the safe side).
 *   <li>When Redis fails, decisions come from the fallback at once and the timer probes Redis until
 *       it answers again.
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
  private static final java.util.logging.Logger LOG = java.util.logging.Logger.getLogger(RedisRetryBudget.class.getName());
  static final int DEGRADED_AFTER_FAILURES = 2;
  static final long CLOSE_FLUSH_TIMEOUT_MILLIS = 2_000;
  /** At most this many permits in one lease. */
  static final long MAX_LEASE = 64;
  /**
   * The fleet's permit calls aim at C / ASK_SHARE_DIVISOR a second, beside its flushes (0.9 C): a
   * storm then costs about 1.25 C. Half (C / 2) measured 1.62 C, over the 1.5 C bound, at 10,000
   * clients (bench/results/storm17-summary.md): late probes and lease ends add to the design's share.
   */
  static final int ASK_SHARE_DIVISOR = 3;
  /** A refusal from Redis is reused at most this long (or the exhausted cache time, if longer). */
  static final long MAX_DENIAL_CACHE_MILLIS = 1_000;
  /** Leased permits not used within this long are dropped (at most one bucket of the window). */
  static final long MIN_LEASE_MILLIS = 100;
  private final RedisBudgetClient client;
  private final BudgetConfig seed;
  private final ClientSequence sequence;
  private volatile BudgetKeys keys; // made at the first call, from the store's mode
  private final LongSupplier clock;
  private final long callTimeoutMillis;
  private final long flushTimeoutMillis;
  private final long exhaustedCacheMillis;
  private final long baseIntervalMillis;
  private final long maxIntervalMillis;
  private final java.util.function.DoubleSupplier random;
  // when the timer's next flush is due (clock ms): set by every call to Redis
  private volatile long nextFlushAt = Long.MIN_VALUE;
  private volatile boolean stretched; // the last interval was stretched by the fleet's size
  // Start-up: a budget that joins a fleet this process already knows to be large defers its first
  // call (the hello) to createdAt + firstPhase * the interval of the fleet as known when it is due
  private final long createdAt;
  private final double firstPhase;
  private volatile boolean firstCallDeferred;
  private final AtomicBoolean heard = new AtomicBoolean(); // Redis has applied a call of this budget
  private final AtomicLong callsSent = new AtomicLong();
  private final LongAdder pendingRequests = new LongAdder();
  private final LongAdder pendingDenied = new LongAdder();
  // counts Redis did not apply (a stale or missing reply): sent again with the next call, and already
  // in ownCounts (so not recorded there a second time)
  private final LongAdder resendRequests = new LongAdder();
  private final LongAdder resendDenied = new LongAdder();
  // retries the fallback granted, reported to Redis with the next call (and resent like the others)
  private final LongAdder pendingRetries = new LongAdder();
  private final LongAdder resendRetries = new LongAdder();
  private final AtomicBoolean flushInFlight = new AtomicBoolean();
  private final SlidingWindowCounts ownCounts;
  // the LOCAL fallback's paced balance over this client's own first attempts (guarded by ownCounts)
  private final io.retrybudget.budget.internal.PacedBalance ownBalance = new io.retrybudget.budget.internal.PacedBalance();
  private long ownRequestsEver; // first attempts ever put in ownCounts (guarded by ownCounts)
  private long ownDeposited; // of those and the pending ones, how many went into ownBalance (guarded by ownCounts)
  private long ownDebt; // micro-permits the fallback granted ahead of its deposits, paid from the next ones (guarded by ownCounts)
  private long ownThreshold; // what the balance must hold for the fallback's next grant, micro-permits (guarded by ownCounts)
  // the fallback is deciding since its balance was last started from nothing; ended by an answer from Redis in time
  private volatile boolean fallbackEpisode;
  private final ScheduledFuture<?> flushTask;

  private volatile long exhaustedUntil = Long.MIN_VALUE;
  // permits Redis granted to calls this client had already given up on, kept for the next retry
  private final java.util.concurrent.atomic.AtomicInteger latePermits = new java.util.concurrent.atomic.AtomicInteger();
  private volatile long latePermitsUntil = Long.MIN_VALUE;
  // permits Redis granted (and counted) that this client held and never used: dropped when too old,
  // beyond MAX_LEASE, or held at close (for tests and diagnostics: the safe side of a lease)
  private final AtomicLong unusedPermits = new AtomicLong();
  private final java.util.concurrent.atomic.AtomicInteger consecutiveFailures = new java.util.concurrent.atomic.AtomicInteger();
  private volatile boolean degraded;
  private volatile long degradedSince;
  private final java.util.concurrent.atomic.AtomicInteger timesDegraded = new java.util.concurrent.atomic.AtomicInteger();
  private volatile boolean closed;
  // the last configuration and fleet size Redis told us, for the fallback: one immutable snapshot
  private volatile Learned learned;
  // the configuration Redis holds, as a BudgetConfig; null until Redis has answered
  private volatile BudgetConfig inForce;
  private final AtomicBoolean differenceLogged = new AtomicBoolean();

  /**
   * What Redis last said about the budget. {@code activeClients} is 0 until Redis has said how many
   * clients share the budget: no floor share before that.
   */
  record Learned(long ratioPpm, int windowSeconds, int minRetriesPerSecond, BudgetMode mode, long activeClients,
      int maxCallsPerSecond, long refillPpm) {
    boolean sameConfig(BudgetConfig c) {
      return c != null && c.ratioPpm() == ratioPpm && c.windowSeconds() == windowSeconds
          && c.minRetriesPerSecond() == minRetriesPerSecond && c.mode() == mode;
    }

    static Learned of(BudgetReply reply) {
      return new Learned(reply.ratioPpm(), reply.windowSeconds(), reply.minRetriesPerSecond(),
          BudgetMode.SHADOW.wireName().equals(reply.mode()) ? BudgetMode.SHADOW : BudgetMode.ENFORCE,
          Math.max(1, reply.activeClients()), Math.max(1, reply.maxCallsPerSecond()), Math.max(0, reply.refillPpm()));
    }
  }

  RedisRetryBudget(RedisBudgetClient client, BudgetConfig seed) {
    this.client = client;
    this.seed = seed;
    this.sequence = new ClientSequence(Long.toHexString(ThreadLocalRandom.current().nextLong() | Long.MIN_VALUE));
    this.clock = client.millisClock();
    this.callTimeoutMillis = client.callTimeout().toMillis();
    this.flushTimeoutMillis = Math.max(callTimeoutMillis, client.flushInterval().toMillis() / 2);
    this.exhaustedCacheMillis = client.exhaustedCacheTime().toMillis();
    this.learned = new Learned(seed.ratioPpm(), seed.windowSeconds(), seed.minRetriesPerSecond(), seed.mode(), 0,
        seed.maxCallsPerSecond(), 0);
    this.baseIntervalMillis = client.flushInterval().toMillis();
    this.maxIntervalMillis = client.maxFlushInterval().toMillis();
    this.random = client.random();
    this.ownCounts = new SlidingWindowCounts(seed.windowSeconds() * 1000L);
    this.createdAt = clock.getAsLong();
    this.firstPhase = random.getAsDouble();
    long interval = client.flushInterval().toMillis();
    // the timer ticks at a random phase too: a process's budgets made together do not all tick in one millisecond
    long tickPhase = Math.min(interval - 1, Math.max(0, (long) (interval * random.getAsDouble())));
    this.flushTask = client.scheduler().scheduleAtFixedRate(() -> flush(false), interval + tickPhase, interval, TimeUnit.MILLISECONDS);
    long known = client.fleetEstimate(seed.name());
    if (known <= 1) {
      // the first budget of its name in this process: say hello at once (seeds the configuration,
      // learns the fleet's size, warms the script cache and the code path, so the first permit
      // request of a caller is not the slow one)
      client.scheduler().execute(() -> flush(true));
    } else {
      // this process holds several clients of the budget: a hello from each at once is a stampede
      // (10,000 budgets made together: 10,000 calls in one tick, before any knows the fleet's size).
      // The first call goes at a random phase over the interval of the fleet as known when it comes
      // due instead: within 250 ms for a small fleet, over N / 0.9 C for a large one (a permit
      // request asks Redis at once all the same, and is the hello).
      firstCallDeferred = true;
      stretched = true;
      nextFlushAt = firstCallDue(known);
    }
  }

  /** When a deferred first call is due, for a fleet of {@code clients}: createdAt + firstPhase of its interval. */
  private long firstCallDue(long clients) {
    long interval = flushIntervalMillis(baseIntervalMillis, maxIntervalMillis, clients, learned.maxCallsPerSecond());
    return createdAt + (long) (Math.max(0, interval - baseIntervalMillis / 2) * equilibriumPhase(firstPhase));
  }

  /**
   * The first wait of a stretched client, as a fraction of its aim, for a uniform draw {@code u}:
   * the forward recurrence time of the later waits (0.75 to 1.25 of the aim, uniform), density 1 on
   * [0, 0.75] falling to 0 at 1.25. A fleet whose clients start at such phases calls at N / aim
   * from its first second on, as in its steady state; phases uniform over [0, 1] would add the
   * early clients' second calls to the late ones' first (1.5 times the rate around the aim).
   */
  static double equilibriumPhase(double u) {
    double v = Math.min(1, Math.max(0, u));
    return v <= 0.75 ? v : 1.25 - Math.sqrt(1 - v);
  }

  @Override
  public String name() {
    return seed.name();
  }

  @Override
  public void recordFirstAttempt() {
    pendingRequests.increment();
  }

  @Override
  public BudgetDecision acquireBlocking() {
    CompletableFuture<BudgetDecision> decision = acquire().toCompletableFuture();
    try {
      // acquire() completes within the call timeout on its own; this bound only guards the guard
      return decision.get(callTimeoutMillis + 50, TimeUnit.MILLISECONDS);
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
    if (now < exhaustedUntil) {
      pendingDenied.increment();
      return CompletableFuture.completedFuture(BudgetDecision.DENIED_EXHAUSTED_CACHED);
    }
    if (takeLatePermit(now)) {
      recordOwn(now, 0, 1, 0);
      return CompletableFuture.completedFuture(BudgetDecision.GRANTED);
    }
    BudgetScripts scripts = client.scripts();
    if (closed || degraded || scripts == null) {
      return CompletableFuture.completedFuture(fallback(now));
    }
    Learned l = learned;
    double fleet = fleetAsksPerSecond(now, l);
    double share = l.maxCallsPerSecond() / (double) ASK_SHARE_DIVISOR;
    boolean sampled = fleet > share;
    if (sampled && random.getAsDouble() * fleet >= share) {
      // not this client's turn to ask: the fleet's permit calls stay under their share of the ceiling
      pendingDenied.increment();
      return CompletableFuture.completedFuture(
          l.mode() == BudgetMode.SHADOW ? BudgetDecision.GRANTED_SHADOW : BudgetDecision.DENIED_EXHAUSTED_CACHED);
    }
    // a lease only where asks are sampled: there each call has to carry more than one permit
    CompletableFuture<BudgetReply> call = call(scripts, now, 1, sampled ? leaseSize(l) : 1);
    return call.copy().orTimeout(callTimeoutMillis, TimeUnit.MILLISECONDS).handle((reply, error) -> {
      if (error != null) {
        onFailure(error);
        if (error instanceof TimeoutException) {
          // only slow: when its reply comes after all, Redis is up; that timeout does not count
          // towards degrading (a loaded machine's transient slow replies then degrade no client)
          call.thenAccept(late -> forgiveLateReply());
        }
        BudgetDecision decision = degraded ? fallback(clock.getAsLong()) : inDoubt();
        if (!decision.granted()) {
          // Redis may still grant it; then the permit is kept for this client's next retry
          call.thenAccept(this::keepLatePermit);
        }
        return decision;
      }
      return decide(reply);
    });
  }

  /** A reply that came after the caller was answered: keep its permits, or its "exhausted". */
  private void keepLatePermit(BudgetReply late) {
    if (BudgetReply.GRANTED.equals(late.status()) || BudgetReply.SHADOW.equals(late.status())) {
      holdPermits(Math.max(1, late.granted()), clock.getAsLong(), Math.max(bucketMillis(), leaseMillis(learned)));
    } else if (BudgetReply.DENIED.equals(late.status())) {
      exhausted(clock.getAsLong(), late);
    }
  }

  /** Keeps permits Redis granted (a lease, or a late grant) for this client's next asks, until {@code now + life}. */
  private void holdPermits(long permits, long now, long life) {
    if (permits <= 0) {
      return;
    }
    latePermitsUntil = Math.max(latePermitsUntil, now + life);
    long kept = Math.min(permits, MAX_LEASE);
    unusedPermits.addAndGet(permits - kept);
    latePermits.addAndGet((int) kept);
  }

  /**
   * The fleet's asks a second as this client sees them: N times its own asks (or first attempts,
   * whichever is more) a second. An ask goes to Redis with probability {@code (C / 3) / that}, so
   * the fleet's permit calls stay under a third of its call ceiling C whatever its size N; always for a
   * fleet that stays under anyway (and for a lone client: 0).
   */
  private double fleetAsksPerSecond(long now, Learned l) {
    long clients = l.activeClients();
    if (clients <= 1) {
      return 0;
    }
    double perSecond;
    synchronized (ownCounts) {
      long firstAttempts = ownCounts.requests(now) + pendingRequests.sum();
      long asks = ownCounts.retries(now) + ownCounts.denied(now) + pendingDenied.sum();
      perSecond = Math.max(firstAttempts, asks) * 1000.0 / ownCounts.windowMillis();
    }
    return clients * perSecond;
  }

  /**
   * Permits one permit call asks for: what each of the fleet's permit calls (at most C / 3 a
   * second) has to carry for the fleet to get its refill rate G: {@code ceil(3 G / C)}, 1 to 64.
   */
  static long leaseSize(Learned l) {
    if (l.activeClients() <= 1) {
      return 1;
    }
    long perCall = (ASK_SHARE_DIVISOR * l.refillPpm() + (long) l.maxCallsPerSecond() * PPM - 1) / ((long) l.maxCallsPerSecond() * PPM);
    return Math.max(1, Math.min(MAX_LEASE, perCall));
  }

  private static final long PPM = io.retrybudget.budget.internal.PaceArithmetic.PPM;

  /** How long leased permits are kept: this client's spacing of permit calls (3 N / C s), within [100 ms, one bucket]. */
  private long leaseMillis(Learned l) {
    long spacing = ASK_SHARE_DIVISOR * l.activeClients() * 1000L / l.maxCallsPerSecond();
    return Math.max(MIN_LEASE_MILLIS, Math.min(bucketMillis(), spacing));
  }

  /**
   * How long a refusal is reused: until the budget refills a permit, at most 1 s, and at least this
   * client's share of the fleet's permit calls (3 N / C s, as leases), itself at most
   * exhaustedCacheTime. A large fleet reuses a refusal for exhaustedCacheTime (its asks add up to C / 3
   * a second); a small one asks again when the budget can grant (one client of a budget with a floor of
   * 100/s: 10 ms, not 100 ms of refusing the retries the floor pays for).
   */
  private long denialCacheMillis(BudgetReply reply) {
    long max = Math.max(exhaustedCacheMillis, MAX_DENIAL_CACHE_MILLIS);
    long next = reply.nextGrantMillis() < 0 ? max : reply.nextGrantMillis();
    Learned l = learned;
    long spacing = ASK_SHARE_DIVISOR * Math.max(1, l.activeClients()) * 1000L / Math.max(1, l.maxCallsPerSecond());
    long min = Math.min(exhaustedCacheMillis, Math.max(1, spacing));
    return Math.max(min, Math.min(max, next));
  }

  /**
   * The flush interval the fleet's size asks for: {@code ceil(N * 1000 / (0.9 C))} ms, so that N
   * clients' flushes add up to 90 % of the ceiling C a second (the rest is room for their random
   * phases), within [flushInterval, maxFlushInterval].
   */
  static long flushIntervalMillis(long base, long max, long clients, int maxCallsPerSecond) {
    long fleet = clients <= 0 ? 0 : (clients * 10_000L + 9L * maxCallsPerSecond - 1) / (9L * maxCallsPerSecond);
    return Math.max(base, Math.min(max, fleet));
  }

  /**
   * The flush interval for what Redis said ({@code l}), with at least as many clients as this process
   * knows of: its own budgets of this name (each counted by Redis), or the fleet size a sibling
   * learned later (Redis's count lags a fleet that is joining; a degraded budget that never heard
   * from Redis probes at its siblings' interval, not every tick).
   */
  private long interval(Learned l) {
    long clients = Math.max(l.activeClients(), client.fleetEstimate(seed.name()));
    return flushIntervalMillis(baseIntervalMillis, maxIntervalMillis, clients, l.maxCallsPerSecond());
  }

  /**
   * After a call at {@code now}: when the timer's next flush is due. The timer ticks every flushInterval,
   * which adds half a tick on average, so the aim is the interval less half a tick; the first
   * stretched interval takes a random phase ({@link #equilibriumPhase}: clients that started
   * together spread out as if they had always run), the later ones 0.75 to 1.25 of it.
   */
  private void scheduleNextFlush(long now, Learned l) {
    long interval = interval(l);
    long aim = Math.max(0, interval - baseIntervalMillis / 2);
    long wait;
    if (interval <= baseIntervalMillis) {
      wait = aim; // every tick, as an unstretched client always did
      stretched = false;
    } else if (!stretched) {
      wait = (long) (aim * equilibriumPhase(random.getAsDouble()));
      stretched = true;
    } else {
      wait = (long) (aim * (0.75 + 0.5 * random.getAsDouble()));
    }
    nextFlushAt = now + wait;
  }

  /** When the timer's next flush is due (for tests). */
  long nextFlushAt() {
    return nextFlushAt;
  }

  /** Whether Redis has applied a call of this budget (counted it in the fleet). */
  boolean heardFromRedis() {
    return heard.get();
  }

  /** Script calls this budget has sent, hellos, flushes, probes and permit requests (for tests). */
  long callsSent() {
    return callsSent.get();
  }

  /** What Redis last said about the budget (for tests). */
  Learned learned() {
    return learned;
  }

  private boolean takeLatePermit(long now) {
    if (latePermits.get() == 0) {
      return false;
    }
    if (now > latePermitsUntil) {
      unusedPermits.addAndGet(latePermits.getAndSet(0)); // too old: the allowance it came from has moved on
      return false;
    }
    return latePermits.getAndUpdate(n -> n > 0 ? n - 1 : 0) > 0;
  }

  private long bucketMillis() {
    return learned.windowSeconds() * 1000L / SlidingWindowCounts.BUCKETS;
  }

  private BudgetDecision decide(BudgetReply reply) {
    if (!reply.applied()) {
      // not applied even when sent again (its counts go with the next call): Redis answered, so this
      // is no failure of Redis, but it did not decide either
      return inDoubt();
    }
    healthy();
    switch (reply.status()) {
      case BudgetReply.GRANTED:
        recordOwn(0, 1, 0);
        // a lease: the permits beyond this one serve this client's next asks
        holdPermits(reply.granted() - 1, clock.getAsLong(), leaseMillis(learned));
        return BudgetDecision.GRANTED;
      case BudgetReply.SHADOW:
        recordOwn(0, 1, 1);
        return BudgetDecision.GRANTED_SHADOW;
      case BudgetReply.DENIED:
        recordOwn(0, 0, 1);
        exhausted(clock.getAsLong(), reply);
        return BudgetDecision.DENIED_EXHAUSTED;
      default:
        throw new IllegalStateException("budget.lua answered " + reply.status() + " to a permit request");
    }
  }

  /** Redis said "exhausted": the refusal is reused for a while. */
  private void exhausted(long now, BudgetReply reply) {
    exhaustedUntil = now + denialCacheMillis(reply);
  }

  /** Sends what is counted locally and asks for {@code need} permits, {@code want} if there are (0: count only). */
  private CompletableFuture<BudgetReply> call(BudgetScripts scripts, long now, int need, long want) {
    long[] moved = movePending(now);
    long requests = moved[0];
    long denied = moved[1];
    long retries = moved[2];
    // numbered and sent under the sequence's lock by BudgetScripts: calls reach Redis in order
    BudgetKeys k = keys;
    if (k == null) {
      keys = k = scripts.keys(seed.name()); // once: standalone and Cluster differ in the index key
    }
    // every call carries the counts, so the timer's next flush is one interval after it
    firstCallDeferred = false;
    scheduleNextFlush(now, learned);
    callsSent.incrementAndGet();
    BudgetCall sent = new BudgetCall(seed.name(), requests, denied, retries, need, Math.max(need, want), seed);
    // counts beyond what one call may report (the trust model's cap) go with the next calls
    resendRequests.add(requests - sent.requests());
    resendDenied.add(denied - sent.denied());
    resendRetries.add(retries - sent.retries());
    return scripts.budget(sent, k, sequence).thenApply(reply -> {
      if (reply.applied()) {
        Learned told = Learned.of(reply);
        Learned before = learned;
        learned = told;
        client.learnedFleet(seed.name(), told.activeClients(), heard.compareAndSet(false, true));
        learnConfig(told);
        if (interval(told) < interval(before)) {
          // a higher ceiling or a smaller fleet: the shorter interval from this call on, not after the longer one
          scheduleNextFlush(now, told);
        }
      } else {
        // Redis applied none of it: the counts go with the next call (they are in ownCounts already)
        resendRequests.add(sent.requests());
        resendDenied.add(sent.denied());
        resendRetries.add(sent.retries());
      }
      return reply;
    });
  }

  /** Keeps the configuration Redis holds; says once when it is not the one this client was built with. */
  private void learnConfig(Learned now) {
    BudgetConfig current = inForce;
    if (now.sameConfig(current)) {
      return; // the usual case: nothing allocated
    }
    BudgetConfig config;
    try {
      config = BudgetConfig.builder(seed.name()).ratioPpm(now.ratioPpm()).windowSeconds(now.windowSeconds())
          .minRetriesPerSecond(now.minRetriesPerSecond()).mode(now.mode()).build();
    } catch (IllegalArgumentException e) {
      return; // the scripts validate what they store; a value outside the builder's range is not exposed
    }
    inForce = config;
    if (!config.equals(seed) && differenceLogged.compareAndSet(false, true)) {
      LOG.info(() -> "budget " + seed.name() + ": Redis already holds another configuration, which is in force: "
          + config + "; this client was built with " + seed
          + " (the first registration wins; change a budget with the coordinator's PUT /v1/budgets/" + seed.name() + ")");
    }
  }

  @Override
  public java.util.Optional<BudgetConfig> configInForce() {
    return java.util.Optional.ofNullable(inForce);
  }

  /** A permit call's reply came after its timeout: that failure is taken back (not once degraded). */
  private void forgiveLateReply() {
    if (!degraded) {
      consecutiveFailures.updateAndGet(n -> n > 0 ? n - 1 : 0);
    }
  }

  /** An answer in time: Redis is usable again. (A late answer teaches the config, not health.) */
  private void healthy() {
    consecutiveFailures.set(0);
    if (fallbackEpisode) {
      fallbackEpisode = false; // the next time the fallback decides, it starts from nothing again
    }
    if (degraded) {
      degraded = false;
      long took = clock.getAsLong() - degradedSince;
      client.logRecovered(() -> "budget " + seed.name() + " recovered: decisions come from Redis again after "
          + took + " ms on the " + client.fallbackPolicy() + " fallback");
    }
  }

  private static final CompletableFuture<Void> DONE = CompletableFuture.completedFuture(null);

  /** Timer task: sends pending counts; while degraded it is also the probe that ends degradation. */
  CompletableFuture<Void> flush(boolean evenIfIdle) {
    BudgetScripts scripts = client.scripts();
    if (scripts == null) {
      // never connected: keep the local window current so the fallback sees a window, not a backlog
      movePending(clock.getAsLong());
      return DONE;
    }
    long now = clock.getAsLong();
    if (!evenIfIdle && now < nextFlushAt) {
      return DONE; // not due: the fleet's flushes add up to its call ceiling (probes while degraded too)
    }
    boolean hello = evenIfIdle;
    if (firstCallDeferred && !evenIfIdle) {
      // the fleet as known now: siblings made since, or a size one of them learned, push it out
      long due = firstCallDue(client.fleetEstimate(seed.name()));
      if (now < due) {
        nextFlushAt = due;
        return DONE;
      }
      hello = true; // the hello, sent even if idle
    }
    if (!flushInFlight.compareAndSet(false, true)) {
      return DONE;
    }
    try {
      if (!hello && !degraded && !hasUnsentCounts()) {
        flushInFlight.set(false);
        return DONE; // an idle healthy client costs Redis nothing
      }
      CompletableFuture<Void> done = new CompletableFuture<>();
      // the timeout on a copy: a reply after it still teaches the fleet size and the configuration
      // (timing out the call itself would drop them, and an overloaded fleet would never learn N)
      call(scripts, now, 0, 0).copy()
          .orTimeout(flushTimeoutMillis, TimeUnit.MILLISECONDS)
          .whenComplete((reply, error) -> {
            if (error != null) {
              onFailure(error);
            } else if (reply.applied()) {
              healthy();
            }
            flushInFlight.set(false);
            done.complete(null);
          });
      return done;
    } catch (RuntimeException e) {
      onFailure(e);
      flushInFlight.set(false);
      return DONE;
    }
  }


  /**
   * One failed or timed-out call answers from the fallback; a second in a row marks the budget
   * degraded: then decisions stop asking Redis until a flush gets through.
   */
  private void onFailure(Throwable error) {
    Throwable cause = error instanceof java.util.concurrent.CompletionException && error.getCause() != null
        ? error.getCause() : error;
    // a budget whose keys in Redis are broken will not heal by asking again: fall back at once
    boolean broken = cause instanceof BrokenBudgetException;
    if ((consecutiveFailures.incrementAndGet() >= DEGRADED_AFTER_FAILURES || broken) && !degraded) {
      degradedSince = clock.getAsLong();
      degraded = true;
      timesDegraded.incrementAndGet();
      client.logDegraded(() -> "budget " + seed.name() + " degraded: decisions come from the "
          + client.fallbackPolicy() + " fallback until Redis answers again; cause: " + describe(cause));
    }
  }

  private static String describe(Throwable cause) {
    if (cause == null) {
      return "unknown";
    }
    if (cause instanceof TimeoutException) {
      return "no answer within the call timeout";
    }
    return cause.getClass().getSimpleName() + (cause.getMessage() == null ? "" : ": " + cause.getMessage());
  }

  /** Permits Redis granted to this client that it never used (dropped, or held at close). */
  long unusedPermits() {
    return unusedPermits.get() + (closed ? 0 : latePermits.get());
  }

  /** How often this budget went from healthy to degraded (for tests and diagnostics). */
  int timesDegraded() {
    return timesDegraded.get();
  }

  @Override
  public boolean isDegraded() {
    return degraded || client.scripts() == null;
  }

  /**
   * One call failed but Redis is not (yet) taken for down: Redis may well have granted it, and a
   * local grant on top would spend the fleet's allowance twice. Unless the policy is ALLOW, refuse
   * it; a late grant from Redis is kept for the next retry.
   */
  private BudgetDecision inDoubt() {
    if (client.fallbackPolicy() == FallbackPolicy.ALLOW) {
      return BudgetDecision.GRANTED_FALLBACK;
    }
    pendingDenied.increment();
    return learned.mode() == BudgetMode.SHADOW ? BudgetDecision.GRANTED_SHADOW : BudgetDecision.DENIED_FALLBACK;
  }

  private BudgetDecision fallback(long now) {
    boolean granted = switch (client.fallbackPolicy()) {
      case ALLOW -> {
        recordOwn(now, 0, 1, 0);
        pendingRetries.increment();
        yield true;
      }
      case DENY -> false;
      case LOCAL -> tryLocalGrant(now);
    };
    if (granted) {
      return BudgetDecision.GRANTED_FALLBACK;
    }
    pendingDenied.increment();
    if (learned.mode() == BudgetMode.SHADOW) {
      recordOwn(now, 0, 1, 0); // shadow never refuses, even from the fallback: it counts "would deny"
      return BudgetDecision.GRANTED_SHADOW;
    }
    return BudgetDecision.DENIED_FALLBACK;
  }

  private boolean hasUnsentCounts() {
    return pendingRequests.sum() > 0 || pendingDenied.sum() > 0 || pendingRetries.sum() > 0
        || resendRequests.sum() > 0 || resendDenied.sum() > 0 || resendRetries.sum() > 0;
  }

  /**
   * The LOCAL fallback: the budget's paced rule (lua/budget.lua) over this client's own first
   * attempts, with its share of the fleet floor (floor over the clients Redis last counted; none
   * before it has said) as the floor; its balance starts from nothing (what is owed kept) each time
   * the fallback takes over, each permit is granted at a random threshold and costs a whole one, and
   * its grants are reported to Redis with the next call.
   */
  private boolean tryLocalGrant(long now) {
    Learned config = learned; // one snapshot: never a mix of an old and a new configuration
    synchronized (ownCounts) {
      if (!fallbackEpisode) {
        // Redis stopped deciding (or never has): start from nothing, keeping what is still owed.
        // What this client saved up while Redis decided is not its share of the fleet's balance (that
        // may well be spent), and N clients each granting a saved-up permit at once would be a burst of
        // N retries whatever the ratio
        updateOwnBalance(now, config);
        ownBalance.drain();
        ownThreshold = threshold();
        fallbackEpisode = true;
      } else {
        updateOwnBalance(now, config);
      }
      if (ownDebt > 0) {
        ownDebt -= ownBalance.withdraw(ownDebt);
        if (ownDebt > 0) {
          return false;
        }
      }
      long held = ownBalance.balance();
      if (held < ownThreshold) {
        return false;
      }
      // each permit is granted once the balance reaches a threshold drawn for it, uniform in (0, 1]
      // permit, and costs a whole permit (what it lacks is owed). A client's share is often a fraction
      // of a permit (one of 1,000 clients, 2 first attempts a second, ratio 0.1: a permit every 5 s):
      // saving up whole ones would leave a fleet that degraded together seconds without a retry, then
      // grant in waves; with a threshold each client's grants fall out of step with the others', and
      // the fleet retries at its ratio from the first second, never ahead of its deposits by more
      // than one permit a client
      if (held >= PPM) {
        ownBalance.take(1);
      } else {
        ownDebt = PPM - held;
        ownBalance.drain();
      }
      ownThreshold = threshold();
      ownCounts.add(now, 0, 1, 0);
      pendingRetries.increment();
      return true;
    }
  }

  /** A grant threshold, uniform in (0, PPM] micro-permits. */
  private long threshold() {
    return Math.max(1, Math.min(PPM, (long) Math.ceil(random.getAsDouble() * PPM)));
  }

  /** Brings the LOCAL fallback's balance up to {@code now}; returns its whole permits. Under ownCounts' lock. */
  private long updateOwnBalance(long now, Learned config) {
    long requests = ownCounts.requests(now) + pendingRequests.sum();
    long clients = config.activeClients();
    long floorPpm = client.fallbackSharesFloor() && clients > 0
        ? config.minRetriesPerSecond() * io.retrybudget.budget.internal.PaceArithmetic.PPM / clients
        : 0;
    // every first attempt seen (sent or pending) deposits once; a count moving from pending into
    // ownCounts in between is seen as neither for a moment, never as both
    long seen = ownRequestsEver + pendingRequests.sum();
    long add = Math.max(0, seen - ownDeposited);
    ownDeposited = Math.max(ownDeposited, seen);
    return ownBalance.update(now, add, requests, ownCounts.spanMillis(now), ownCounts.windowMillis() / 1000,
        config.ratioPpm(), floorPpm);
  }

  /**
   * Moves the pending counts into this client's own window and returns them (requests, denied,
   * fallback retries):
   * under the lock the fallback decides under, so it sees them pending or in the window, never
   * neither (a fallback decision in between saw no first attempts, and its cap of zero emptied the
   * balance: BudgetFaultTest.fallbackPolicies).
   */
  private long[] movePending(long now) {
    synchronized (ownCounts) {
      long requests = pendingRequests.sumThenReset();
      long denied = pendingDenied.sumThenReset();
      recordOwn(now, requests, 0, denied);
      // and what Redis did not apply before: sent again, in ownCounts already (so are fallback grants)
      return new long[] {requests + resendRequests.sumThenReset(), denied + resendDenied.sumThenReset(),
          pendingRetries.sumThenReset() + resendRetries.sumThenReset()};
    }
  }

  /** This client's own first attempts in its window, sent or not (for tests). */
  long ownRequests() {
    long now = clock.getAsLong();
    synchronized (ownCounts) {
      return ownCounts.requests(now) + pendingRequests.sum();
    }
  }

  /** The id budget.lua de-duplicates this client's calls by (for tests). */
  String clientId() {
    return sequence.clientId();
  }

  private void recordOwn(long requests, long retries, long denied) {
    recordOwn(clock.getAsLong(), requests, retries, denied);
  }

  private void recordOwn(long now, long requests, long retries, long denied) {
    if (requests == 0 && retries == 0 && denied == 0) {
      return;
    }
    synchronized (ownCounts) {
      ownCounts.add(now, requests, retries, denied);
      ownRequestsEver += requests;
    }
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    flushTask.cancel(false);
    unusedPermits.addAndGet(latePermits.getAndSet(0));
    BudgetScripts scripts = client.scripts();
    if (scripts != null && hasUnsentCounts()) {
      try {
        // closing is off the hot path: wait longer than a timer flush would
        call(scripts, clock.getAsLong(), 0, 0).get(Math.max(flushTimeoutMillis, CLOSE_FLUSH_TIMEOUT_MILLIS), TimeUnit.MILLISECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } catch (ExecutionException | TimeoutException | RuntimeException e) {
        // the last counts are lost: undercounting is the safe side
      }
    }
    client.forget(this);
  }

  @Override
  public String toString() {
    return "RedisRetryBudget{" + seed.name() + ", client=" + sequence.clientId() + (degraded ? ", degraded" : "") + "}";
  }
}
