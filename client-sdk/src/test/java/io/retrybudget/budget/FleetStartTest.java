package io.retrybudget.budget;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.internal.FleetCount;
import io.retrybudget.budget.redis.protocol.BudgetKeys;
import io.retrybudget.budget.redis.protocol.WindowRing;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A fleet that starts together, on a fake clock against a real Redis: 10,000 budgets of one name in
 * one RedisBudgetClient (each with its own client id, counted by Redis as a client), their timers
 * driven every 100 ms of fake time, 2 first attempts a second each. The 10,000-client storm run
 * collapsed here (storm run "storm17-10k" of 2026-12-01, in git history): every budget said hello at once and
 * flushed every 500 ms before it knew the fleet's size, the replies came after the flush timeout (and
 * so taught nothing), every budget degraded and probed every tick.
 */
class FleetStartTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();
  private static final int FLEET = 10_000;
  private static final int CEILING = BudgetConfig.DEFAULT_MAX_CALLS_PER_SECOND;
  private static final long STEP = 100;
  /**
   * The client's call timeout and Lettuce's command timeout, which run on real time: correctness here
   * needs no call to time out unless Redis is paused. A step flushes up to 2,000 budgets at once (a
   * whole fleet: 10,000), about 30 us of Redis and as much of Lettuce a call, so 60-300 ms of CPU; at
   * a load of 16 on 2 cores a process gets about an eighth of a core, so the last reply of a step can
   * come over a second after the first call, and at 1 s (Lettuce's default and the old call timeout)
   * such a reply counts as a failure that degrades its budget. 5 s is the longest call timeout the
   * builder takes.
   */
  private static final Duration PATIENT = Duration.ofSeconds(5);

  private final AtomicLong now = new AtomicLong(1_000_000);
  private final Random random = new Random(17);
  private final List<RedisRetryBudget> fleet = new ArrayList<>();
  private RedisBudgetClient client;
  private final List<RedisBudgetClient> processes = new ArrayList<>();

  @BeforeEach
  void start() {
    redis.flushAll();
    client = RedisBudgetClient.builder(redis.connectionOptions().commandTimeout(PATIENT).build())
        .callTimeout(PATIENT).millisClock(now::get).random(random::nextDouble).build();
  }

  @AfterEach
  void stop() {
    client.close();
    processes.forEach(RedisBudgetClient::close);
  }

  private void startFleet(BudgetConfig config) {
    for (int i = 0; i < FLEET; i++) {
      fleet.add((RedisRetryBudget) client.budget(config));
    }
  }

  private long callsSent() {
    long sum = 0;
    for (RedisRetryBudget b : fleet) {
      sum += b.callsSent();
    }
    return sum;
  }

  /**
   * {@code seconds} of fake time in 100 ms steps: every budget's timer ticks every 500 ms, at one of
   * five phases (as budgets made together tick at random phases), and each budget records a first
   * attempt every 500 ms; returns the fleet's script calls in each fake second.
   */
  private long[] run(int seconds) {
    long[] perSecond = new long[seconds];
    long before = callsSent();
    List<CompletableFuture<Void>> flushes = new ArrayList<>(FLEET);
    for (int s = 0; s < seconds; s++) {
      for (long t = 0; t < 1_000; t += STEP) {
        now.addAndGet(STEP);
        flushes.clear();
        int phase = (int) (t / STEP) % 5;
        for (int i = phase; i < fleet.size(); i += 5) {
          RedisRetryBudget b = fleet.get(i);
          b.recordFirstAttempt();
          flushes.add(b.flush(false));
        }
        CompletableFuture.allOf(flushes.toArray(CompletableFuture[]::new)).join();
      }
      long after = callsSent();
      perSecond[s] = after - before;
      before = after;
    }
    return perSecond;
  }

  /** Redis's clock, ms: budget.lua counts a budget's clients per epoch of it ({@link FleetCount}). */
  private static long redisMillis() {
    List<?> time = (List<?>) redis.server().call("TIME");
    return Long.parseLong(String.valueOf(time.get(0))) * 1000 + Long.parseLong(String.valueOf(time.get(1))) / 1000;
  }

  /** Where an epoch of the fleet count ended between two readings of Redis's clock: "" when none did. */
  private static String epochEnd(long from, long to) {
    long end = (FleetCount.epochOf(from) + 1) * FleetCount.EPOCH_MILLIS;
    return end > to ? "" : "; an epoch of the fleet count ended " + (end - from) + " ms into the run's "
        + (to - from) + " ms of Redis time";
  }

  private long degraded() {
    return fleet.stream().filter(RedisRetryBudget::isDegraded).count();
  }

  @Test
  void tenThousandBudgetsMadeTogetherStayUnderTheCeilingFromTheFirstSecond() {
    // a 60 s window: every client heard from stays counted for the whole (real-time) test
    startFleet(BudgetConfig.builder("together").windowSeconds(60).build());
    long[] calls = run(20);
    System.out.println("10,000 budgets made together, script calls per second: " + Arrays.toString(calls));
    // the design aims at 0.9 C a second; one second may hold a little more (random phases, and the
    // client's real timer ticks too, between the test's ticks)
    for (int s = 0; s < calls.length; s++) {
      assertTrue(calls[s] <= CEILING * 11 / 10, "second " + s + ": " + calls[s] + " calls, over the ceiling " + CEILING
          + " (all: " + Arrays.toString(calls) + ")");
    }
    assertTrue(Arrays.stream(calls).sum() / calls.length <= CEILING * 95 / 100, "mean " + Arrays.stream(calls).sum() / calls.length);
    // none is starved of Redis either: the fleet flushes at about 0.9 C a second once it has started
    long late = Arrays.stream(calls, 8, 20).sum() / 12;
    assertTrue(late >= CEILING * 7 / 10, late + " calls a second once started");
    assertEquals(0, degraded(), "no budget degraded");
    for (RedisRetryBudget b : fleet) {
      assertTrue(b.callsSent() >= 2, "every budget has said hello and flushed since");
    }
    assertEquals(FLEET, fleet.get(FLEET - 1).learned().activeClients(), "Redis counts the whole fleet");
  }

  @Test
  void tenProcessesOfAThousandBudgetsStartingTogetherStayNearTheCeiling() {
    // ten RedisBudgetClients (processes), budgets made in turn across them over 1.7 s, as the storm
    // harness makes them: each process knows only its own 1,000 and what its replies said, and a
    // reply counts only the clients heard so far; scaled by the share of its own budgets heard
    // (1 of 100 heard with N = 1,000 reported: about 10 x 1,000) it knows the fleet's size early
    for (int p = 0; p < 10; p++) {
      processes.add(RedisBudgetClient.builder(redis.connectionOptions().commandTimeout(PATIENT).build())
          .callTimeout(PATIENT).millisClock(now::get).random(random::nextDouble).build());
    }
    BudgetConfig config = BudgetConfig.builder("ten-processes").windowSeconds(60).build();
    List<CompletableFuture<Void>> flushes = new ArrayList<>();
    long redisStart = redisMillis();
    for (int i = 0; i < FLEET; i++) {
      fleet.add((RedisRetryBudget) processes.get(i % 10).budget(config));
      if (i % 590 == 589) {
        now.addAndGet(STEP);
        flushes.clear();
        for (RedisRetryBudget b : fleet) {
          flushes.add(b.flush(false));
        }
        // the replies of a step come within it (milliseconds, against a step of 100 ms): waited for,
        // so the test runs on fake time alone (CI once saw 15,354 calls when they came steps late)
        CompletableFuture.allOf(flushes.toArray(CompletableFuture[]::new)).join();
      }
    }
    long whileMade = callsSent();
    long[] calls = run(20);
    // An epoch (120 s of Redis's clock) may end while the fleet is still being heard from. budget.lua's
    // estimate was the larger of this epoch's count and the last one's, so those heard only before the
    // end and those first heard after it were in no one count until every client had called again (an
    // interval, 5.6 s here); told a smaller fleet, clients flushed sooner: 2,602 and 2,628 calls in
    // seconds 9 and 10 with the epoch ending 3.5 s after the fleet began to be made. The second count
    // now holds both (FleetCountTest.aFleetThatStartsAsAnEpochEndsIsCountedWhole); the run's real time
    // decides whether an epoch ends in its first seconds, and the messages say when one did.
    String epoch = epochEnd(redisStart, redisMillis());
    System.out.println("10 x 1,000 budgets made over 1.7 s: " + whileMade + " calls meanwhile, then per second: "
        + Arrays.toString(calls) + epoch);
    // the ramp, then the ceiling
    long ramp = whileMade + calls[0] + calls[1];
    assertTrue(ramp <= 6L * CEILING, ramp + " calls while the fleet was made (1.7 s) and in the 2 s after: " + whileMade
        + " then " + Arrays.toString(calls) + epoch);
    for (int s = 2; s < calls.length; s++) {
      assertTrue(calls[s] <= CEILING * 5L / 4, "second " + s + ": " + calls[s] + " calls (all: " + Arrays.toString(calls)
          + ")" + epoch);
    }
    assertEquals(0, degraded(), "no budget degraded");
  }

  @Test
  void aProcessKnowsAtLeastItsOwnBudgetsAndScalesWhatRedisSaidByTheShareItHasHeardFrom() throws Exception {
    // a client whose Redis never answers: only the test tells it what Redis "said" (with a real one,
    // the first budget's hello may be heard in between, and the share heard would be 2 of 100)
    int closedPort;
    try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
      closedPort = s.getLocalPort();
    }
    try (RedisBudgetClient client = RedisBudgetClient.builder(
        io.retrybudget.budget.redis.transport.RedisConnectionOptions.standalone("redis://127.0.0.1:" + closedPort).build())
        .millisClock(now::get).random(random::nextDouble).build()) {
      estimates(client);
    }
  }

  private void estimates(RedisBudgetClient client) {
    BudgetConfig config = BudgetConfig.builder("estimate").windowSeconds(60).build();
    assertEquals(0, client.fleetEstimate("estimate"), "no budget of the name");
    List<RetryBudget> made = new ArrayList<>();
    for (int i = 0; i < 100; i++) {
      made.add(client.budget(config));
    }
    assertEquals(100, client.fleetEstimate("estimate"), "its own budgets, before any reply");
    client.learnedFleet("estimate", 1_000, true);
    assertEquals(100_000, client.fleetEstimate("estimate"), "1 of its 100 heard with 1,000 in the fleet: 100 times that");
    for (int i = 1; i < 100; i++) {
      client.learnedFleet("estimate", 2_000, true);
    }
    assertEquals(2_000, client.fleetEstimate("estimate"), "all heard: what Redis said last");
    client.learnedFleet("estimate", 50, false);
    assertEquals(100, client.fleetEstimate("estimate"), "a fleet that shrank: never under its own budgets");
    made.forEach(RetryBudget::close);
    assertEquals(0, client.fleetEstimate("estimate"), "forgotten when its last budget closes");
  }

  @Test
  void aFleetDegradedBeforeItLearnedItsSizeProbesUnderTheCeilingSpreadOutAndRecovers() {
    // a configuration that Redis holds broken: every call fails (at once), so no budget ever learns
    // the fleet's size; fixed later, as a Redis that comes back
    BudgetKeys keys = new BudgetKeys("broken-start");
    redis.server().call("HSET", keys.config(), "ratio_ppm", "nan", "window_s", "60", "min_rps", "10", "mode", "enforce");
    startFleet(BudgetConfig.builder("broken-start").windowSeconds(60).build());
    long[] calls = run(20);
    System.out.println("10,000 budgets degraded from the start, probes per second: " + Arrays.toString(calls));
    assertEquals(FLEET, degraded(), "every budget degraded");
    for (int s = 0; s < calls.length; s++) {
      assertTrue(calls[s] <= CEILING * 11 / 10, "second " + s + ": " + calls[s] + " probes (all: " + Arrays.toString(calls) + ")");
    }
    long late = Arrays.stream(calls, 8, 20).sum() / 12;
    assertTrue(late >= CEILING * 7 / 10, "the fleet keeps probing: " + late + " a second");
    // spread out: every second from the 8th holds between 0.6 and 1.4 of the fleet's mean
    for (int s = 8; s < calls.length; s++) {
      assertTrue(calls[s] >= late * 6 / 10 && calls[s] <= late * 14 / 10,
          "second " + s + ": " + calls[s] + " probes against a mean of " + late + " (all: " + Arrays.toString(calls) + ")");
    }
    // decisions while degraded come from the fallback at once, without a call
    RedisRetryBudget one = fleet.get(FLEET / 2);
    long sent = one.callsSent();
    BudgetDecision d = one.acquireBlocking();
    assertTrue(d.reason() == BudgetDecision.Reason.GRANTED_FALLBACK || d.reason() == BudgetDecision.Reason.DENIED_FALLBACK, d.toString());
    assertEquals(sent, one.callsSent());

    // Redis answers again (the budget has no configuration: the next call seeds it)
    redis.server().call("DEL", keys.config());
    long[] recovery = new long[9];
    long recoveredAt = -1;
    for (int s = 0; s < recovery.length; s++) {
      recovery[s] = run(1)[0];
      if (recoveredAt < 0 && degraded() == 0) {
        recoveredAt = s + 1;
      }
    }
    System.out.println("recovery, calls per second: " + Arrays.toString(recovery) + ", all recovered after " + recoveredAt + " s");
    // within one probe interval of Redis answering: at most 1.25 x 5.3 s, and the tick after it
    assertTrue(recoveredAt > 0 && recoveredAt <= 8, "all recovered after " + recoveredAt + " s; still degraded: " + degraded());
    for (int s = 0; s < recovery.length; s++) {
      assertTrue(recovery[s] <= CEILING * 11 / 10, "recovery second " + s + ": " + recovery[s] + " calls");
    }
  }

  @Test
  void aReplyAfterTheFlushTimeoutStillTeachesTheFleetsSize() {
    // Lettuce's own command timeout far beyond the pause: the reply comes late, not never
    RedisBudgetClient patient = RedisBudgetClient.builder(redis.connectionOptions().commandTimeout(Duration.ofSeconds(30)).build())
        .callTimeout(Duration.ofSeconds(1)).millisClock(now::get).random(random::nextDouble).build();
    processes.add(patient);
    BudgetConfig config = BudgetConfig.builder("late").windowSeconds(60).build();
    RedisRetryBudget b = (RedisRetryBudget) patient.budget(config);
    BudgetKeys keys = new BudgetKeys(config.name());
    // the waits below are for real replies and the client's real timer: long, since on a loaded machine
    // (a load of 30, after this class's 10,000-budget runs) the hello took over 5 s; the test's claim
    // is what the late reply teaches, not how soon it comes
    Eventually.await("the hello reached Redis", Duration.ofSeconds(30),
        () -> (Long) redis.server().call("EXISTS", keys.window()) == 1 && b.learned().activeClients() == 1);
    // the fleet as 10,000 clients would have left it in the window ring
    new WindowRing(redis.server(), keys).plantClients(FLEET);
    b.recordFirstAttempt();
    now.addAndGet(1_000);
    redis.server().pause();
    try {
      b.flush(false).join(); // gives up after the flush timeout (250 ms)
      assertEquals(1, b.learned().activeClients(), "nothing learned while Redis is paused");
    } finally {
      redis.server().resume();
    }
    // (FLEET + 1 when Redis's clock entered a new bucket meanwhile: this client is counted there too)
    try {
      Eventually.await("the late reply taught the fleet's size", Duration.ofSeconds(30), () -> b.learned().activeClients() >= FLEET);
    } catch (AssertionError e) {
      throw new AssertionError(e.getMessage() + "; learned " + b.learned() + ", degraded " + b.isDegraded(), e);
    }
    assertFalse(b.isDegraded(), "one late call is no degradation");
  }
}
