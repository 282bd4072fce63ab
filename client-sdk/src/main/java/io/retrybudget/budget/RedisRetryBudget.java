package io.retrybudget.budget;

import io.retrybudget.budget.internal.BudgetArithmetic;
import io.retrybudget.budget.internal.SlidingWindowCounts;
import io.retrybudget.budget.redis.BudgetKeys;
import io.retrybudget.budget.redis.BudgetReply;
import io.retrybudget.budget.redis.LuaScript;
import io.retrybudget.budget.redis.RedisBudgetStore;
import java.util.List;
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
import java.util.logging.Level;
import java.util.logging.Logger;

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
 * </ul>
 */
final class RedisRetryBudget implements RetryBudget {
  private static final Logger LOG = Logger.getLogger(RedisRetryBudget.class.getName());
  static final int DEGRADED_AFTER_FAILURES = 2;
  static final long CLOSE_FLUSH_TIMEOUT_MILLIS = 2_000;
  private final RedisBudgetClient client;
  private final BudgetConfig seed;
  private final String[] keys;
  // the seed configuration as the script takes it, formatted once
  private final String[] seedArgs;
  private final String clientId;
  private final LongSupplier clock;
  private final long callTimeoutMillis;
  private final long flushTimeoutMillis;
  private final long exhaustedCacheMillis;
  private final AtomicLong sequence = new AtomicLong();
  private final LongAdder pendingRequests = new LongAdder();
  private final LongAdder pendingDenied = new LongAdder();
  private final AtomicBoolean flushInFlight = new AtomicBoolean();
  private final SlidingWindowCounts ownCounts;
  private final ScheduledFuture<?> flushTask;

  private volatile long exhaustedUntil = Long.MIN_VALUE;
  // when Redis last said "exhausted": the fallback does not grant on top of a spent fleet budget
  private volatile long lastExhaustedAt = Long.MIN_VALUE / 2; // far past, and safe to subtract from
  // permits Redis granted to calls this client had already given up on, kept for the next retry
  private final java.util.concurrent.atomic.AtomicInteger latePermits = new java.util.concurrent.atomic.AtomicInteger();
  private volatile long latePermitsUntil = Long.MIN_VALUE;
  private final java.util.concurrent.atomic.AtomicInteger consecutiveFailures = new java.util.concurrent.atomic.AtomicInteger();
  private volatile boolean degraded;
  private volatile boolean closed;
  // last configuration and fleet size Redis told us, for the fallback
  private volatile long ratioPpm;
  private volatile int windowSeconds;
  private volatile int minRetriesPerSecond;
  private volatile BudgetMode mode;
  // 0 until Redis has said how many clients share the budget: no floor share before that
  private volatile long activeClients;

  RedisRetryBudget(RedisBudgetClient client, BudgetConfig seed) {
    this.client = client;
    this.seed = seed;
    BudgetKeys k = new BudgetKeys(seed.name());
    this.keys = new String[] {k.config(), k.window(), k.clients()};
    this.seedArgs = new String[] {Long.toString(seed.ratioPpm()), Integer.toString(seed.windowSeconds()),
        Integer.toString(seed.minRetriesPerSecond()), seed.mode().wireName()};
    this.clientId = Long.toHexString(ThreadLocalRandom.current().nextLong() | Long.MIN_VALUE);
    this.clock = client.millisClock();
    this.callTimeoutMillis = client.callTimeout().toMillis();
    this.flushTimeoutMillis = Math.max(callTimeoutMillis, client.flushInterval().toMillis() / 2);
    this.exhaustedCacheMillis = client.exhaustedCacheTime().toMillis();
    this.ratioPpm = seed.ratioPpm();
    this.windowSeconds = seed.windowSeconds();
    this.minRetriesPerSecond = seed.minRetriesPerSecond();
    this.mode = seed.mode();
    this.ownCounts = new SlidingWindowCounts(seed.windowSeconds() * 1000L);
    long interval = client.flushInterval().toMillis();
    this.flushTask = client.scheduler().scheduleAtFixedRate(() -> flush(false), interval, interval, TimeUnit.MILLISECONDS);
    // say hello at once: seeds the configuration, learns the fleet's, warms the script cache and
    // the code path, so the first permit request of a caller is not the slow one
    client.scheduler().execute(() -> flush(true));
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
      return CompletableFuture.completedFuture(BudgetDecision.GRANTED);
    }
    RedisBudgetStore store = client.store();
    if (closed || degraded || store == null) {
      return CompletableFuture.completedFuture(fallback(now));
    }
    CompletableFuture<BudgetReply> call = call(store, now, 1);
    return call.copy().orTimeout(callTimeoutMillis, TimeUnit.MILLISECONDS).handle((reply, error) -> {
      if (error != null) {
        onFailure(error);
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

  /** A reply that came after the caller was answered: keep its permit, or its "exhausted". */
  private void keepLatePermit(BudgetReply late) {
    if (BudgetReply.GRANTED.equals(late.status()) || BudgetReply.SHADOW.equals(late.status())) {
      latePermitsUntil = clock.getAsLong() + bucketMillis();
      latePermits.incrementAndGet();
    } else if (BudgetReply.DENIED.equals(late.status())) {
      long now = clock.getAsLong();
      lastExhaustedAt = now;
      exhaustedUntil = now + exhaustedCacheMillis;
    }
  }

  private boolean takeLatePermit(long now) {
    if (latePermits.get() == 0) {
      return false;
    }
    if (now > latePermitsUntil) {
      latePermits.set(0); // too old: the allowance it came from has moved on
      return false;
    }
    return latePermits.getAndUpdate(n -> n > 0 ? n - 1 : 0) > 0;
  }

  private long bucketMillis() {
    return windowSeconds * 1000L / SlidingWindowCounts.BUCKETS;
  }

  private BudgetDecision decide(BudgetReply reply) {
    if (!BudgetReply.STALE.equals(reply.status())) {
      healthy();
    }
    switch (reply.status()) {
      case BudgetReply.GRANTED:
        recordOwn(0, 1, 0);
        return BudgetDecision.GRANTED;
      case BudgetReply.SHADOW:
        recordOwn(0, 1, 1);
        return BudgetDecision.GRANTED_SHADOW;
      case BudgetReply.DENIED:
        recordOwn(0, 0, 1);
        long now = clock.getAsLong();
        lastExhaustedAt = now;
        exhaustedUntil = now + exhaustedCacheMillis;
        return BudgetDecision.DENIED_EXHAUSTED;
      default:
        // "stale" cannot answer a fresh sequence number unless Redis lost track: trust nothing
        onFailure(null);
        return fallback(clock.getAsLong());
    }
  }

  /** Sends what is counted locally and asks for {@code need} permits (0: count only). */
  private CompletableFuture<BudgetReply> call(RedisBudgetStore store, long now, int need) {
    String needArg = Integer.toString(need);
    CompletableFuture<List<Object>> raw;
    // Numbering and sending under one lock: calls reach Redis in sequence order, so the script's
    // de-duplication never mistakes an on-time call for a late one.
    synchronized (sequence) {
      long requests = pendingRequests.sumThenReset();
      long denied = pendingDenied.sumThenReset();
      recordOwn(now, requests, 0, denied);
      raw = store.run(LuaScript.BUDGET, keys,
          clientId, Long.toString(sequence.incrementAndGet()), Long.toString(requests), Long.toString(denied),
          needArg, needArg,
          seedArgs[0], seedArgs[1], seedArgs[2], seedArgs[3]);
    }
    return raw.thenApply(list -> {
      BudgetReply reply = BudgetReply.parse(list);
      if (!BudgetReply.STALE.equals(reply.status())) {
        learn(reply);
      }
      return reply;
    });
  }

  private void learn(BudgetReply reply) {
    ratioPpm = reply.ratioPpm();
    windowSeconds = reply.windowSeconds();
    minRetriesPerSecond = reply.minRetriesPerSecond();
    mode = BudgetMode.SHADOW.wireName().equals(reply.mode()) ? BudgetMode.SHADOW : BudgetMode.ENFORCE;
    activeClients = Math.max(1, reply.activeClients());
  }

  /** An answer in time: Redis is usable again. (A late answer teaches the config, not health.) */
  private void healthy() {
    consecutiveFailures.set(0);
    degraded = false;
  }

  /** Timer task: sends pending counts; while degraded it is also the probe that ends degradation. */
  void flush(boolean evenIfIdle) {
    RedisBudgetStore store = client.store();
    if (store == null) {
      // never connected: keep the local window current so the fallback sees a window, not a backlog
      recordOwn(clock.getAsLong(), pendingRequests.sumThenReset(), 0, pendingDenied.sumThenReset());
      return;
    }
    if (!flushInFlight.compareAndSet(false, true)) {
      return;
    }
    try {
      if (!evenIfIdle && !degraded && pendingRequests.sum() == 0 && pendingDenied.sum() == 0) {
        flushInFlight.set(false);
        return; // an idle healthy client costs Redis nothing
      }
      call(store, clock.getAsLong(), 0)
          .orTimeout(flushTimeoutMillis, TimeUnit.MILLISECONDS)
          .whenComplete((reply, error) -> {
            if (error != null || BudgetReply.STALE.equals(reply.status())) {
              onFailure(error);
            } else {
              healthy();
            }
            flushInFlight.set(false);
          });
    } catch (RuntimeException e) {
      onFailure(e);
      flushInFlight.set(false);
    }
  }

  /**
   * One failed or timed-out call answers from the fallback; a second in a row marks the budget
   * degraded: then decisions stop asking Redis until a flush gets through.
   */
  private void onFailure(Throwable cause) {
    if (consecutiveFailures.incrementAndGet() >= DEGRADED_AFTER_FAILURES && !degraded) {
      degraded = true;
      LOG.log(Level.FINE, () -> "budget " + seed.name() + " degraded: " + cause);
    }
  }

  @Override
  public boolean isDegraded() {
    return degraded || client.store() == null;
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
    return mode == BudgetMode.SHADOW ? BudgetDecision.GRANTED_SHADOW : BudgetDecision.DENIED_FALLBACK;
  }

  private BudgetDecision fallback(long now) {
    boolean granted = switch (client.fallbackPolicy()) {
      case ALLOW -> {
        recordOwn(now, 0, 1, 0);
        yield true;
      }
      case DENY -> false;
      case LOCAL -> tryLocalGrant(now);
    };
    if (granted) {
      return BudgetDecision.GRANTED_FALLBACK;
    }
    pendingDenied.increment();
    if (mode == BudgetMode.SHADOW) {
      recordOwn(now, 0, 1, 0); // shadow never refuses, even from the fallback: it counts "would deny"
      return BudgetDecision.GRANTED_SHADOW;
    }
    return BudgetDecision.DENIED_FALLBACK;
  }

  /**
   * The LOCAL fallback: the budget's ratio over this client's own first attempts, plus its share of
   * the fleet floor (floor over the clients Redis last counted; none before it has said), over this
   * client's own window; nothing within one window after Redis said "exhausted".
   */
  private boolean tryLocalGrant(long now) {
    if (now - lastExhaustedAt < ownCounts.windowMillis()) {
      // Redis said "exhausted" less than a window ago: this client's share of the fleet budget is
      // spent too, whatever its own counts say (Redis's grants went to other clients as well)
      return false;
    }
    synchronized (ownCounts) {
      long requests = ownCounts.requests(now) + pendingRequests.sum();
      long clients = activeClients;
      long floor = client.fallbackSharesFloor() && clients > 0
          ? (long) minRetriesPerSecond * (ownCounts.windowMillis() / 1000) / clients
          : 0;
      long allowance = BudgetArithmetic.allowance(ratioPpm, requests, 0, 0) + floor;
      if (BudgetArithmetic.admits(allowance, ownCounts.retries(now), 1)) {
        ownCounts.add(now, 0, 1, 0);
        return true;
      }
      return false;
    }
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
    }
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    flushTask.cancel(false);
    RedisBudgetStore store = client.store();
    if (store != null && (pendingRequests.sum() > 0 || pendingDenied.sum() > 0)) {
      try {
        // closing is off the hot path: wait longer than a timer flush would
        call(store, clock.getAsLong(), 0).get(Math.max(flushTimeoutMillis, CLOSE_FLUSH_TIMEOUT_MILLIS), TimeUnit.MILLISECONDS);
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
    return "RedisRetryBudget{" + seed.name() + ", client=" + clientId + (degraded ? ", degraded" : "") + "}";
  }
}
