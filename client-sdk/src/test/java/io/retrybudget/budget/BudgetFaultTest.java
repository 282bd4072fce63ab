package io.retrybudget.budget;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.redis.protocol.BudgetKeys;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import io.retrybudget.budget.redis.protocol.WindowRing;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import io.retrybudget.testing.RedisServerProcess;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Redis killed, paused (SIGSTOP) and restarted with an empty script cache while a storm of
 * budget calls runs: no call waits past its timeout, the client reports degraded, recovers within
 * 2 s of Redis returning, and no count is applied twice.
 */
class BudgetFaultTest {
  private static final Duration CALL_TIMEOUT = Duration.ofMillis(20);
  // the bound: no budget call waits longer than its timeout + 10 ms
  private static final long LATENCY_BOUND_NANOS = CALL_TIMEOUT.plusMillis(10).toNanos();

  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();

  private RedisBudgetClient client;
  private RedisBudgetClient patient;
  private RetryBudget budget;
  private Storm storm;

  @BeforeEach
  void start() {
    redis.server().restart();
    client = RedisBudgetClient.builder(redis.connectionOptions().build()).callTimeout(CALL_TIMEOUT).build();
    // a long window, so every count of the test stays in it; a floor that refills 100 permits a second
    budget = client.budget(BudgetConfig.builder("faults").windowSeconds(300).minRetriesPerSecond(100).build());
  }

  @AfterEach
  void stop() {
    if (storm != null) {
      storm.stop();
    }
    client.close();
    if (patient != null) {
      patient.close();
    }
  }

  @Test
  void killThenRestartWithAnEmptyScriptCache() {
    storm = warmStorm();

    redis.server().kill();
    Eventually.await("client reports degraded", Duration.ofSeconds(2), budget::isDegraded);
    storm.runFor(Duration.ofMillis(1500));
    long decisionsWhileDown = storm.fallbackDecisions.get();

    redis.server().restart(); // empty: no keys, no scripts
    long recoveredMs = Eventually.await("recovered", Duration.ofSeconds(2), () -> !budget.isDegraded());
    storm.stop();
    assertTrue(decisionsWhileDown > 0, "the fallback answered while Redis was down");
    assertTrue(storm.maxLatencyNanos.get() <= LATENCY_BOUND_NANOS + storm.schedulingSlackNanos(),
        storm.report());
    System.out.println("kill/restart: recovered in " + recoveredMs + " ms; " + storm.report());
    // the scripts are back in the empty script cache: decisions come from Redis again (a single call
    // may still miss its 20 ms on a loaded machine, so ask until one answers from Redis)
    Eventually.await("a decision from Redis", Duration.ofSeconds(2), () -> {
      BudgetDecision.Reason r = budget.acquireBlocking().reason();
      return r == BudgetDecision.Reason.GRANTED || r == BudgetDecision.Reason.DENIED_EXHAUSTED;
    });
  }

  @Test
  void pauseThenResumeAppliesNoCountTwice() {
    storm = warmStorm();

    redis.server().pause();
    try {
      Eventually.await("client reports degraded", Duration.ofSeconds(2), budget::isDegraded);
      storm.runFor(Duration.ofMillis(1500));
    } finally {
      redis.server().resume();
    }
    long recoveredMs = Eventually.await("recovered", Duration.ofSeconds(2), () -> !budget.isDegraded());
    storm.runFor(Duration.ofMillis(300));
    storm.stop();
    assertTrue(storm.maxLatencyNanos.get() <= LATENCY_BOUND_NANOS + storm.schedulingSlackNanos(),
        storm.report());
    System.out.println("pause/resume: recovered in " + recoveredMs + " ms; " + storm.report());

    budget.close(); // final flush
    long recorded = storm.firstAttempts.get();
    long inRedis = redisRequests();
    // calls queued while Redis was stopped ran when it resumed; none may count twice, some may be lost
    assertTrue(inRedis <= recorded, "Redis counted " + inRedis + " first attempts of " + recorded + " recorded");
    assertTrue(inRedis >= recorded / 2, "most counts arrive: " + inRedis + " of " + recorded);
    long granted = redisRetries();
    // Redis counts its own grants (those given up on at the timeout too) and the fallback's, reported
    // with the next call; none twice
    assertTrue(granted <= storm.grantedByRedis.get() + storm.timedOut() + storm.grantedByFallback.get(),
        "grants in Redis " + granted + "; " + storm.report());
  }

  @Test
  void aClientBuiltWhileRedisIsDownWorksFromItsFallbackAndConnectsLater() {
    RedisServerProcess server = redis.server();
    server.kill();
    try (RedisBudgetClient late = RedisBudgetClient.builder(RedisConnectionOptions.standalone(server.uri()).build())
        .callTimeout(CALL_TIMEOUT).build()) {
      RetryBudget b = late.budget(BudgetConfig.builder("late").build());
      assertTrue(b.isDegraded());
      assertEquals(BudgetDecision.Reason.DENIED_FALLBACK, b.acquireBlocking().reason(), "no fleet size known yet: no floor share");
      for (int i = 0; i < 20; i++) {
        b.recordFirstAttempt();
      }
      assertEquals(BudgetDecision.GRANTED_FALLBACK, b.acquireBlocking(), "10% of its own 20 first attempts");
      server.restart();
      Eventually.await("connected", Duration.ofSeconds(3), () -> !late.isDegraded() && !b.isDegraded()
          && b.acquireBlocking().reason() == BudgetDecision.Reason.GRANTED);
    }
  }

  @Test
  void aClientThatNeverReachedRedisKeepsAWindowNotABacklog() {
    java.util.concurrent.atomic.AtomicLong millis = new java.util.concurrent.atomic.AtomicLong(1_000_000);
    redis.server().kill();
    try (RedisBudgetClient never = RedisBudgetClient.builder(redis.connectionOptions().build())
        .callTimeout(CALL_TIMEOUT).millisClock(millis::get).build()) {
      RedisRetryBudget b = (RedisRetryBudget) never.budget(BudgetConfig.builder("never").build());
      for (int i = 0; i < 100_000; i++) {
        b.recordFirstAttempt();
      }
      b.flush(false); // a timer tick without Redis
      millis.addAndGet(60_000); // a minute later, no new traffic
      int granted = 0;
      for (int i = 0; i < 1000; i++) {
        if (b.acquireBlocking().granted()) {
          granted++;
        }
      }
      assertEquals(0, granted, "old first attempts have left the window");
    }
  }

  @Test
  void shadowModeNeverRefusesEvenFromTheFallback() throws Exception {
    RetryBudget shadow = client.budget(BudgetConfig.builder("shadowed").minRetriesPerSecond(0).mode(BudgetMode.SHADOW).build());
    shadow.acquire().toCompletableFuture().get(); // learns the mode from Redis
    redis.server().kill();
    for (int i = 0; i < 5; i++) {
      assertEquals(BudgetDecision.GRANTED_SHADOW, shadow.acquireBlocking());
    }
  }

  @Test
  void fallbackPolicies() {
    redis.server().kill();
    try (RedisBudgetClient deny = RedisBudgetClient.builder(redis.connectionOptions().build())
            .callTimeout(CALL_TIMEOUT).fallbackPolicy(FallbackPolicy.DENY).build();
        RedisBudgetClient allow = RedisBudgetClient.builder(redis.connectionOptions().build())
            .callTimeout(CALL_TIMEOUT).fallbackPolicy(FallbackPolicy.ALLOW).build();
        RedisBudgetClient noFloor = RedisBudgetClient.builder(redis.connectionOptions().build())
            .callTimeout(CALL_TIMEOUT).fallbackSharesFloor(false).build()) {
      assertEquals(BudgetDecision.Reason.DENIED_FALLBACK, deny.budget(BudgetConfig.builder("p").build()).acquireBlocking().reason());
      assertEquals(BudgetDecision.GRANTED_FALLBACK, allow.budget(BudgetConfig.builder("p").build()).acquireBlocking());
      RetryBudget local = noFloor.budget(BudgetConfig.builder("p").ratio(0.5).build());
      assertEquals(BudgetDecision.Reason.DENIED_FALLBACK, local.acquireBlocking().reason(), "no requests, no floor: nothing");
      // until two calls in a row have failed, a refusal is "in doubt", not the fallback's: wait for the
      // fallback (with no first attempts yet it grants nothing, so waiting spends nothing)
      Eventually.await("degraded", Duration.ofSeconds(5), () -> {
        local.acquireBlocking();
        return local.isDegraded();
      });
      for (int i = 0; i < 1_000; i++) {
        local.recordFirstAttempt();
      }
      int granted = 0;
      for (int i = 0; i < 100; i++) {
        if (local.acquireBlocking().granted()) {
          granted++;
        }
      }
      // the budget's paced rule over its own counts (no floor: no time refill): 1,000 first attempts
      // at ratio 0.5 refill 50 permits a second over the 10 s window, 500 over one second; half a
      // second of that is saved up, whatever second they span: between 25 and 250, never the 500
      // of the window's allowance at once
      assertTrue(granted >= 25 && granted <= 250, "half a second of half its own rate: " + granted);
    }
  }

  @Test
  void theLocalFallbackTakesOnlyItsShareOfTheFleetFloor() throws Exception {
    // four clients seen in Redis; then Redis goes away
    List<RetryBudget> fleet = new ArrayList<>();
    BudgetConfig config = BudgetConfig.builder("share").minRetriesPerSecond(4).windowSeconds(10).build();
    for (int i = 0; i < 4; i++) {
      RetryBudget b = client.budget(config);
      b.recordFirstAttempt();
      fleet.add(b);
    }
    for (RetryBudget b : fleet) {
      b.acquire().toCompletableFuture().get(); // every client learns the fleet size
    }
    RetryBudget last = client.budget(config);
    last.acquire().toCompletableFuture().get();
    redis.server().kill();
    Eventually.await("degraded", Duration.ofSeconds(2), () -> {
      last.acquireBlocking();
      return last.isDegraded();
    });
    int granted = 0;
    for (int i = 0; i < 100; i++) {
      if (last.acquireBlocking().granted()) {
        granted++;
      }
    }
    // fleet floor 4/s x 10 s = 40, shared by 5 clients: at most 8 each (some used before degrading)
    assertTrue(granted <= 8, "granted " + granted);
  }

  /**
   * A client whose calls a loaded machine still answers in time: on 2 cores at a load average of 16 a
   * runnable thread (the test's, Lettuce's, Redis's) waits tens of milliseconds for a core, past a
   * 20 ms call timeout, but not for a second; connecting (TCP, HELLO, loading 5 scripts) took over the
   * default 2 s at a load of 35, and takes well under 5 s at 16. For tests of what follows an answer or a fault (a pause
   * or a kill makes calls fail whatever the timeout); the timeout itself is the storms' subject here
   * and SeededBudgetScheduleTest's on fake time.
   */
  private RetryBudget patientBudget(BudgetConfig config) {
    patient = RedisBudgetClient.builder(redis.connectionOptions().connectTimeout(Duration.ofSeconds(5))
        .commandTimeout(Duration.ofSeconds(5)).build()).callTimeout(Duration.ofSeconds(1)).build();
    return patient.budget(config);
  }

  @Test
  void aPermitRedisGrantsAfterTheClientGaveUpServesItsNextRetry() {
    budget.close(); // no calls of the 20 ms client's budget between the script calls counted below
    RetryBudget patientOne = patientBudget(BudgetConfig.builder("faults").windowSeconds(300).minRetriesPerSecond(100).build());
    Eventually.await("healthy", Duration.ofSeconds(30), () -> !patientOne.isDegraded()
        && patientOne.acquireBlocking().reason() == BudgetDecision.Reason.GRANTED);
    long grantedBefore = redisRetries();
    redis.server().pause();
    try {
      BudgetDecision gaveUp = patientOne.acquireBlocking();
      assertEquals(BudgetDecision.Reason.DENIED_FALLBACK, gaveUp.reason(), "in doubt after one timeout: refused");
    } finally {
      redis.server().resume();
    }
    Eventually.await("the late grant is applied in Redis", Duration.ofSeconds(30), () -> redisRetries() == grantedBefore + 1);
    // its late reply made the budget SLOW, whose timer probes Redis even when idle: once a probe is
    // answered in time it is HEALTHY again, idle, and calls Redis for nothing but asks
    Eventually.await("healthy again", Duration.ofSeconds(10),
        () -> ((RedisRetryBudget) patientOne).health() == RedisHealth.State.HEALTHY);
    long scriptCalls = redis.commandCalls("evalsha");
    assertEquals(BudgetDecision.GRANTED, patientOne.acquireBlocking(), "the late permit is used");
    assertEquals(scriptCalls, redis.commandCalls("evalsha"), "without asking Redis");
  }

  @Test
  void theFallbackGrantsNothingRightAfterTheFleetBudgetWasSpent() {
    RetryBudget spent = patientBudget(BudgetConfig.builder("spent").minRetriesPerSecond(0).ratio(1.0).build());
    for (int i = 0; i < 100; i++) {
      spent.recordFirstAttempt();
    }
    Eventually.await("exhausted answer from Redis", Duration.ofSeconds(30),
        () -> exhaust(spent));
    redis.server().kill();
    int granted = 0;
    for (int i = 0; i < 5; i++) {
      granted += spent.acquireBlocking().granted() ? 1 : 0;
    }
    // no new first attempt, no floor: nothing refills, and the fallback starts from nothing
    assertEquals(0, granted, "local grants on a fleet budget spent a moment ago");
  }

  /** Spends the budget's allowance; true once Redis answers "exhausted". */
  private static boolean exhaust(RetryBudget b) {
    for (int i = 0; i < 200; i++) {
      if (b.acquireBlocking().reason() == BudgetDecision.Reason.DENIED_EXHAUSTED) {
        return true;
      }
    }
    return false;
  }

  /** A storm past its warm-up (class loading, JIT), measured from a healthy state on. */
  private Storm warmStorm() {
    Storm s = new Storm(budget, 3);
    Eventually.await("traffic reaches Redis", Duration.ofSeconds(3), () -> redisRequests() > 0);
    s.runFor(Duration.ofMillis(500));
    Eventually.await("healthy", Duration.ofSeconds(2), () -> !budget.isDegraded());
    s.resetStats();
    return s;
  }

  private long redisRequests() {
    return new WindowRing(redis.server(), new BudgetKeys("faults")).sum(WindowRing.Q);
  }

  private long redisRetries() {
    return new WindowRing(redis.server(), new BudgetKeys("faults")).sum(WindowRing.G);
  }

  /** Threads that count first attempts and ask for permits as fast as they can. */
  static final class Storm {
    final AtomicLong firstAttempts = new AtomicLong();
    final AtomicLong calls = new AtomicLong();
    final AtomicLong maxLatencyNanos = new AtomicLong();
    final AtomicLong slowCalls = new AtomicLong();
    final AtomicLong fallbackDecisions = new AtomicLong();
    final AtomicLong grantedByRedis = new AtomicLong();
    final AtomicLong grantedByFallback = new AtomicLong();
    final AtomicLong overTimeout = new AtomicLong();
    private final AtomicBoolean running = new AtomicBoolean(true);
    private final List<Thread> threads = new ArrayList<>();
    private final AtomicLong maxPauseNanos = new AtomicLong();
    private final AtomicLong maxWakeLatenessNanos = new AtomicLong();

    Storm(RetryBudget budget, int threadCount) {
      for (int t = 0; t < threadCount; t++) {
        Thread thread = new Thread(() -> {
          long lastLoop = System.nanoTime();
          while (running.get()) {
            for (int i = 0; i < 10; i++) {
              budget.recordFirstAttempt();
            }
            firstAttempts.addAndGet(10);
            long start = System.nanoTime();
            // time the thread spent off-CPU between loops (GC, scheduling) shows how noisy the box is
            maxPauseNanos.accumulateAndGet(start - lastLoop, Math::max);
            BudgetDecision d = budget.acquireBlocking();
            long took = System.nanoTime() - start;
            lastLoop = System.nanoTime();
            calls.incrementAndGet();
            maxLatencyNanos.accumulateAndGet(took, Math::max);
            if (took > LATENCY_BOUND_NANOS) {
              slowCalls.incrementAndGet();
            }
            if (took > CALL_TIMEOUT.toNanos()) {
              overTimeout.incrementAndGet();
            }
            if (d.reason() == BudgetDecision.Reason.GRANTED_FALLBACK || d.reason() == BudgetDecision.Reason.DENIED_FALLBACK) {
              fallbackDecisions.incrementAndGet();
            }
            if (d.reason() == BudgetDecision.Reason.GRANTED) {
              grantedByRedis.incrementAndGet();
            }
            if (d.reason() == BudgetDecision.Reason.GRANTED_FALLBACK) {
              grantedByFallback.incrementAndGet();
            }
            java.util.concurrent.locks.LockSupport.parkNanos(200_000);
          }
        }, "storm-" + t);
        thread.setDaemon(true);
        thread.start();
        threads.add(thread);
      }
      // how late this machine wakes a parked thread right now: a thread that parks 1 ms at a time
      Thread probe = new Thread(() -> {
        while (running.get()) {
          long before = System.nanoTime();
          java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
          maxWakeLatenessNanos.accumulateAndGet(System.nanoTime() - before - 1_000_000, Math::max);
        }
      }, "storm-wake-probe");
      probe.setDaemon(true);
      probe.start();
      threads.add(probe);
    }

    void resetStats() {
      maxLatencyNanos.set(0);
      slowCalls.set(0);
      maxPauseNanos.set(0);
      maxWakeLatenessNanos.set(0);
      fallbackDecisions.set(0);
    }

    /** Calls that timed out may still have been granted in Redis once. */
    long timedOut() {
      return overTimeout.get() + fallbackDecisions.get();
    }

    /**
     * A pause of the JVM itself (GC, the OS scheduling another process on this 2-core box) adds to
     * any call it lands in; the bound applies to time spent on the budget's account, so the worst
     * pause seen between calls is allowed on top. A call that ends at its timeout is woken twice (the
     * timer thread, then the caller), and each wake-up can be as late as the worst the probe thread
     * saw: at a load of 16 on 2 cores that is tens of milliseconds (CI saw a 36.8 ms call with a
     * 20 ms timeout at load 28), while a call that waits for a paused Redis waits 1,500 ms.
     */
    long schedulingSlackNanos() {
      return Math.max(maxPauseNanos.get(), 2 * maxWakeLatenessNanos.get());
    }

    void runFor(Duration d) {
      java.util.concurrent.locks.LockSupport.parkNanos(d.toNanos());
    }

    void stop() {
      running.set(false);
      for (Thread t : threads) {
        try {
          t.join(2000);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    }

    String report() {
      return String.format("%d calls, max latency %.1f ms, %d over timeout+10ms, worst pause between calls %.1f ms,"
          + " worst wake-up lateness %.1f ms", calls.get(), maxLatencyNanos.get() / 1e6, slowCalls.get(),
          maxPauseNanos.get() / 1e6, maxWakeLatenessNanos.get() / 1e6);
    }
  }
}
