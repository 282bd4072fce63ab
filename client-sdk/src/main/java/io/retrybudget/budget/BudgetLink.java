package io.retrybudget.budget;

import io.retrybudget.budget.redis.protocol.BudgetCall;
import io.retrybudget.budget.redis.protocol.BudgetReply;
import io.retrybudget.budget.redis.protocol.BudgetScripts;
import io.retrybudget.budget.redis.protocol.ClientSequence;
import io.retrybudget.budget.redis.protocol.CountsInDoubt;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * One budget's calls to Redis and what their replies taught it. A call takes the counts not sent yet
 * (at most what one call may report; the rest go with the next calls), is numbered by this client's
 * {@link ClientSequence}, and an applied reply replaces the {@link Learned} snapshot, tells the
 * {@link FleetRegistry} the fleet's size, the {@link ConfigInForce} the configuration and the
 * {@link FlushSchedule} when to flush next. A reply that applied nothing puts the counts back, and so
 * does a call refused before anyone ran it ({@link BudgetScripts#neverRun}). One whose fate is unknown
 * (a timeout, a connection lost with it in flight) is held in doubt, with its number and the way it
 * went ({@link FleetRegistry.InDoubt}), and the next calls on that way carry its counts: Redis (or the
 * relay) adds them only if that call never ran ({@link CountsInDoubt}), so they are applied once.
 * Another call of unknown fate on the same way joins them under the lower number. One way's are held
 * at a time, for at most {@link #DOUBT_KEPT_MILLIS}; one on another way, an error reply to a carrier,
 * or a port that cannot tell a call's number loses counts: undercounting is the safe side.
 */
final class BudgetLink {
  /**
   * How long counts in doubt wait for a call on their way: well inside the 4 minutes Redis keeps a
   * silent client's entry, past a relay's 1 s failover and return.
   */
  static final long DOUBT_KEPT_MILLIS = 60_000;
  private final BudgetConfig seed;
  private final FleetRegistry fleet;
  private final PendingCounts pending;
  private final LocalFallback own;
  private final FlushSchedule schedule;
  private final ClientSequence sequence;
  private final ConfigInForce configInForce;
  private final AtomicBoolean heard = new AtomicBoolean(); // Redis has applied a call of this budget
  private final AtomicLong callsSent = new AtomicLong();
  // the last call of unknown fate: its counts go with the next call on its way
  private final AtomicReference<FleetRegistry.InDoubt> inDoubt = new AtomicReference<>();
  private final AtomicLong lostInDoubt = new AtomicLong(); // first attempts given up in doubt
  private volatile Learned learned;
  private volatile long remaining = -1; // the paced balance's whole permits in the last applied reply; -1: none yet

  BudgetLink(BudgetConfig seed, FleetRegistry fleet, PendingCounts pending, LocalFallback own, FlushSchedule schedule) {
    this.seed = seed;
    this.fleet = fleet;
    this.pending = pending;
    this.own = own;
    this.schedule = schedule;
    this.sequence = new ClientSequence(Long.toHexString(ThreadLocalRandom.current().nextLong() | Long.MIN_VALUE));
    this.configInForce = new ConfigInForce(seed);
    this.learned = Learned.seed(seed);
  }

  /** Sends what is counted locally and asks for {@code need} permits, {@code want} if there are (0: count only). */
  CompletableFuture<BudgetReply> call(FleetRegistry.Port port, long now, int need, long want) {
    PendingCounts.Taken taken = own.take(now);
    // every call carries the counts, so the timer's next flush is one interval after it
    schedule.called(now, learned, need > 0);
    callsSent.incrementAndGet();
    // numbered and sent under the sequence's lock by BudgetScripts: calls reach Redis in order
    BudgetCall c = new BudgetCall(seed.name(), taken.requests(), taken.denied(), taken.retries(), need,
        Math.max(need, want), seed);
    // counts beyond what one call may report (the trust model's cap) go with the next calls
    pending.sendAgain(taken.requests() - c.requests(), taken.denied() - c.denied(), taken.retries() - c.retries());
    FleetRegistry.InDoubt carried = carriable(now);
    FleetRegistry.Sent on;
    try {
      on = port.send(c, sequence, carried);
    } catch (RuntimeException e) {
      on = new FleetRegistry.Sent(CompletableFuture.failedFuture(e), 0, () -> FleetRegistry.Sent.UNKNOWN, false);
    }
    FleetRegistry.Sent how = on;
    CompletableFuture<BudgetReply> sent = how.reply();
    sent.whenComplete((reply, error) -> {
      if (error == null) {
        if (reply.applied() && how.carried()) {
          inDoubt.compareAndSet(carried, null); // added by Redis, or dropped as applied already: done either way
        }
        return;
      }
      long number = how.number().getAsLong();
      if (number == 0 || BudgetScripts.neverRun(error) || cause(error) instanceof RoutedPort.NoWayException) {
        // refused before anyone ran it: its counts go with the next call (they are in the own window
        // already), and what it carried stays in doubt
        pending.sendAgain(c.requests(), c.denied(), c.retries());
      } else if (answered(error)) {
        // an error reply: the script (or relay) refused it before writing anything. Its counts are lost,
        // as before; what it carried is given up too, so a relay or script that refuses the extra
        // arguments costs one call's counts, not every call's while they wait
        if (how.carried() && inDoubt.compareAndSet(carried, null)) {
          lostInDoubt.addAndGet(carried.counts().requests());
        }
      } else if (number > 0) {
        // run or not, nobody knows: held in doubt, for the next call on its way
        inDoubt(how.way(), number, c, now);
      } else {
        lostInDoubt.addAndGet(c.requests()); // a port that cannot tell the number: lost
      }
    });
    return sent.thenApply(reply -> {
      if (reply.applied()) {
        remaining = Math.max(0, reply.remaining());
        Learned told = Learned.of(reply);
        Learned before = learned;
        learned = told;
        fleet.learnedFleet(seed.name(), told.activeClients(), heard.compareAndSet(false, true));
        configInForce.learn(told);
        schedule.learned(now, before, told);
      } else {
        // Redis applied none of it: the counts go with the next call (they are in the own window already)
        pending.sendAgain(c.requests(), c.denied(), c.retries());
      }
      return reply;
    });
  }

  /**
   * Call {@code number} of {@code c}'s counts, on way {@code way}, is of unknown fate. Joined to counts
   * already in doubt on that way, under the lower number: added only if no call numbered from there on
   * ran on that way (one that ran drops them all: the safe side). Sound because a way's entry only
   * grows: an entry below the lower number means none of them ran. Counts in doubt on another way are
   * given up (one way's at a time).
   */
  private void inDoubt(int way, long number, BudgetCall c, long now) {
    while (true) {
      FleetRegistry.InDoubt was = inDoubt.get();
      FleetRegistry.InDoubt next = was != null && was.way() == way
          ? new FleetRegistry.InDoubt(way, was.counts().with(number, c), Math.min(was.sinceMillis(), now))
          : new FleetRegistry.InDoubt(way, CountsInDoubt.of(number, c), now);
      if (inDoubt.compareAndSet(was, next)) {
        if (was != null && was.way() != way) {
          lostInDoubt.addAndGet(was.counts().requests());
        }
        return;
      }
    }
  }

  /** The counts in doubt to offer the next call, unless held too long (then lost). */
  private FleetRegistry.InDoubt carriable(long now) {
    FleetRegistry.InDoubt d = inDoubt.get();
    if (d != null && now - d.sinceMillis() > DOUBT_KEPT_MILLIS) {
      if (inDoubt.compareAndSet(d, null)) {
        lostInDoubt.addAndGet(d.counts().requests());
      }
      return null;
    }
    return d;
  }

  /** Whether counts of a call of unknown fate wait for a call on their way. */
  boolean holdsDoubt() {
    return inDoubt.get() != null;
  }

  /** First attempts given up in doubt so far: carried by a call whose own fate is unknown, or held too long. */
  long lostInDoubt() {
    return lostInDoubt.get();
  }

  /** Whether the way answered with an error (the call was refused, not lost on its way). */
  private static boolean answered(Throwable error) {
    Throwable c = cause(error);
    return c instanceof io.lettuce.core.RedisCommandExecutionException
        || c instanceof io.retrybudget.budget.redis.protocol.BrokenBudgetException;
  }

  private static Throwable cause(Throwable error) {
    return error instanceof java.util.concurrent.CompletionException && error.getCause() != null ? error.getCause() : error;
  }

  /** The paced balance's whole permits in Redis's last applied reply; empty before one. */
  java.util.OptionalLong remainingPermits() {
    long r = remaining;
    return r < 0 ? java.util.OptionalLong.empty() : java.util.OptionalLong.of(r);
  }

  /** What Redis last said about the budget, ceiling included (the seed and no fleet until it answered). */
  Learned learned() {
    return learned;
  }

  /** The configuration Redis holds, once it has answered. */
  Optional<BudgetConfig> configInForce() {
    return configInForce.get();
  }

  /** Whether Redis has applied a call of this budget (counted it in the fleet). */
  boolean heard() {
    return heard.get();
  }

  /** Script calls sent: hellos, flushes, probes and permit requests. */
  long callsSent() {
    return callsSent.get();
  }

  /** The id budget.lua de-duplicates this client's calls by. */
  String clientId() {
    return sequence.clientId();
  }
}
