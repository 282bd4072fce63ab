package io.retrybudget.budget;

import io.retrybudget.budget.internal.SlidingWindowCounts;
import java.util.function.DoubleSupplier;
import java.util.function.LongSupplier;

/**
 * When one budget's timer sends its counts. Flushes come every {@code N / 0.9 C} seconds (N the
 * fleet's clients, C the budget's call ceiling; within [flushInterval, maxFlushInterval]) at a random
 * phase, so the fleet's flushes add up to 90 % of C whatever N. Every call to Redis counts as a flush
 * (it carries the counts): the next one is due an interval after it. A client that also sends permit
 * requests stretches the interval so that its flushes and permit requests together stay at its share
 * of 0.9 C ({@link #flushIntervalMillis(long, long, long, int, double)}).
 */
final class FlushSchedule {
  /** Whether a timer tick sends a call. */
  enum Due { NOT_YET, FLUSH, HELLO }

  private final long baseMillis;
  private final long maxMillis;
  private final DoubleSupplier random;
  private final LongSupplier fleetEstimate; // the clients this process knows of (FleetRegistry)
  // Start-up: a budget that joins a fleet this process already knows to be large defers its first
  // call (the hello) to createdAt + firstPhase * the interval of the fleet as known when it is due
  private final long createdAt;
  private final double firstPhase;
  private volatile boolean firstCallDeferred;
  // when the timer's next flush is due (clock ms): set by every call to Redis
  private volatile long nextFlushAt = Long.MIN_VALUE;
  private volatile boolean stretched; // the last interval was stretched by the fleet's size
  // this client's permit requests over the last PERMIT_RATE_MILLIS (first attempts' column; guarded by itself)
  private final SlidingWindowCounts permitCalls = new SlidingWindowCounts(PERMIT_RATE_MILLIS);
  static final long PERMIT_RATE_MILLIS = 10_000;

  FlushSchedule(long baseMillis, long maxMillis, DoubleSupplier random, LongSupplier fleetEstimate, long createdAt) {
    this.baseMillis = baseMillis;
    this.maxMillis = maxMillis;
    this.random = random;
    this.fleetEstimate = fleetEstimate;
    this.createdAt = createdAt;
    this.firstPhase = random.getAsDouble();
  }

  /**
   * This process holds several clients of the budget: a hello from each at once is a stampede
   * (10,000 budgets made together: 10,000 calls in one tick, before any knows the fleet's size). The
   * first call goes at a random phase over the interval of the fleet as known when it comes due
   * instead: within 250 ms for a small fleet, over N / 0.9 C for a large one (a permit request asks
   * Redis at once all the same, and is the hello).
   */
  void deferFirstCall(long known, int maxCallsPerSecond) {
    firstCallDeferred = true;
    stretched = true;
    nextFlushAt = firstCallDue(known, maxCallsPerSecond);
  }

  /** When a deferred first call is due, for a fleet of {@code clients}: createdAt + firstPhase of its interval. */
  private long firstCallDue(long clients, int maxCallsPerSecond) {
    long interval = flushIntervalMillis(baseMillis, maxMillis, clients, maxCallsPerSecond);
    return createdAt + (long) (Math.max(0, interval - baseMillis / 2) * equilibriumPhase(firstPhase));
  }

  /** Whether the timer's tick at {@code now} sends a call ({@code evenIfIdle}: a hello asked for). */
  Due due(long now, boolean evenIfIdle, Learned l) {
    if (!evenIfIdle && now < nextFlushAt) {
      return Due.NOT_YET; // the fleet's flushes add up to its call ceiling (probes while degraded too)
    }
    if (firstCallDeferred && !evenIfIdle) {
      // the fleet as known now: siblings made since, or a size one of them learned, push it out
      long due = firstCallDue(fleetEstimate.getAsLong(), l.callCeiling());
      if (now < due) {
        nextFlushAt = due;
        return Due.NOT_YET;
      }
      return Due.HELLO; // sent even if idle
    }
    return evenIfIdle ? Due.HELLO : Due.FLUSH;
  }

  /**
   * A call went to Redis at {@code now} ({@code permitRequest}: one that asked for permits): it carries
   * the counts, so the next flush is an interval after it.
   */
  void called(long now, Learned l, boolean permitRequest) {
    firstCallDeferred = false;
    if (permitRequest) {
      synchronized (permitCalls) {
        permitCalls.add(now, 1, 0, 0);
      }
    }
    scheduleNext(now, l);
  }

  /** This client's permit requests a second, over the last {@link #PERMIT_RATE_MILLIS}. */
  private double permitCallsPerSecond(long now) {
    synchronized (permitCalls) {
      return permitCalls.requests(now) * 1000.0 / PERMIT_RATE_MILLIS;
    }
  }

  /** Redis said {@code told}: a higher ceiling or a smaller fleet applies from this call on, not after the longer interval. */
  void learned(long calledAt, Learned before, Learned told) {
    if (interval(told, calledAt) < interval(before, calledAt)) {
      scheduleNext(calledAt, told);
    }
  }

  long nextFlushAt() {
    return nextFlushAt;
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
   * The flush interval T of a client that also sends {@code p} permit requests a second: each carries the
   * counts and puts the next flush T after it, so its calls come at {@code p / (1 - e^(-p T))} a second
   * (one per min(Exp(p), T)), over the {@code 1 / T} of flushes alone by about p / 2: a fleet sampling
   * its asks at C / 3 called 1.07 C a second. {@code T = -ln(1 - p / r) / p} keeps them at the client's
   * share {@code r = 0.9 C / N}; never shorter than the interval without permit requests (p / r is
   * taken as at most 0.9).
   */
  static long flushIntervalMillis(long base, long max, long clients, int maxCallsPerSecond, double p) {
    long plain = flushIntervalMillis(base, max, clients, maxCallsPerSecond);
    if (p <= 0 || clients <= 0) {
      return plain;
    }
    double share = Math.min(0.9, p * clients / (0.9 * maxCallsPerSecond));
    long withAsks = (long) Math.ceil(-Math.log(1 - share) / p * 1000);
    return Math.max(plain, Math.min(max, withAsks));
  }

  /**
   * The flush interval for what Redis said ({@code l}), with at least as many clients as this process
   * knows of: its own budgets of this name (each counted by Redis), or the fleet size a sibling
   * learned later (Redis's count lags a fleet that is joining; a degraded budget that never heard
   * from Redis probes at its siblings' interval, not every tick).
   */
  private long interval(Learned l, long now) {
    long clients = Math.max(l.activeClients(), fleetEstimate.getAsLong());
    return flushIntervalMillis(baseMillis, maxMillis, clients, l.callCeiling(), permitCallsPerSecond(now));
  }

  /**
   * After a call at {@code now}: when the timer's next flush is due. The timer ticks every flushInterval,
   * which adds half a tick on average, so the aim is the interval less half a tick; the first
   * stretched interval takes a random phase ({@link #equilibriumPhase}: clients that started
   * together spread out as if they had always run), the later ones 0.75 to 1.25 of the interval less a
   * tick, plus a uniform part of one tick. That last part puts the due time at a uniform place between
   * two ticks, so the half tick holds for a flush the timer sent too (its next tick lies a whole number
   * of ticks after it): without it, an interval under two ticks (6 clients at C = 10: 667 ms; 1,000 at
   * C = 2,000: 556 ms) came round after 500 ms nearly every time, and the fleet flushed at 1.1-1.2 x 0.9 C.
   */
  private void scheduleNext(long now, Learned l) {
    long interval = interval(l, now);
    long aim = Math.max(0, interval - baseMillis / 2);
    long wait;
    if (interval <= baseMillis) {
      wait = aim; // every tick, as an unstretched client always did
      stretched = false;
    } else if (!stretched) {
      wait = (long) (aim * equilibriumPhase(random.getAsDouble()));
      stretched = true;
    } else {
      wait = (long) ((interval - baseMillis) * (0.75 + 0.5 * random.getAsDouble()) + baseMillis * random.getAsDouble());
    }
    nextFlushAt = now + wait;
  }
}
