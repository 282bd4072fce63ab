package io.retrybudget.budget;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.ModelStore.Delivery;
import io.retrybudget.budget.internal.FleetCount;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/**
 * Seeded random schedules of the budget engine on fake time: 2 to 8 {@link RedisRetryBudget}s of one
 * name (one schedule in 20: 20 to 40) against a {@link ModelStore} whose replies come fast, slow (past the call timeout), late (past
 * the flush timeout), never, or are refused, in regimes that change at random moments, with the
 * configuration (ratio, window, floor, call ceiling) changed at random moments too. Then a phase of
 * 20 s in which Redis is slow only (measured over its last 10 s). After every step, against a history the checker keeps itself:
 * <ul>
 *   <li>no {@code acquire} outlives the call timeout + 10 ms;
 *   <li>every grant counted once: Redis's counts never exceed the first attempts made, the fallback's
 *       grants it was told of never exceed those granted, and the grants from Redis used never exceed
 *       the permits it handed out;
 *   <li>grants never exceed what the model allows (the highest ratio in force times the first attempts,
 *       plus the highest floor over the time) plus the fallback's documented share (each budget its
 *       ratio over its own first attempts plus at most the floor, at most one permit ahead);
 *   <li>at every second, the fleet's size as Redis and each budget estimate it is within 10 % of the
 *       true one, and the calls Redis ran stay under the ceiling once the fleet is known
 *       ({@code ScheduleHistory#checkSecond}, {@link #assertCallsUnderTheCeiling});
 * </ul>
 * and at the end, that the slow phase yielded at least a third of the paced share its first attempts
 * and floor pay for (or of its asks, if fewer), less one permit a budget, and the slow phases of the
 * whole run together at least 0.7 of it. {@code -Dschedules=N} runs N (default {@value #DEFAULT_SCHEDULES});
 * a failure names its seed ({@code -Dseed=S} replays one). Three deliberately broken engines show the checks catch
 * what they claim to.
 */
class SeededBudgetScheduleTest {
  private static final long CALL_TIMEOUT = 20;
  /**
   * Schedules a build runs: 5 s of CPU instead of the 27 s that 10,000 took, which the whole module
   * waited for. Each of seeds 0-1,999, 2,000-3,999 and 4,000-5,999 passed every check on its own,
   * the busiest fleet averaging 9.25, 9.30 and 8.84 calls a second at C = 10; a change to the engine
   * is run with {@code -Dschedules=100000} (split with {@code -DfirstSeed}).
   */
  static final int DEFAULT_SCHEDULES = 2_000;
  // calls Redis ran in the seconds once the fleet was known, by fleet size and ceiling: {seconds, calls, most in one}
  private final Map<String, long[]> callsKnown = new TreeMap<>();
  private static final int THREADS = Integer.getInteger("scheduleThreads",
      Math.min(2, Runtime.getRuntime().availableProcessors()));
  private static final java.util.logging.Logger QUIET = java.util.logging.Logger.getLogger(RedisRetryBudget.class.getName());

  @Test
  void randomFaultSchedulesKeepEveryPromise() {
    long seedProperty = Long.getLong("seed", -1);
    int schedules = Integer.getInteger("schedules", DEFAULT_SCHEDULES);
    long started = System.nanoTime();
    long firstSeed = Long.getLong("firstSeed", 0); // -DfirstSeed=S -Dschedules=N: seeds S .. S+N-1 (split long runs)
    long first = seedProperty >= 0 ? seedProperty : firstSeed;
    long end = seedProperty >= 0 ? seedProperty + 1 : firstSeed + schedules;
    Tally t = runSchedules(first, end, engine -> {}, true);
    if (!t.failures.isEmpty()) {
      Map.Entry<Long, Throwable> f = t.failures.firstEntry();
      throw new AssertionError("schedule with seed " + f.getKey() + " (replay with -Dseed=" + f.getKey() + "): "
          + f.getValue().getMessage(), f.getValue());
    }
    callsKnown.putAll(t.callsKnown);
    if (end - first >= 100) {
      assertSlowPhasesYield(t.slow);
      assertCallsUnderTheCeiling();
    }
    System.out.printf("SeededBudgetScheduleTest: %,d schedules, %,d steps, %.1f s (%.1f s of CPU on %d threads)%n",
        end - first, t.steps, (System.nanoTime() - started) / 1e9, t.cpuNanos / 1e9, THREADS);
  }

  /**
   * What a run of schedules adds up to: steps, the slow phases' grants and paced share, the calls a
   * second by fleet size and ceiling, the CPU time spent, and each failed schedule's error by seed.
   */
  static final class Tally {
    long steps;
    long cpuNanos;
    long decidedAhead;
    final double[] slow = new double[2];
    final Map<String, long[]> callsKnown = new TreeMap<>();
    final TreeMap<Long, Throwable> failures = new TreeMap<>();

    void add(Tally o) {
      steps += o.steps;
      cpuNanos += o.cpuNanos;
      decidedAhead += o.decidedAhead;
      slow[0] += o.slow[0];
      slow[1] += o.slow[1];
      o.callsKnown.forEach((k, v) -> {
        long[] t = callsKnown.computeIfAbsent(k, x -> new long[3]);
        t[0] += v[0];
        t[1] += v[1];
        t[2] = Math.max(t[2], v[2]);
      });
      failures.putAll(o.failures);
    }
  }

  /**
   * Schedules are independent (each its own engine, store and fake clock), so seeds {@code first ..
   * end-1} run striped over {@link #THREADS} threads (-DscheduleThreads=N; 1 runs them in order):
   * 10,000 cost 27 s of CPU, and in a build the module's other tests wait on real I/O. With
   * {@code stopAtFirstFailure}, each thread stops at its first failing seed.
   */
  private static Tally runSchedules(long first, long end, Consumer<FakeEngine> variant, boolean stopAtFirstFailure) {
    // the engine says once per budget that Redis holds another configuration: quiet only while the
    // schedules run (other tests in this JVM read the engine's log: RegistrationTest)
    java.util.logging.Level was = QUIET.getLevel();
    QUIET.setLevel(java.util.logging.Level.WARNING);
    java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(THREADS);
    try {
      List<java.util.concurrent.Future<Tally>> parts = new ArrayList<>();
      for (int k = 0; k < THREADS; k++) {
        long from = first + k;
        parts.add(pool.submit(() -> {
          Tally t = new Tally();
          long cpu = java.lang.management.ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime();
          for (long seed = from; seed < end; seed += THREADS) {
            try {
              t.steps += run(seed, variant, t);
            } catch (AssertionError | RuntimeException e) {
              t.failures.put(seed, e);
              if (stopAtFirstFailure) {
                break;
              }
            }
          }
          t.cpuNanos = java.lang.management.ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime() - cpu;
          return t;
        }));
      }
      Tally all = new Tally();
      for (java.util.concurrent.Future<Tally> part : parts) {
        all.add(part.get());
      }
      return all;
    } catch (InterruptedException | java.util.concurrent.ExecutionException e) {
      throw new IllegalStateException(e);
    } finally {
      pool.shutdownNow();
      QUIET.setLevel(was);
    }
  }

  /**
   * The same schedules with the store answering as a relay (its tag on every reply): the budgets then
   * decide ahead ({@link AskAhead}) and keep every promise above, and a relay's client asking again
   * within 3 s never waits ({@link ScheduleHistory#ask}).
   */
  @Test
  void randomFaultSchedulesOfARelaysClientsKeepEveryPromise() {
    int schedules = Integer.getInteger("relaySchedules", DEFAULT_SCHEDULES / 4);
    Tally t = runSchedules(0, schedules, engine -> engine.portInstead = new RelayLikePort(engine.store), true);
    if (!t.failures.isEmpty()) {
      Map.Entry<Long, Throwable> f = t.failures.firstEntry();
      throw new AssertionError("relay schedule with seed " + f.getKey() + ": " + f.getValue().getMessage(), f.getValue());
    }
    assertSlowPhasesYield(t.slow);
    callsKnown.putAll(t.callsKnown);
    assertCallsUnderTheCeiling();
    assertTrue(t.decidedAhead > schedules, "asks decided ahead: " + t.decidedAhead);
    System.out.printf("SeededBudgetScheduleTest, a relay's clients: %,d schedules, %,d steps, %,d asks decided ahead%n",
        schedules, t.steps, t.decidedAhead);
  }

  @Test
  void catchesAnEngineWhoseAcquireWaitsForRedis() {
    assertCaught("outlived the call timeout", engine -> engine.timeoutsEnforced = false);
  }

  @Test
  void catchesAStoreThatAppliesACallTwice() {
    assertCaught("counted twice", engine -> engine.callsAppliedTwice = true);
  }

  @Test
  void catchesTheRuleThatForgaveALateReply() {
    // the rule before SLOW: a late reply took the failure back and the fallback never decided (here
    // with late permits kept for the window, which alone brings it to about half the paced share)
    assertCaught("the slow phase", engine -> engine.healthRule = (state, event) -> event == RedisHealth.Event.REPLY_LATE
        ? RedisHealth.next(state == RedisHealth.State.DEGRADED ? state : RedisHealth.State.HEALTHY,
            RedisHealth.Event.REPLY_LATE)
        : RedisHealth.next(state, event));
  }

  /**
   * The slow phases of many schedules together yield at least 0.7 of the paced share. One schedule's
   * can yield nothing where each budget's share is a fraction of a permit (6 budgets with 10 asks
   * between them at ratio 0.3: 3 permits to share); over 10,000 schedules they yielded 0.82 (0.82 over
   * the first 300), and under the rule that forgave a late reply 0.53.
   */
  private static void assertSlowPhasesYield(double[] slow) {
    assertTrue(slow[0] >= 0.7 * slow[1], "the slow phases together: " + slow[0] + " grants for a paced share of "
        + slow[1] + " (" + slow[0] / slow[1] + ")");
  }

  /**
   * Once the fleet is known, the calls Redis runs average at most the ceiling C a second, over every
   * such second of the schedules of one fleet size and ceiling (no second of one above 3 C: checked after
   * every step). One second alone can hold more: each client's flushes and asks come at random phases,
   * and 7 clients at C = 10, 8.8 calls a second on average, ran up to 18 in one. Over 10,000 schedules
   * the busiest averages were 9.16 (20 to 40 clients at C = 10) and 8.84 (8 clients); before a flush's
   * due time took a uniform place between two timer ticks, 6 clients at C = 10 averaged 10.5, and before
   * permit requests stretched the flush interval, fleets of 20 to 40 at C = 10 up to 10.9.
   */
  private void assertCallsUnderTheCeiling() {
    StringBuilder table = new StringBuilder();
    callsKnown.forEach((fleet, t) -> table.append(String.format("%n  %s: %,d seconds, %.2f calls a second, at most %d",
        fleet, t[0], t[1] / (double) t[0], t[2])));
    System.out.println("calls a second once the fleet was known:" + table);
    callsKnown.forEach((fleet, t) -> {
      long ceiling = Long.parseLong(fleet.substring(fleet.indexOf('=') + 1).trim());
      assertTrue(t[1] <= ceiling * t[0], () -> fleet + ": " + t[1] / (double) t[0] + " calls a second on average" + table);
    });
  }

  private void assertCaught(String what, Consumer<FakeEngine> breakIt) {
    Tally t = runSchedules(0, 300, breakIt, false);
    int caught = t.failures.size();
    String first = t.failures.isEmpty() ? null : t.failures.firstEntry().getValue().getMessage();
    try {
      assertSlowPhasesYield(t.slow);
    } catch (AssertionError e) {
      caught++;
      first = first == null ? e.getMessage() : first;
    }
    assertTrue(caught > 0, "no schedule caught the broken engine");
    assertTrue(first.contains(what), "caught for another reason: " + first);
    System.out.println("broken engine caught by " + caught + " of 300 schedules, first: " + first);
  }

  /** One schedule, quietly, on this thread; returns its steps, and adds its slow phase to {@code slow}. */
  long schedule(long seed, Consumer<FakeEngine> variant, double[] slow) {
    java.util.logging.Level was = QUIET.getLevel();
    QUIET.setLevel(java.util.logging.Level.WARNING);
    try {
      Tally t = new Tally();
      long steps = run(seed, variant, t);
      slow[0] += t.slow[0];
      slow[1] += t.slow[1];
      return steps;
    } finally {
      QUIET.setLevel(was);
    }
  }

  /** One schedule; returns its steps, and adds its slow phase and calls a second to {@code tally}. */
  private static long run(long seed, Consumer<FakeEngine> variant, Tally tally) {
    SplittableRandom r = new SplittableRandom(seed);
    FakeEngine engine = new FakeEngine(CALL_TIMEOUT, FallbackPolicy.LOCAL, r::nextDouble);
    variant.accept(engine);

    ModelStore store = engine.store;
    // Redis's clock at a random point of a fleet epoch: a third of the schedules cross an epoch's end
    store.redisClockAhead(r.nextLong(FleetCount.EPOCH_MILLIS));
    long flushTimeout = store.flushTimeoutMillis();
    int n = r.nextInt(20) == 0 ? 20 + r.nextInt(21) : 2 + r.nextInt(7); // one in 20: a fleet of 20 to 40
    ScheduleHistory h = new ScheduleHistory(engine, n, CALL_TIMEOUT, tally.callsKnown);
    h.configure(r, store);
    List<RedisRetryBudget> budgets = new ArrayList<>();
    BudgetConfig seedConfig = BudgetConfig.builder("seeded").ratio(0.1).minRetriesPerSecond(0).windowSeconds(10).build();
    for (int i = 0; i < n; i++) {
      budgets.add(engine.budget(seedConfig));
    }
    long[] own = new long[n];
    h.traffic(own);
    // regimes of replies, each for a random time
    Delivery[] regime = {Delivery.FAST};
    store.faults(() -> delivery(r, regime[0] == null ? Delivery.values()[r.nextInt(5)] : regime[0], flushTimeout));
    long steps = 0;
    long fleetRate = 5 + r.nextInt(40); // first attempts a second, the whole fleet
    long phaseEnd = engine.millis() + 10_000;
    long nextRegime = engine.millis();
    long nextConfig = engine.millis() + r.nextLong(5_000);
    while (engine.millis() < phaseEnd) {
      if (engine.millis() >= nextRegime) {
        int k = r.nextInt(7);
        regime[0] = k < 5 ? Delivery.values()[k] : k == 5 ? null : Delivery.FAST; // null: mixed
        nextRegime = engine.millis() + 100 + r.nextLong(3_000);
      }
      if (engine.millis() >= nextConfig) {
        h.configure(r, store);
        nextConfig = engine.millis() + 500 + r.nextLong(5_000);
      }
      steps += step(r, engine, budgets, own, h, fleetRate, r.nextInt(4) != 0);
    }
    // the slow phase: every reply past the call timeout, under the flush timeout; sparse asks
    // (a budget asks every 1 to 4 s: longer than the life of a lease)
    store.faults(() -> new long[] {Delivery.FAST.ordinal(), CALL_TIMEOUT + 1 + r.nextLong(flushTimeout - CALL_TIMEOUT - 2)});
    long ratioPpm = store.ratioPpm;
    int floor = store.minRetriesPerSecond;
    long slowRate = Math.max(1, n * (1 + r.nextInt(4)) / 4);
    // its first 10 s let the window (at most 10 s) forget the fault phase's traffic: while a budget's
    // own counts say its fleet asks more than a third of the call ceiling, most of its asks are
    // sampled out and refused without a call (and so without finding that Redis is slow)
    phaseEnd = engine.millis() + 10_000;
    while (engine.millis() < phaseEnd) {
      steps += step(r, engine, budgets, own, h, slowRate, true);
    }
    h.reasons.clear();
    long grantsBefore = h.grants();
    long asksBefore = h.asks;
    long requestsBefore = h.firstAttempts;
    phaseEnd = engine.millis() + 10_000;
    while (engine.millis() < phaseEnd) {
      steps += step(r, engine, budgets, own, h, slowRate, true);
    }
    h.assertFleetLearned();
    long grants = h.grants() - grantsBefore;
    long requests = h.firstAttempts - requestsBefore;
    long asks = h.asks - asksBefore;
    double paced = Math.min(asks, requests * (ratioPpm / 1e6) + floor * 10.0);
    tally.slow[0] += grants;
    tally.slow[1] += paced;
    assertTrue(grants >= paced / 3 - n, "the slow phase: " + grants + " grants for " + asks + " asks, " + requests
        + " first attempts at ratio " + ratioPpm / 1e6 + ", floor " + floor + " (" + n + " budgets; decisions " + h.reasons
        + ", budgets " + budgets + ")");
    settle(engine, store, h);
    tally.decidedAhead += h.decidedAhead;
    return steps;
  }

  /**
   * No count lost: Redis answers at once, no traffic, until every budget has flushed what it holds (its
   * stretched interval is at most 1.25 x maxFlushInterval). The model applies every call it is sent,
   * whether its reply comes in time, late or never; it refuses some before running them, and those
   * counts go again ({@code BudgetScripts.neverRun}). So once settled Redis has counted every first
   * attempt made, once (before, a refused call's counts were dropped), but those a budget kept longer
   * than its window, which it drops (Redis would count them as that second's).
   */
  private static void settle(FakeEngine engine, ModelStore store, ScheduleHistory h) {
    store.faults(() -> new long[] {Delivery.FAST.ordinal(), 0});
    long end = engine.millis() + 30_000;
    while (engine.millis() < end && store.requestsCounted + stale(engine) < h.firstAttempts) {
      engine.advanceMillis(100);
      h.check();
    }
    long stale = stale(engine);
    assertTrue(store.requestsCounted + stale == h.firstAttempts, () -> "first attempts lost: " + store.requestsCounted
        + " counted in Redis and " + stale + " dropped as kept longer than the window, of " + h.firstAttempts
        + " made, 30 s after the last");
  }

  /** First attempts the engine's budgets dropped for having kept them longer than the window (ResendCounts). */
  private static long stale(FakeEngine engine) {
    return engine.budgets.stream().mapToLong(RedisRetryBudget::staleRequests).sum();
  }

  /** One first attempt of a random budget that fails and asks for a retry (or succeeds), then time moves on. */
  private static long step(SplittableRandom r, FakeEngine engine, List<RedisRetryBudget> budgets, long[] own,
      ScheduleHistory h, long fleetRate, boolean fails) {
    int i = r.nextInt(budgets.size());
    RedisRetryBudget b = budgets.get(i);
    b.recordFirstAttempt();
    own[i]++;
    h.firstAttempts++;
    if (fails) {
      h.ask(b);
    }
    // exponential gaps at the fleet's rate, moved 1 to 40 ms at a time, checking after each move (an answer
    // records its own time, so only an acquire still open is seen up to 40 ms after its bound)
    long gap = Math.max(1, (long) (-Math.log(1 - r.nextDouble()) * 1000.0 / fleetRate));
    while (gap > 0) {
      long move = Math.min(gap, 1 + r.nextInt(40));
      engine.advanceMillis(move);
      gap -= move;
      h.check();
    }
    return 1;
  }

  private static long[] delivery(SplittableRandom r, Delivery d, long flushTimeout) {
    long delay = switch (d) {
      case FAST -> r.nextLong(CALL_TIMEOUT / 2);
      case SLOW -> CALL_TIMEOUT + 1 + r.nextLong(flushTimeout - CALL_TIMEOUT - 2);
      case LATE -> flushTimeout + 1 + r.nextLong(flushTimeout);
      case LOST -> 0;
      case REFUSED -> r.nextLong(CALL_TIMEOUT);
    };
    return new long[] {d.ordinal(), delay};
  }
}
