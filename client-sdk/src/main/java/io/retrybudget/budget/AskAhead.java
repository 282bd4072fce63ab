package io.retrybudget.budget;

import io.retrybudget.budget.internal.SlidingWindowCounts;
import io.retrybudget.budget.redis.protocol.BudgetReply;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/**
 * Decisions ahead of the asks, for a budget a relay serves: a client that asks again within
 * {@link #ACTIVE_MILLIS} of its last ask, its relay having refused one of its asks within that time or
 * holding no permit at its last reply (a storm), decides at once, and keeps an answer ready by asking
 * in the background, so that no retry in a storm waits for a round trip.
 *
 * <ul>
 *   <li>A permit held is taken at once; when the last one goes (or a round trip was granted), the next
 *       is asked for in the background.
 *   <li>A refusal the relay gave is reused, as any refusal ({@link PermitCache}).
 *   <li>With neither, while the relay refused one of this client's asks lately, or said its pool was
 *       empty, or one of its asks was refused lately for not being its turn (its relay's clients ask
 *       more than its call ceiling lets through: {@link PermitCache#permitsToAsk}, where a sampled-in
 *       ask of a client the relay had not refused waited a round trip, 7.8 % of a storm's decisions
 *       at 20,000 clients through 4 relays taking 4,000 calls a second each), the ask is refused at
 *       once and one ask goes in the background (one at a time): its grant
 *       is held for this client's next ask, its refusal reused. Each refusal is counted once: by the ask
 *       that went for it if that ask is refused (the relay counts it), else as a denial the client
 *       reports (no ask went: one was on its way; or the ask was granted, for the next ask). In shadow
 *       mode the refusal is {@code GRANTED_SHADOW}, as the relay's answer would be.
 *   <li>With neither while the relay has not refused this client lately and holds permits (a budget
 *       with permits to spare), the ask waits for its answer as before: a lone retry, or a burst of
 *       them, is never refused for want of a permit asked ahead.
 * </ul>
 *
 * The fleet's retries are what the relays hand out either way (in a storm every draw empties the
 * budget's balance): asking ahead moves a grant from one ask to the client's next, within
 * {@link #lifeMillis}; a permit not used by then is dropped, counted and never used (the safe side). An
 * ask in the background that no refusal stood for (after a take) and that is refused was counted by the
 * relay as a denial: the next reuse of that refusal is not counted again. Only while the budget is
 * HEALTHY: after a failed call the ordinary path answers (the fallback policy's in-doubt decision).
 * Through Redis directly nothing changes: asks are sampled there ({@link PermitCache#permitsToAsk}).
 */
final class AskAhead {
  /**
   * A client that asked within this long decides its next ask ahead. Asks that come at random (a
   * Poisson stream of 2 a second) leave a gap this long before e^-6 = 0.25 % of them, each then waiting
   * for its answer; a permit asked ahead is held this long (within the window), so a client asking more
   * often finds the one asked for at its last ask.
   */
  static final long ACTIVE_MILLIS = 3_000;

  private final EngineSettings settings;
  private final BudgetLink link;
  private final PermitCache permits;
  private final HealthTracker health;
  private final LocalFallback own;
  private final PendingCounts pending;
  private final AtomicBoolean inFlight = new AtomicBoolean();
  // denials the relay counted for asks in the background no decision stood for, each set against the
  // next refusal (which is then not counted again)
  private final AtomicInteger credits = new AtomicInteger();
  private final LongAdder decided = new LongAdder();
  private volatile long lastAsk = Long.MIN_VALUE;
  private volatile long lastRefusal = Long.MIN_VALUE; // when the relay last refused this client's ask
  private volatile long lastSampledOut = Long.MIN_VALUE; // when an ask was refused for not being its turn

  AskAhead(EngineSettings settings, BudgetLink link, PermitCache permits, HealthTracker health, LocalFallback own,
      PendingCounts pending) {
    this.settings = settings;
    this.link = link;
    this.permits = permits;
    this.health = health;
    this.own = own;
    this.pending = pending;
  }

  /**
   * An ask at {@code now}: whether it may be decided ahead (a relay answered the last call, and the
   * client asked within {@link #ACTIVE_MILLIS}). Every ask is noted.
   */
  boolean active(long now) {
    long last = lastAsk;
    lastAsk = now;
    return link.viaRelay() && last != Long.MIN_VALUE && now - last < ACTIVE_MILLIS;
  }

  /**
   * Whether an ask active at {@code now} with nothing held is refused at once: the budget is HEALTHY and
   * the relay refused one of this client's asks within {@link #ACTIVE_MILLIS}, or its last reply said
   * its pool was empty (a storm). A client the relay has not refused lately, whose relay holds permits
   * (a budget with permits to spare), waits for its answer.
   */
  boolean refusesAtOnce(RedisHealth.State h, long now) {
    if (h != RedisHealth.State.HEALTHY || !(refusedLately(now) || sampledOutLately(now) || link.remaining() == 0)) {
      return false;
    }
    decided.increment();
    return true;
  }

  /**
   * An ask of this client was refused at {@code now} for not being its turn to ask
   * ({@link PermitCache#permitsToAsk}: the relay's clients ask more than its call ceiling lets through).
   */
  void sampledOut(long now) {
    if (lastSampledOut != now) {
      lastSampledOut = now;
    }
  }

  /** Whether an ask of this client was sampled out within {@link #ACTIVE_MILLIS} of {@code now}. */
  private boolean sampledOutLately(long now) {
    long last = lastSampledOut;
    return last != Long.MIN_VALUE && now - last < ACTIVE_MILLIS;
  }

  /** The relay refused an ask of this client at {@code now}. */
  void refused(long now) {
    lastRefusal = now;
  }

  /** Whether the relay refused an ask of this client within {@link #ACTIVE_MILLIS} of {@code now} (for tests). */
  boolean refusedLately(long now) {
    long last = lastRefusal;
    return last != Long.MIN_VALUE && now - last < ACTIVE_MILLIS;
  }

  /** A decision ahead that took a permit held (for tests and benchmarks). */
  void decidedFromHeld() {
    decided.increment();
  }

  /**
   * Denials the relay counted for asks in the background that no decision stood for, not yet set against
   * a refusal (for tests: each refusal is counted once, and each of these once more).
   */
  int refusalCredits() {
    return credits.get();
  }

  /**
   * Whether the relay counted a denial for an ask in the background that no decision stood for: this
   * refusal is that one, not counted again (takes one such credit).
   */
  boolean refusalCounted() {
    return credits.getAndUpdate(n -> n > 0 ? n - 1 : 0) > 0;
  }

  /** Asks decided ahead so far (for tests and benchmarks). */
  long decided() {
    return decided.sum();
  }

  /**
   * Asks in the background for {@code want} permits, unless an ask is on its way already (then returns
   * false): a grant is held for this client's next asks, a refusal reused, a failure told to the health
   * tracker as any call's. {@code forRefusal}: the ask stands for a refusal made at once (its denial, if
   * refused, is that refusal's).
   */
  boolean ask(FleetRegistry.Port port, long now, long want, boolean forRefusal) {
    if (!inFlight.compareAndSet(false, true)) {
      return false;
    }
    CompletableFuture<BudgetReply> call;
    try {
      call = link.call(port, now, 1, want);
    } catch (RuntimeException e) {
      inFlight.set(false);
      health.failure(e);
      return false; // no ask stands for the refusal: the caller counts it
    }
    settings.timer().within(call, settings.callTimeoutMillis()).whenComplete((reply, error) -> {
      try {
        if (error == null) {
          answered(reply, settings.clock().getAsLong(), forRefusal);
          return;
        }
        health.failure(error);
        if (forRefusal) {
          pending.denied(); // no reply counted the refusal made at once
        }
        if (error instanceof TimeoutException) {
          call.thenAccept(late -> {
            if (late.applied()) {
              health.on(RedisHealth.Event.REPLY_LATE, null);
            }
            if (late.applied() && (BudgetReply.DENIED.equals(late.status()) || BudgetReply.SHADOW.equals(late.status()))) {
              // the relay counted a denial no decision stands for now (a refusal made at once was counted
              // when the ask failed): the next refusal is not counted again
              credits.incrementAndGet();
            }
            if (!BudgetReply.SHADOW.equals(late.status())) {
              permits.keepLate(late, settings.clock().getAsLong(), link.learned());
            }
          });
        }
      } finally {
        inFlight.set(false);
      }
    });
    return true;
  }

  private void answered(BudgetReply reply, long now, boolean forRefusal) {
    if (!reply.applied()) {
      if (forRefusal) {
        pending.denied(); // the refusal made at once: nothing counted it
      }
      return; // its counts go with the next call (BudgetLink); the next ask asks again
    }
    health.on(RedisHealth.Event.REPLY_IN_TIME, null);
    Learned l = link.learned();
    switch (reply.status()) {
      case BudgetReply.GRANTED -> {
        permits.hold(Math.max(1, reply.granted()), now, lifeMillis(l));
        if (forRefusal) {
          pending.denied(); // the refusal made at once, which a granted ask does not count
        }
      }
      case BudgetReply.SHADOW -> {
        if (forRefusal) {
          own.record(now, 0, 1, 1); // the shadow grant made at once, as the relay counted it
        } else {
          credits.incrementAndGet(); // counted by the relay as a refusal no decision stands for
        }
      }
      case BudgetReply.DENIED -> {
        own.record(now, 0, 0, 1);
        permits.exhausted(now, reply, l);
        refused(now);
        if (!forRefusal) {
          credits.incrementAndGet();
        }
      }
      default -> { }
    }
  }

  /** How long a permit asked for ahead is held: {@link #ACTIVE_MILLIS} or one bucket, within the window. */
  static long lifeMillis(Learned l) {
    long window = l.windowSeconds() * 1000L;
    return Math.min(window, Math.max(ACTIVE_MILLIS, window / SlidingWindowCounts.BUCKETS));
  }
}
