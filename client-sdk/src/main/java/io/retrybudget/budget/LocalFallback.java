package io.retrybudget.budget;

import io.retrybudget.budget.internal.PaceArithmetic;
import io.retrybudget.budget.internal.PacedBalance;
import io.retrybudget.budget.internal.SlidingWindowCounts;
import java.util.function.DoubleSupplier;

/**
 * One budget's own counts and the fallback that decides from them when Redis does not.
 *
 * <ul>
 *   <li>The own window: this client's first attempts, grants and refusals, sent or not (for its
 *       fallback, and for the rate of asks that sampling and leases go by).
 *   <li>The LOCAL fallback: the budget's paced rule (lua/budget.lua) over this client's own first
 *       attempts, with its share of the fleet floor (floor over the clients Redis last counted; none
 *       before it has said) as the floor. Its balance starts from nothing (what is owed kept) each
 *       time the fallback takes over (an episode, ended by an answer from Redis in time), each permit
 *       is granted at a random threshold and costs a whole one, and its grants are reported to Redis
 *       with the next call.
 * </ul>
 *
 * Everything here is guarded by one lock (this object's), under which the pending counts also move
 * into the window ({@link #take}).
 */
final class LocalFallback {
  private static final long PPM = PaceArithmetic.PPM;
  private final PendingCounts pending;
  private final DoubleSupplier random;
  private final boolean sharesFloor;
  private final SlidingWindowCounts own;
  private final PacedBalance balance = new PacedBalance();
  private long requestsEver; // first attempts ever put in the window
  private long deposited; // of those and the pending ones, how many went into the balance
  private long debt; // micro-permits granted ahead of the deposits, paid from the next ones
  private long threshold; // what the balance must hold for the next grant, micro-permits
  // the fallback is deciding since its balance was last started from nothing
  private volatile boolean episode;

  LocalFallback(PendingCounts pending, long windowMillis, DoubleSupplier random, boolean sharesFloor) {
    this.pending = pending;
    this.random = random;
    this.sharesFloor = sharesFloor;
    this.own = new SlidingWindowCounts(windowMillis);
  }

  /** Records counts in the own window (the pending ones go through {@link #take}). */
  synchronized void record(long now, long requests, long retries, long denied) {
    if (requests == 0 && retries == 0 && denied == 0) {
      return;
    }
    own.add(now, requests, retries, denied);
    requestsEver += requests;
  }

  /**
   * Takes the pending counts for a call and puts the new ones in the own window, under the lock the
   * fallback decides under, so it sees them pending or in the window, never neither (a decision in
   * between saw no first attempts, and its cap of zero emptied the balance:
   * BudgetFaultTest.fallbackPolicies).
   */
  synchronized PendingCounts.Taken take(long now, Learned l) {
    // what was kept longer than the window in force is dropped
    PendingCounts.Taken t = pending.take(now, l.windowSeconds() * 1000L);
    record(now, t.newRequests(), 0, t.newDenied());
    return t;
  }

  /** This client's own first attempts in its window, sent or not. */
  synchronized long requests(long now) {
    return own.requests(now) + pending.requests();
  }

  /** This client's asks a second (or first attempts, whichever is more), over its window. */
  synchronized double asksPerSecond(long now) {
    long firstAttempts = own.requests(now) + pending.requests();
    long asks = own.retries(now) + own.denied(now) + pending.denials();
    return Math.max(firstAttempts, asks) * 1000.0 / own.windowMillis();
  }

  /** An answer from Redis in time: the next time the fallback decides, it starts from nothing again. */
  void endEpisode() {
    episode = false;
  }

  /**
   * A decision of the fallback {@code policy} under {@code config}: grants are counted here and
   * reported to Redis with the next call, refusals counted as denied.
   */
  BudgetDecision decide(long now, FallbackPolicy policy, Learned config) {
    long next = switch (policy) {
      case ALLOW -> {
        record(now, 0, 1, 0);
        pending.fallbackGrant();
        yield GRANT;
      }
      case DENY -> NO_ESTIMATE; // it never grants: no next permit to expect
      case LOCAL -> tryGrant(now, config);
    };
    if (next == GRANT) {
      return BudgetDecision.GRANTED_FALLBACK;
    }
    pending.denied();
    if (config.mode() == BudgetMode.SHADOW) {
      record(now, 0, 1, 0); // shadow never refuses, even from the fallback: it counts "would deny"
      return BudgetDecision.GRANTED_SHADOW;
    }
    return BudgetDecision.denied(BudgetDecision.Reason.DENIED_FALLBACK, next);
  }

  /** What {@link #tryGrant} answers for a grant. */
  private static final long GRANT = Long.MIN_VALUE;
  private static final long NO_ESTIMATE = -1;

  /**
   * {@link #GRANT}, or for a refusal the ms until the balance pays what is owed and reaches the next
   * threshold at its refill rate ({@link #NO_ESTIMATE} when it does not refill by itself).
   */
  private synchronized long tryGrant(long now, Learned config) {
    startOrUpdate(now, config);
    if (debt > 0) {
      debt -= balance.withdraw(debt);
      if (debt > 0) {
        return millisUntil(debt + threshold);
      }
    }
    long held = balance.balance();
    if (held < threshold) {
      return millisUntil(threshold - held);
    }
    // each permit is granted once the balance reaches a threshold drawn for it, uniform in (0, 1]
    // permit, and costs a whole permit (what it lacks is owed). A client's share is often a fraction
    // of a permit (one of 1,000 clients, 2 first attempts a second, ratio 0.1: a permit every 5 s):
    // saving up whole ones would leave a fleet that degraded together seconds without a retry, then
    // grant in waves; with a threshold each client's grants fall out of step with the others', and
    // the fleet retries at its ratio from the first second, never ahead of its deposits by more
    // than one permit a client
    if (held >= PPM) {
      balance.take(1);
    } else {
      debt = PPM - held;
      balance.drain();
    }
    threshold = threshold();
    own.add(now, 0, 1, 0);
    pending.fallbackGrant();
    return GRANT;
  }

  /** Ms until the balance has gained {@code micros} more micro-permits at its refill rate; NO_ESTIMATE: never. */
  private long millisUntil(long micros) {
    long rate = balance.refillRate();
    return rate <= 0 ? NO_ESTIMATE : (micros * 1000 + rate - 1) / rate;
  }

  /**
   * A permit Redis granted was used while the fallback decides: the LOCAL fallback pays for it from
   * its balance (what it lacks is owed), so Redis's late grants and the fallback's own add up to the
   * fallback's share, not to more.
   */
  synchronized void charge(long now, Learned config) {
    startOrUpdate(now, config);
    debt += PPM - balance.withdraw(PPM);
  }

  /**
   * Brings the balance up to {@code now}; at the start of an episode (Redis stopped deciding, or never
   * has) empties it, keeping what is still owed. What this client saved up while Redis decided is
   * not its share of the fleet's balance (that may well be spent), and N clients each granting a
   * saved-up permit at once would be a burst of N retries whatever the ratio.
   */
  private void startOrUpdate(long now, Learned config) {
    update(now, config);
    if (!episode) {
      balance.drain();
      threshold = threshold();
      episode = true;
    }
  }

  /** A grant threshold, uniform in (0, PPM] micro-permits. */
  private long threshold() {
    return Math.max(1, Math.min(PPM, (long) Math.ceil(random.getAsDouble() * PPM)));
  }

  private void update(long now, Learned config) {
    long requests = own.requests(now) + pending.requests();
    long clients = config.activeClients();
    long floorPpm = sharesFloor && clients > 0 ? config.minRetriesPerSecond() * PPM / clients : 0;
    // every first attempt seen (sent or pending) deposits once; a count moving from pending into
    // the window in between is seen as neither for a moment, never as both
    long seen = requestsEver + pending.requests();
    long add = Math.max(0, seen - deposited);
    deposited = Math.max(deposited, seen);
    balance.update(now, add, requests, own.spanMillis(now), own.windowMillis() / 1000, config.ratioPpm(), floorPpm);
  }
}
