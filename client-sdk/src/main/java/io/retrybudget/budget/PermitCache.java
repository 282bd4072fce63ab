package io.retrybudget.budget;

import io.retrybudget.budget.internal.PaceArithmetic;
import io.retrybudget.budget.internal.SlidingWindowCounts;
import io.retrybudget.budget.redis.protocol.BudgetReply;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.DoubleSupplier;

/**
 * What one budget keeps of Redis's answers so that most asks need no call: permits held (the rest of
 * a lease, or a grant that came after its caller was answered), the last refusal ("exhausted", reused
 * for a while), and the sampling that keeps the fleet's permit calls under a third of the budget's
 * call ceiling C. Lock-free: each field is one atomic or volatile value.
 */
final class PermitCache {
  /** At most this many permits in one lease. */
  static final long MAX_LEASE = 64;
  /**
   * The fleet's permit calls aim at C / ASK_SHARE_DIVISOR a second, beside its flushes (0.9 C): a
   * storm then costs about 1.25 C. Half (C / 2) measured 1.62 C, over the 1.5 C bound, at 10,000
   * clients (storm run "storm17" of 2026-12-01, in git history): late probes and lease ends add to the design's share.
   */
  static final int ASK_SHARE_DIVISOR = 3;
  /** A refusal from Redis is reused at most this long (or the exhausted cache time, if longer). */
  static final long MAX_DENIAL_CACHE_MILLIS = 1_000;
  /** Leased permits not used within this long are dropped (at most one bucket of the window). */
  static final long MIN_LEASE_MILLIS = 100;
  private static final long PPM = PaceArithmetic.PPM;

  private final long exhaustedCacheMillis;
  private final DoubleSupplier random;
  private volatile long exhaustedUntil = Long.MIN_VALUE;
  // when the refusal being reused expected the next permit (Redis's next_grant_ms from its answer);
  // NO_ESTIMATE when it did not say. Read with exhaustedUntil, not atomically with it: an estimate
  private volatile long nextPermitAt = NO_ESTIMATE;
  private static final long NO_ESTIMATE = Long.MIN_VALUE;
  // permits Redis granted this client and it has not used yet, until heldUntil
  private final AtomicInteger held = new AtomicInteger();
  private volatile long heldUntil = Long.MIN_VALUE;
  // permits Redis granted (and counted) that this client held and never used: dropped when too old,
  // beyond MAX_LEASE, or held at close (for tests and diagnostics: the safe side of a lease)
  private final AtomicLong unused = new AtomicLong();

  PermitCache(long exhaustedCacheMillis, DoubleSupplier random) {
    this.exhaustedCacheMillis = exhaustedCacheMillis;
    this.random = random;
  }

  /** Whether a refusal from Redis is still reused at {@code now}. */
  boolean refusing(long now) {
    return now < exhaustedUntil;
  }

  /**
   * The refusal reused at {@code now}: it says when the next permit is expected, as Redis said when
   * it refused, less the time since (never below 0).
   */
  BudgetDecision reusedRefusal(long now) {
    long at = nextPermitAt;
    return at == NO_ESTIMATE ? BudgetDecision.DENIED_EXHAUSTED_CACHED
        : BudgetDecision.denied(BudgetDecision.Reason.DENIED_EXHAUSTED_CACHED, Math.max(0, at - now));
  }

  /** Takes a held permit, if one is held and not too old. */
  boolean take(long now) {
    if (held.get() == 0) {
      return false;
    }
    if (now > heldUntil) {
      unused.addAndGet(held.getAndSet(0)); // too old: the allowance it came from has moved on
      return false;
    }
    return held.getAndUpdate(n -> n > 0 ? n - 1 : 0) > 0;
  }

  /** Whether no permit is held (or those held are too old at {@code now}). */
  boolean holdsNone(long now) {
    return held.get() == 0 || now > heldUntil;
  }

  /** Keeps permits Redis granted (a lease, or a late grant) for this client's next asks, until {@code now + life}. */
  void hold(long permits, long now, long life) {
    if (permits <= 0) {
      return;
    }
    heldUntil = Math.max(heldUntil, now + life);
    long kept = Math.min(permits, MAX_LEASE);
    unused.addAndGet(permits - kept);
    held.addAndGet((int) kept);
  }

  /** A grant in time: the permits beyond the one used serve this client's next asks (a lease). */
  void lease(BudgetReply reply, long now, Learned l) {
    hold(reply.granted() - 1, now, leaseMillis(l));
  }

  /**
   * A reply that came after the caller was answered: keep its permits, or its "exhausted". Permits are
   * kept for the window they were counted in: a client whose Redis is slow asks rarely, and a
   * permit held for one bucket only was dropped before its next ask.
   */
  void keepLate(BudgetReply late, long now, Learned l) {
    if (BudgetReply.GRANTED.equals(late.status()) || BudgetReply.SHADOW.equals(late.status())) {
      hold(Math.max(1, late.granted()), now, Math.max(l.windowSeconds() * 1000L, leaseMillis(l)));
    } else if (BudgetReply.DENIED.equals(late.status())) {
      exhausted(now, late, l);
    }
  }

  /** Redis said "exhausted": the refusal is reused for a while. */
  void exhausted(long now, BudgetReply reply, Learned l) {
    nextPermitAt = reply.nextGrantMillis() < 0 ? NO_ESTIMATE : now + reply.nextGrantMillis();
    exhaustedUntil = now + denialCacheMillis(reply, l);
  }

  /** The budget is closed: what it holds is never used. */
  void close() {
    unused.addAndGet(held.getAndSet(0));
  }

  /** Permits Redis granted that were never used (dropped, or held at close), and those held now. */
  long unused() {
    return unused.get() + held.get();
  }

  /**
   * How many permits an ask at {@code now} asks Redis for: 0 when it is not this client's turn (the
   * fleet's permit calls stay under a third of its call ceiling C whatever its size N), a lease where
   * asks are sampled (there each call has to carry more than one permit), else 1.
   *
   * <p>The fleet's asks a second, as this client sees them, are N times its own asks (or first
   * attempts, whichever is more) a second; an ask goes to Redis with probability {@code (C / 3) /
   * that}: always for a fleet that stays under anyway (and for a lone client).
   */
  long permitsToAsk(Learned l, double ownAsksPerSecond) {
    double fleetRate = l.activeClients() <= 1 ? 0 : l.activeClients() * ownAsksPerSecond;
    double share = l.callCeiling() / (double) ASK_SHARE_DIVISOR;
    if (fleetRate <= share) {
      return 1;
    }
    return random.getAsDouble() * fleetRate >= share ? 0 : leaseSize(l);
  }

  /**
   * Permits one permit call asks for: what each of the fleet's permit calls (at most C / 3 a
   * second) has to carry for the fleet to get its refill rate G: {@code ceil(3 G / C)}, 1 to 64.
   */
  static long leaseSize(Learned l) {
    if (l.activeClients() <= 1) {
      return 1;
    }
    long perCall = (ASK_SHARE_DIVISOR * l.refillPpm() + (long) l.callCeiling() * PPM - 1)
        / ((long) l.callCeiling() * PPM);
    return Math.max(1, Math.min(MAX_LEASE, perCall));
  }

  /** How long leased permits are kept: this client's spacing of permit calls (3 N / C s), within [100 ms, one bucket]. */
  private static long leaseMillis(Learned l) {
    long spacing = ASK_SHARE_DIVISOR * l.activeClients() * 1000L / l.callCeiling();
    long bucket = l.windowSeconds() * 1000L / SlidingWindowCounts.BUCKETS;
    return Math.max(MIN_LEASE_MILLIS, Math.min(bucket, spacing));
  }

  /**
   * How long a refusal is reused: until the budget refills a permit, at most 1 s, and at least this
   * client's share of the fleet's permit calls (3 N / C s, as leases), itself at most
   * exhaustedCacheTime. A large fleet reuses a refusal for exhaustedCacheTime (its asks add up to C / 3
   * a second); a small one asks again when the budget can grant (one client of a budget with a floor of
   * 100/s: 10 ms, not 100 ms of refusing the retries the floor pays for).
   */
  private long denialCacheMillis(BudgetReply reply, Learned l) {
    long max = Math.max(exhaustedCacheMillis, MAX_DENIAL_CACHE_MILLIS);
    long next = reply.nextGrantMillis() < 0 ? max : reply.nextGrantMillis();
    long spacing = ASK_SHARE_DIVISOR * Math.max(1, l.activeClients()) * 1000L / Math.max(1, l.callCeiling());
    long min = Math.min(exhaustedCacheMillis, Math.max(1, spacing));
    return Math.max(min, Math.min(max, next));
  }
}
