package io.retrybudget.budget;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.ModelStore.Delivery;
import io.retrybudget.budget.internal.FleetCount;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
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
 *       ({@code History#checkSecond}, {@link #assertCallsUnderTheCeiling});
 * </ul>
 * and at the end, that the slow phase yielded at least a third of the paced share its first attempts
 * and floor pay for (or of its asks, if fewer), less one permit a budget, and the slow phases of the
 * whole run together at least 0.7 of it. {@code -Dschedules=N} runs N (default 10,000); a failure names
 * its seed ({@code -Dseed=S} replays one). Three deliberately broken engines show the checks catch
 * what they claim to.
 */
class SeededBudgetScheduleTest {
  private static final long CALL_TIMEOUT = 20;
  // calls Redis ran in the seconds once the fleet was known, by fleet size and ceiling: {seconds, calls, most in one}
  private final java.util.Map<String, long[]> callsKnown = new java.util.TreeMap<>();
  // the engine says once per budget that Redis holds another configuration: 10,000 schedules of it
  private static final java.util.logging.Logger QUIET = java.util.logging.Logger.getLogger(RedisRetryBudget.class.getName());

  static {
    QUIET.setLevel(java.util.logging.Level.WARNING);
  }

  @Test
  void randomFaultSchedulesKeepEveryPromise() {
    long seedProperty = Long.getLong("seed", -1);
    int schedules = Integer.getInteger("schedules", 10_000);
    long started = System.nanoTime();
    long cpuStarted = java.lang.management.ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime();
    long steps = 0;
    long first = seedProperty >= 0 ? seedProperty : 0;
    long end = seedProperty >= 0 ? seedProperty + 1 : schedules;
    double[] slow = new double[2];
    for (long seed = first; seed < end; seed++) {
      try {
        steps += schedule(seed, engine -> {}, slow);
      } catch (AssertionError | RuntimeException e) {
        throw new AssertionError("schedule with seed " + seed + " (replay with -Dseed=" + seed + "): " + e.getMessage(), e);
      }
    }
    if (end - first >= 100) {
      assertSlowPhasesYield(slow);
      assertCallsUnderTheCeiling();
    }
    System.out.printf("SeededBudgetScheduleTest: %,d schedules, %,d steps, %.1f s (%.1f s of CPU)%n", end - first, steps,
        (System.nanoTime() - started) / 1e9,
        (java.lang.management.ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime() - cpuStarted) / 1e9);
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
   * such second of the schedules of one fleet size and ceiling (no second of one above 2 C: checked after
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
    int caught = 0;
    String first = null;
    double[] slow = new double[2];
    for (long seed = 0; seed < 300; seed++) {
      try {
        schedule(seed, breakIt, slow);
      } catch (AssertionError e) {
        caught++;
        first = first == null ? e.getMessage() : first;
      }
    }
    try {
      assertSlowPhasesYield(slow);
    } catch (AssertionError e) {
      caught++;
      first = first == null ? e.getMessage() : first;
    }
    assertTrue(caught > 0, "no schedule caught the broken engine");
    assertTrue(first.contains(what), "caught for another reason: " + first);
    System.out.println("broken engine caught by " + caught + " of 300 schedules, first: " + first);
  }

  /** One schedule; returns its steps, and adds its slow phase's grants and paced share to {@code slow}. */
  long schedule(long seed, Consumer<FakeEngine> variant, double[] slow) {
    SplittableRandom r = new SplittableRandom(seed);
    FakeEngine engine = new FakeEngine(CALL_TIMEOUT, FallbackPolicy.LOCAL, r::nextDouble);
    variant.accept(engine);

    ModelStore store = engine.store;
    // Redis's clock at a random point of a fleet epoch: a third of the schedules cross an epoch's end
    store.redisClockAhead(r.nextLong(FleetCount.EPOCH_MILLIS));
    long flushTimeout = store.flushTimeoutMillis();
    int n = r.nextInt(20) == 0 ? 20 + r.nextInt(21) : 2 + r.nextInt(7); // one in 20: a fleet of 20 to 40
    History h = new History(engine, n, callsKnown);
    h.configure(r, store);
    List<RedisRetryBudget> budgets = new ArrayList<>();
    BudgetConfig seedConfig = BudgetConfig.builder("seeded").ratio(0.1).minRetriesPerSecond(0).windowSeconds(10).build();
    for (int i = 0; i < n; i++) {
      budgets.add(engine.budget(seedConfig));
    }
    long[] own = new long[n];
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
    slow[0] += grants;
    slow[1] += paced;
    assertTrue(grants >= paced / 3 - n, "the slow phase: " + grants + " grants for " + asks + " asks, " + requests
        + " first attempts at ratio " + ratioPpm / 1e6 + ", floor " + floor + " (" + n + " budgets; decisions " + h.reasons
        + ", budgets " + budgets + ")");
    return steps;
  }

  /** One first attempt of a random budget that fails and asks for a retry (or succeeds), then time moves on. */
  private static long step(SplittableRandom r, FakeEngine engine, List<RedisRetryBudget> budgets, long[] own,
      History h, long fleetRate, boolean fails) {
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

  /** What happened, as the checker sees it, and the invariants over it. */
  private static final class History {
    private final FakeEngine engine;
    private final int clients; // the true fleet: every budget is one client of Redis
    private final java.util.Map<String, long[]> callsKnown;
    private final long startMillis;
    private long secondsChecked; // engine seconds whose fleet and calls were checked
    private long fleetCountedAt = -1; // when Redis had counted every client (the end of the warm-up)
    private RedisRetryBudget.Learned[] learnedBefore; // what each budget knew before it could hear the whole fleet
    private long[] callsBefore; // and the calls it had sent
    private long ceilingKnownSince = Long.MAX_VALUE; // every budget knows the fleet and the call ceiling in force
    private final List<long[]> open = new ArrayList<>(); // asked at, answered at (-1: not yet)
    long firstAttempts;
    long asks;
    long fromRedis; // GRANTED: a permit Redis handed out
    long fromFallback; // GRANTED_FALLBACK
    long maxRatioPpm;
    long maxFloor;
    final java.util.Map<BudgetDecision.Reason, Integer> reasons = new java.util.TreeMap<>();

    History(FakeEngine engine, int clients, java.util.Map<String, long[]> callsKnown) {
      this.engine = engine;
      this.clients = clients;
      this.callsKnown = callsKnown;
      this.startMillis = engine.millis();
    }

    long grants() {
      return fromRedis + fromFallback;
    }

    void configure(SplittableRandom r, ModelStore store) {
      long[] ratios = {50_000, 100_000, 200_000, 300_000};
      int[] windows = {1, 2, 5, 10, 60, 3600};
      int[] ceilings = {10, 100, 2_000};
      store.configure(ratios[r.nextInt(4)], windows[r.nextInt(windows.length)], r.nextInt(3), ceilings[r.nextInt(3)]);
      maxRatioPpm = Math.max(Math.max(maxRatioPpm, store.ratioPpm), 100_000); // the seed's too
      maxFloor = Math.max(maxFloor, store.minRetriesPerSecond);
      ceilingKnownSince = Long.MAX_VALUE;
    }

    void ask(RedisRetryBudget b) {
      long at = engine.millis();
      asks++;
      CompletableFuture<BudgetDecision> d = b.acquire().toCompletableFuture();
      long[] entry = {at, -1};
      open.add(entry);
      d.thenAccept(decision -> {
        entry[1] = engine.millis();
        reasons.merge(decision.reason(), 1, Integer::sum);
        switch (decision.reason()) {
          case GRANTED -> fromRedis++;
          case GRANTED_FALLBACK -> fromFallback++;
          default -> { }
        }
      });
      check();
    }

    void check() {
      long now = engine.millis();
      open.removeIf(e -> {
        long doneAt = e[1];
        assertTrue(doneAt >= 0 ? doneAt - e[0] <= CALL_TIMEOUT + 10 : now - e[0] <= CALL_TIMEOUT + 10,
            () -> "an acquire outlived the call timeout + 10 ms: asked at " + e[0] + ", " + (doneAt >= 0 ? "answered at " + doneAt
                : "open at " + now));
        return doneAt >= 0;
      });
      ModelStore s = engine.store;
      assertTrue(s.requestsCounted <= firstAttempts, () -> "first attempts counted twice: " + s.requestsCounted
          + " in Redis of " + firstAttempts);
      assertTrue(s.fallbackRetriesReported <= fromFallback, () -> "fallback grants counted twice: " + s.fallbackRetriesReported
          + " reported of " + fromFallback);
      assertTrue(fromRedis <= s.permitsGranted, () -> "a permit from Redis used twice (counted twice): " + fromRedis
          + " used of " + s.permitsGranted);
      int n = engine.budgets.size();
      double seconds = (now - startMillis) / 1000.0 + 1;
      double model = maxRatioPpm / 1e6 * firstAttempts + maxFloor * seconds;
      double fallbackShare = maxRatioPpm / 1e6 * firstAttempts + maxFloor * seconds * n + n;
      assertTrue(grants() <= model + fallbackShare + 1, () -> "grants " + grants() + " (" + fromRedis + " from Redis, "
          + fromFallback + " from the fallback) over the model's " + model + " plus the fallback's share " + fallbackShare);
      while (secondsChecked < now / 1000) {
        checkSecond(secondsChecked++);
      }
    }

    private boolean withinTenPercent(long estimate) {
      return Math.abs(estimate - clients) <= 0.1 * clients;
    }

    /**
     * The fleet's size and the calls of second {@code s} (just ended). The warm-up ends when Redis has
     * counted every client: a client is counted by its first call Redis applies, and before that nobody
     * can know it (the last phase, every call applied, bounds the warm-up: {@link #assertFleetLearned}).
     * From then on Redis's estimate is within ±10 % at every second, whatever the window, ceiling or
     * epoch; a budget knows it from its first reply that arrives more than two flush timeouts later (a
     * reply comes within that or never, so it answers a call applied after the warm-up). Once every budget
     * knows the fleet and the call ceiling C in force, the calls Redis runs in each second after the next
     * one (the flushes the budgets scheduled before they knew) are at most C.
     */
    private void checkSecond(long s) {
      ModelStore store = engine.store;
      long now = engine.millis();
      if (fleetCountedAt < 0 && store.fleetEstimate() >= clients) {
        fleetCountedAt = now;
      }
      if (fleetCountedAt >= 0) {
        long estimate = store.fleetEstimate();
        assertTrue(withinTenPercent(estimate), () -> "Redis's fleet estimate " + estimate + " for " + clients
            + " clients at second " + s + " (every client counted at " + fleetCountedAt + " ms)");
      }
      List<RedisRetryBudget> budgets = engine.budgets;
      if (learnedBefore == null && fleetCountedAt >= 0 && now > fleetCountedAt + 2 * store.flushTimeoutMillis()) {
        learnedBefore = new RedisRetryBudget.Learned[budgets.size()];
        callsBefore = new long[budgets.size()];
        for (int i = 0; i < budgets.size(); i++) {
          learnedBefore[i] = budgets.get(i).learned();
          callsBefore[i] = budgets.get(i).callsSent();
        }
      }
      boolean ceilingKnown = learnedBefore != null;
      for (int i = 0; learnedBefore != null && i < budgets.size(); i++) {
        RedisRetryBudget.Learned l = budgets.get(i).learned();
        if (l != learnedBefore[i]) {
          int budget = i;
          assertTrue(withinTenPercent(l.activeClients()), () -> "budget " + budget + " estimates the fleet at "
              + l.activeClients() + " clients of " + clients + " at second " + s);
        }
        ceilingKnown &= l != learnedBefore[i] && l.maxCallsPerSecond() == store.maxCallsPerSecond;
      }
      long ceiling = store.maxCallsPerSecond;
      ceilingKnownSince = ceilingKnown ? Math.min(ceilingKnownSince, now) : Long.MAX_VALUE;
      Long calls = store.runPerSecond.remove(s);
      if (s * 1000 - 1000 >= ceilingKnownSince) {
        long run = calls == null ? 0 : calls;
        assertTrue(run <= 2 * ceiling, () -> run + " calls in second " + s + " over twice the ceiling of " + ceiling
            + " a second (" + clients + " clients, known since " + ceilingKnownSince + " ms)");
        // (the fleets of 20 to 40 together: each alone has too few seconds for its average to mean much)
        String fleet = clients < 20 ? Integer.toString(clients) : "20-40";
        long[] t = callsKnown.computeIfAbsent(String.format("%5s clients at C = %4d", fleet, ceiling), k -> new long[3]);
        t[0]++;
        t[1] += run;
        t[2] = Math.max(t[2], run);
      }
    }

    /** At the end: Redis has counted every client, and every budget that called Redis since knows the fleet's size. */
    void assertFleetLearned() {
      assertTrue(fleetCountedAt >= 0, () -> "Redis counted " + engine.store.fleetEstimate() + " of " + clients + " clients");
      assertTrue(learnedBefore != null, "no budget heard the whole fleet's size");
      for (int i = 0; i < engine.budgets.size(); i++) {
        RedisRetryBudget b = engine.budgets.get(i);
        int budget = i;
        // (an idle healthy budget calls Redis for nothing: it learns at its next call)
        assertTrue(withinTenPercent(b.learned().activeClients()) || b.callsSent() == callsBefore[i], () -> "budget "
            + budget + " " + b + " estimates the fleet at " + b.learned().activeClients() + " of " + clients + " after "
            + (b.callsSent() - callsBefore[budget]) + " calls since every client was counted (at " + fleetCountedAt
            + " ms, now " + engine.millis() + " ms)");
      }
    }
  }
}
