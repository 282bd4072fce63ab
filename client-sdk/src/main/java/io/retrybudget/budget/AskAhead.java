package io.retrybudget.budget;

import io.retrybudget.budget.internal.SlidingWindowCounts;
import io.retrybudget.budget.redis.protocol.BudgetReply;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Decisions ahead of the asks, for a budget a relay serves: a client that asks again within
 * {@link #ACTIVE_MILLIS} of its last ask (one in a storm) decides every ask from what it holds, and keeps
 * an answer ready by asking in the background, so that no retry waits for a round trip.
 *
 * <ul>
 *   <li>A permit held (a lease, or one asked for ahead) is taken at once; when the last one goes, the next
 *       is asked for in the background.
 *   <li>A refusal the relay gave is reused, as any refusal ({@link PermitCache}).
 *   <li>With neither, the ask is refused at once and one ask goes in the background (one at a time): its
 *       grant is held for this client's next ask, its refusal reused. The refusal made at once is not
 *       counted as a denial: the ask that goes stands for it (the relay sizes its draws by asks). In
 *       shadow mode that ask is answered {@code shadow} as at once; nothing is held.
 * </ul>
 *
 * The fleet's retries are what the relays hand out either way (in a storm every draw empties the
 * budget's balance): asking ahead moves a grant from this ask to the client's next, within
 * {@link #lifeMillis}; a permit not used by then is dropped, counted and never used (the safe side). A
 * client that asks less often than once a {@link #ACTIVE_MILLIS} (a failure now and then) waits for its
 * answer as before, so a lone retry is never refused for want of a permit asked ahead. Through Redis
 * directly nothing changes: asks are sampled there ({@link PermitCache#permitsToAsk}).
 */
final class AskAhead {
  /**
   * A client that asked within this long decides its next ask from what it holds. Asks that come at
   * random (a Poisson stream of 2 a second) leave a gap this long before e^-6 = 0.25 % of them, each
   * then waiting for its answer; a permit asked ahead is held at least this long, so a client asking
   * more often than this finds the one asked for at its last ask.
   */
  static final long ACTIVE_MILLIS = 3_000;
  /** An ask ahead asks for the permits this client's asks would take in this long (at least 1). */
  static final long HORIZON_MILLIS = 500;

  private final EngineSettings settings;
  private final BudgetLink link;
  private final PermitCache permits;
  private final HealthTracker health;
  private final AtomicBoolean inFlight = new AtomicBoolean();
  private final java.util.concurrent.atomic.LongAdder decided = new java.util.concurrent.atomic.LongAdder();
  private volatile long lastAsk = Long.MIN_VALUE;

  AskAhead(EngineSettings settings, BudgetLink link, PermitCache permits, HealthTracker health) {
    this.settings = settings;
    this.link = link;
    this.permits = permits;
    this.health = health;
  }

  /**
   * An ask at {@code now}: whether it is decided from what the client holds (a relay served the last
   * call, and the client asked within {@link #ACTIVE_MILLIS}). Every ask is noted.
   */
  boolean decides(long now) {
    long last = lastAsk;
    lastAsk = now;
    boolean ahead = link.viaRelay() && last != Long.MIN_VALUE && now - last < ACTIVE_MILLIS;
    if (ahead) {
      decided.increment();
    }
    return ahead;
  }

  /** Asks decided ahead so far (for tests and benchmarks). */
  long decided() {
    return decided.sum();
  }

  /** Whether an ask is on its way (for tests). */
  boolean asking() {
    return inFlight.get();
  }

  /**
   * Asks in the background for {@code want} permits (at least {@link #want}), unless an ask is on its way
   * already: a grant is held for this client's next asks, a refusal reused, a failure told to the health
   * tracker as any call's.
   */
  void ask(FleetRegistry.Port port, long now, long want) {
    if (!inFlight.compareAndSet(false, true)) {
      return;
    }
    CompletableFuture<BudgetReply> call;
    try {
      call = link.call(port, now, 1, want);
    } catch (RuntimeException e) {
      inFlight.set(false);
      health.failure(e);
      return;
    }
    settings.timer().within(call, settings.callTimeoutMillis()).whenComplete((reply, error) -> {
      inFlight.set(false);
      long at = settings.clock().getAsLong();
      if (error == null) {
        answered(reply, at);
        return;
      }
      health.failure(error);
      if (error instanceof TimeoutException) {
        call.thenAccept(late -> {
          if (late.applied()) {
            health.on(RedisHealth.Event.REPLY_LATE, null);
          }
          permits.keepLate(late, settings.clock().getAsLong(), link.learned());
        });
      }
    });
  }

  private void answered(BudgetReply reply, long now) {
    if (!reply.applied()) {
      return; // its counts go with the next call (BudgetLink); the next ask asks again
    }
    health.on(RedisHealth.Event.REPLY_IN_TIME, null);
    Learned l = link.learned();
    if (BudgetReply.GRANTED.equals(reply.status())) {
      permits.hold(Math.max(1, reply.granted()), now, lifeMillis(l));
    } else if (BudgetReply.DENIED.equals(reply.status())) {
      permits.exhausted(now, reply, l);
    }
  }

  /**
   * Permits an ask ahead asks for at least, for a client asking {@code asksPerSecond}: its asks in
   * {@link #HORIZON_MILLIS}, 1 to {@link PermitCache#MAX_LEASE}.
   */
  static long want(double asksPerSecond) {
    double asks = Math.ceil(asksPerSecond * HORIZON_MILLIS / 1000.0);
    return !(asks >= 1) ? 1 : (long) Math.min(PermitCache.MAX_LEASE, asks);
  }

  /** How long a permit asked for ahead is held: one bucket of the window, at least {@link #ACTIVE_MILLIS}. */
  static long lifeMillis(Learned l) {
    return Math.max(ACTIVE_MILLIS, l.windowSeconds() * 1000L / SlidingWindowCounts.BUCKETS);
  }
}
