package io.retrybudget.budget;

import io.lettuce.core.RedisException;
import io.retrybudget.budget.internal.FleetCount;
import io.retrybudget.budget.internal.PaceArithmetic;
import io.retrybudget.budget.internal.PacedBalance;
import io.retrybudget.budget.internal.SlidingWindowCounts;
import io.retrybudget.budget.redis.protocol.BudgetCall;
import io.retrybudget.budget.redis.protocol.BudgetReply;
import io.retrybudget.budget.redis.protocol.ClientSequence;
import io.retrybudget.retry.RetryScheduler;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * A Java model of one budget in Redis (lua/budget.lua: counts in a sliding window, the paced balance
 * and its key's expiry, the fleet counted per epoch) with replies that come fast, slow, late, never,
 * or are refused, on fake time. A call is applied when it is sent (a refused one is not); its reply
 * comes after the delay its {@link Delivery} says. Redis's clock runs {@link #redisClockAhead} ms ahead
 * of the engines'. Records what it granted, what it was told and the calls it ran each second, for the
 * checkers; a {@link Mirror} sees every configuration and every call applied (parity with the scripts).
 */
final class ModelStore implements FleetRegistry.Port {
  static final long PPM = PaceArithmetic.PPM;

  /** How one call's reply comes back. */
  enum Delivery { FAST, SLOW, LATE, LOST, REFUSED }

  /** Sees what the model applies, in order (a real Redis running the same calls, for parity). */
  interface Mirror {
    /** The configuration was changed to the model's current one. */
    void configured(ModelStore store);

    /** {@code call} of {@code clientId} was applied at Redis time {@code redisMillis} and answered {@code reply}. */
    void applied(BudgetCall call, String clientId, long redisMillis, BudgetReply reply);
  }

  private final LongSupplier clock;
  private final RetryScheduler time;
  private final long flushTimeoutMillis;
  /** The delivery and delay (ms) of the next call; the default answers at once. */
  private Supplier<long[]> faults = () -> new long[] {Delivery.FAST.ordinal(), 0};

  // the configuration in force
  long ratioPpm = 100_000;
  int windowSeconds = 10;
  int minRetriesPerSecond = 0;
  int maxCallsPerSecond = BudgetConfig.DEFAULT_MAX_CALLS_PER_SECOND;
  private SlidingWindowCounts counts;
  private PacedBalance balance = new PacedBalance();
  private long paceExpiresAt = Long.MAX_VALUE; // the pace key's PX: two windows after the call that wrote it
  private FleetCount fleet; // the clients hash's record ''
  private final Map<String, Long> countedIn = new HashMap<>(); // client id -> the fleet epoch it was last counted in
  private long lastNewClientAt = -1;
  private long redisClockAhead;
  private Mirror mirror;

  // the history, for the checkers
  long calls;
  long permitsGranted; // permits handed out in replies to applied permit calls
  long requestsCounted;
  long fallbackRetriesReported;
  long deniedCounted; // denials reported by calls, and asks refused
  private final java.util.List<Long> asksAt = new java.util.ArrayList<>(); // the call number of each ask (need > 0)
  final Map<Long, Long> runPerSecond = new HashMap<>(); // engine second -> calls Redis ran in it

  ModelStore(LongSupplier clock, RetryScheduler time, long flushTimeoutMillis) {
    this.clock = clock;
    this.time = time;
    this.flushTimeoutMillis = flushTimeoutMillis;
    this.counts = new SlidingWindowCounts(windowSeconds * 1000L);
  }

  /** Redis's clock runs {@code millis} ahead of the engines' (where in a fleet epoch the schedule starts). */
  void redisClockAhead(long millis) {
    redisClockAhead = millis;
  }

  void mirror(Mirror m) {
    mirror = m;
    m.configured(this);
  }

  /** Redis's time now, ms. */
  long redisMillis() {
    return clock.getAsLong() + redisClockAhead;
  }

  /** Redis's time (ms) when the last client not counted before had its first call applied. */
  long lastNewClientAt() {
    return lastNewClientAt;
  }

  /** How many distinct clients have had a call applied (counted in some epoch). */
  int clientsEverCounted() {
    return countedIn.size();
  }

  /** The fleet's size a call would be told now (budget.lua's active_clients, before counting its caller). */
  long fleetEstimate() {
    return FleetCount.read(fleet, FleetCount.epochOf(redisMillis())).estimate();
  }

  /** Asks (calls with need > 0) the store ran after its call number {@code from}. */
  long asksSince(long from) {
    return asksAt.stream().filter(n -> n > from).count();
  }

  /** Every reply after {@code delayMillis}. */
  void replyAfter(long delayMillis) {
    faults = () -> new long[] {Delivery.FAST.ordinal(), delayMillis};
  }

  /** Each call's delivery and delay (ms) from {@code source}. */
  void faults(Supplier<long[]> source) {
    faults = source;
  }

  /** A configuration change (a new window starts its counts afresh at the next call, as budget.lua's ring does). */
  void configure(long ratioPpm, int windowSeconds, int minRetriesPerSecond, int maxCallsPerSecond) {
    this.ratioPpm = ratioPpm;
    this.minRetriesPerSecond = minRetriesPerSecond;
    this.maxCallsPerSecond = maxCallsPerSecond;
    this.windowSeconds = windowSeconds;
    if (mirror != null) {
      mirror.configured(this);
    }
  }

  long flushTimeoutMillis() {
    return flushTimeoutMillis;
  }

  @Override
  public CompletableFuture<BudgetReply> budget(BudgetCall call, ClientSequence sequence) {
    long[] how = faults.get();
    Delivery delivery = Delivery.values()[(int) how[0]];
    CompletableFuture<BudgetReply> reply = new CompletableFuture<>();
    calls++;
    if (delivery == Delivery.REFUSED) {
      // not run (as Lettuce's refusal while disconnected, after BudgetScripts' re-sends)
      time.schedule(() -> reply.completeExceptionally(new RedisException("Currently not connected")), how[1] * FakeEngine.MS);
      return reply;
    }
    runPerSecond.merge(clock.getAsLong() / 1000, 1L, Long::sum);
    if (call.need() > 0) {
      asksAt.add(calls);
    }
    BudgetReply answer = apply(call, sequence.clientId());
    if (delivery != Delivery.LOST) {
      time.schedule(() -> reply.complete(answer), how[1] * FakeEngine.MS);
    }
    return reply;
  }

  private BudgetReply apply(BudgetCall call, String clientId) {
    long now = redisMillis();
    if (now > paceExpiresAt) {
      balance = new PacedBalance(); // the pace key expired: a new balance starts from the window
    }
    paceExpiresAt = now + windowSeconds * 2000L;
    if (counts.windowMillis() != windowSeconds * 1000L) {
      counts = new SlidingWindowCounts(windowSeconds * 1000L); // the ring's bucket length changed: it starts over
    }
    long epoch = FleetCount.epochOf(now);
    fleet = FleetCount.read(fleet, epoch);
    if (!countedIn.containsKey(clientId)) {
      lastNewClientAt = now;
    }
    Long last = countedIn.put(clientId, epoch);
    if (!Long.valueOf(epoch).equals(last)) {
      fleet = fleet.counted(FleetCount.newToUnion(last, epoch));
    }
    long floorPpm = minRetriesPerSecond * PPM;
    counts.add(now, call.requests(), call.retries(), call.denied());
    requestsCounted += call.requests();
    fallbackRetriesReported += call.retries();
    deniedCounted += call.denied();
    balance.update(now, call.requests(), counts.requests(now), counts.spanMillis(now), windowSeconds, ratioPpm, floorPpm);
    balance.withdraw(call.retries() * PPM); // the fallback's grants were paid by its first attempts
    String status = BudgetReply.COUNTED;
    long granted = 0;
    if (call.need() > 0) {
      long available = PaceArithmetic.available(balance.balance());
      if (available >= call.need()) {
        granted = Math.min(call.want(), available);
        balance.take(granted);
        counts.add(now, 0, granted, 0);
        permitsGranted += granted;
        status = BudgetReply.GRANTED;
      } else {
        counts.add(now, 0, 0, 1);
        deniedCounted++;
        status = BudgetReply.DENIED;
      }
    }
    long requests = counts.requests(now);
    BudgetReply reply = new BudgetReply(status, granted, requests, counts.retries(now), counts.denied(now),
        requests * ratioPpm / PPM + (long) minRetriesPerSecond * windowSeconds, fleet.estimate(), ratioPpm, windowSeconds,
        minRetriesPerSecond, BudgetMode.ENFORCE.wireName(), PaceArithmetic.available(balance.balance()),
        balance.nextMillis(), balance.refillRate(), maxCallsPerSecond);
    if (mirror != null) {
      mirror.applied(call, clientId, now, reply);
    }
    return reply;
  }
}
