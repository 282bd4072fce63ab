package io.retrybudget.budget;

import io.retrybudget.budget.redis.protocol.BudgetCall;
import io.retrybudget.budget.redis.protocol.BudgetReply;
import io.retrybudget.budget.redis.protocol.BudgetScripts;
import io.retrybudget.budget.redis.protocol.ClientSequence;
import io.retrybudget.budget.redis.protocol.RelayHeld;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One budget's calls to Redis and what their replies taught it. A call takes the counts not sent yet
 * (at most what one call may report; the rest go with the next calls), is numbered by this client's
 * {@link ClientSequence}, and an applied reply replaces the {@link Learned} snapshot, tells the
 * {@link FleetRegistry} the fleet's size, the {@link ConfigInForce} the configuration and the
 * {@link FlushSchedule} when to flush next. A reply that applied nothing puts the counts back, and so
 * does a call refused before anyone ran it ({@link BudgetScripts#neverRun}). One whose fate is unknown
 * (a timeout, a connection lost with it in flight) is held in doubt with its number and the way it
 * went ({@link HeldDoubts}), and the next calls on that way carry its counts: Redis (or the relay) adds
 * them only if that call never ran ({@code CountsInDoubt}), so they are applied once. One way's are
 * held at a time, at most {@code BudgetScripts.MAX_CARRIED}, each for at most
 * {@link CallsInDoubt#KEPT_MILLIS}; beyond that, on another way, carried by a call answered with an error
 * or through a port that cannot tell a call's number, counts are lost: undercounting is the safe side.
 */
final class BudgetLink {
  private final BudgetConfig seed;
  private final FleetRegistry fleet;
  private final PendingCounts pending;
  private final LocalFallback own;
  private final FlushSchedule schedule;
  private final ClientSequence sequence;
  private final ConfigInForce configInForce;
  private final AtomicBoolean heard = new AtomicBoolean(); // Redis has applied a call of this budget
  private final AtomicLong callsSent = new AtomicLong();
  private final HeldDoubts doubts; // calls of unknown fate: their counts go with the next calls on their way
  private final RelayHeld relayHeld; // counts relays took and Redis may not have yet
  private volatile Learned learned;
  private volatile long remaining = -1; // the paced balance's whole permits in the last applied reply; -1: none yet
  private volatile boolean viaRelay; // a relay applied the last applied call (its reply had a tag)

  BudgetLink(BudgetConfig seed, FleetRegistry fleet, PendingCounts pending, LocalFallback own, FlushSchedule schedule) {
    this.seed = seed;
    this.fleet = fleet;
    this.pending = pending;
    this.own = own;
    this.schedule = schedule;
    this.sequence = new ClientSequence(Long.toHexString(ThreadLocalRandom.current().nextLong() | Long.MIN_VALUE));
    this.configInForce = new ConfigInForce(seed);
    this.learned = Learned.seed(seed);
    this.relayHeld = new RelayHeld(sequence.clientId());
    // a call of unknown fate given up on its way that went, if at all, into a relay's batch is kept as
    // that relay's counts (carried as held items): it is not lost when that relay is gone
    this.doubts = new HeldDoubts((held, at) -> {
      if (held.origin() == null) {
        return false;
      }
      relayHeld.adopt(held.origin(), held.counts().requests(), held.counts().denied(), held.counts().retries(), at);
      return true;
    });
  }

  /** Sends what is counted locally and asks for {@code need} permits, {@code want} if there are (0: count only). */
  CompletableFuture<BudgetReply> call(FleetRegistry.Port port, long now, int need, long want) {
    PendingCounts.Taken taken = own.take(now, learned);
    // every call carries the counts, so the timer's next flush is one interval after it
    schedule.called(now, learned, need > 0);
    callsSent.incrementAndGet();
    // numbered and sent under the sequence's lock by BudgetScripts: calls reach Redis in order
    BudgetCall c = new BudgetCall(seed.name(), taken.requests(), taken.denied(), taken.retries(), need,
        Math.max(need, want), seed);
    // counts beyond what one call may report (the trust model's cap) go with the next calls
    pending.sendAgain(taken, taken.requests() - c.requests(), taken.denied() - c.denied(), taken.retries() - c.retries(),
        false);
    CallsInDoubt carried = doubts.offer(now);
    FleetRegistry.Sent on;
    try {
      on = port.send(c, sequence, carried, way -> relayHeld.offer(way, now));
    } catch (RuntimeException e) {
      on = new FleetRegistry.Sent(CompletableFuture.failedFuture(e), 0, () -> FleetRegistry.Sent.UNKNOWN, false);
    }
    FleetRegistry.Sent how = on;
    CompletableFuture<BudgetReply> sent = how.reply();
    sent.whenComplete((reply, error) -> {
      if (error == null) {
        if (reply.applied() && how.carried() && how.judged().getAsBoolean()) {
          doubts.answered(carried); // each added, or dropped as run already: done either way
        }
        if (reply.applied()) {
          // a relay's counts are kept until it settles their batch; Redis's reply judged the held items
          String gone = relayHeld.applied(how.way(), how.tag().get(), how.connection().getAsLong(),
              how.held().items(), c, now);
          if (gone != null) {
            doubts.relayGone(how.way(), gone, now); // its way answers as another relay: its calls in doubt are kept for it
          }
        }
        // applied but not surely judged (a relay's first report of this client on a connection): they
        // stay, carried by the next calls, never added twice
        return;
      }
      long number = how.number().getAsLong();
      if (number == 0 || BudgetScripts.neverRun(error) || cause(error) instanceof RoutedPort.NoWayException
          || (port.routed() && BudgetScripts.refusedAsOtherVersion(error))) {
        // refused before anyone ran it: its counts go with the next call (they are in the own window
        // already), and what it carried stays in doubt
        pending.sendAgain(taken, c.requests(), c.denied(), c.retries(), true);
      } else if (answered(error)) {
        // an error reply: the script (or relay) refused it before writing anything. Its counts are lost,
        // as before; what it carried is given up too, so a relay or script that refuses the extra
        // arguments costs one call's counts, not every call's while they wait
        if (how.carried()) {
          doubts.refused(carried);
        }
      } else if (number > 0) {
        // run or not, nobody knows: held in doubt, for the next calls on its way (what it carried stays:
        // carried again, it is never added twice)
        // what the way's last tag told, if this call went on the same connection: the relay process and
        // a lower bound of the batch it went into, if it ran there
        RelayHeld.Known known = how.held().known();
        long connection = how.connection().getAsLong();
        doubts.unknown(how.way(), number, c, now,
            known != null && connection > 0 && known.connection() == connection ? known : null);
      } else {
        doubts.lostWithout(c.requests()); // a port that cannot tell the number: lost
      }
    });
    return sent.thenApply(reply -> {
      if (reply.applied()) {
        remaining = Math.max(0, reply.remaining());
        viaRelay = how.tag().get() != null;
        Learned told = Learned.of(reply);
        Learned before = learned;
        learned = told;
        fleet.learnedFleet(seed.name(), told.activeClients(), heard.compareAndSet(false, true));
        configInForce.learn(told);
        schedule.learned(now, before, told);
      } else {
        // Redis applied none of it: the counts go with the next call (they are in the own window already)
        pending.sendAgain(taken, c.requests(), c.denied(), c.retries(), true);
      }
      return reply;
    });
  }

  /**
   * Whether counts wait for a call: those of a call of unknown fate, for a call on their way, or those a
   * relay took and has not said Redis applied (a call learns it, or carries them elsewhere).
   */
  boolean holdsDoubt() {
    return doubts.any() || relayHeld.any();
  }

  /**
   * First attempts given up in doubt so far (held too long, beyond the limit, on another way, carried by
   * a call answered with an error); an upper bound: a copy carried by a call still in flight may yet be added.
   */
  long lostInDoubt() {
    return doubts.lostRequests() + relayHeld.lostRequests();
  }

  /** Whether counts a relay took are kept until Redis has them ({@link RelayHeld}). */
  boolean holdsRelayCounts() {
    return relayHeld.any();
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
    long r = remaining();
    return r < 0 ? java.util.OptionalLong.empty() : java.util.OptionalLong.of(r);
  }

  /** The paced balance's (a relay's pool's) whole permits in the last applied reply; -1 before one. */
  long remaining() {
    return remaining;
  }

  /** Whether a relay applied the last applied call ({@link AskAhead}: a relay's clients decide ahead). */
  boolean viaRelay() {
    return viaRelay;
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
