package io.retrybudget.budget;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.redis.protocol.BudgetKeys;
import io.retrybudget.budget.redis.protocol.BudgetScripts;
import io.retrybudget.budget.redis.protocol.ConfigChange;
import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * 20 processes (RedisBudgetClients) with one budget each, on a fake clock against a real Redis, with
 * {@code max_calls_per_second} 10: the window raised from 10 s to 60 s while they run. The fleet must
 * stay counted (active_clients about 20), so the clients keep their stretched flush interval (calls
 * under the ceiling) and, once Redis is gone, their LOCAL fallback takes a twentieth of the floor each,
 * not the whole floor.
 */
class WindowChangeFleetTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();
  private static final int FLEET = 20;
  private static final int CEILING = 10;
  private static final int FLOOR = 100;
  private static final long STEP = 100;
  private static final long TICK = 500; // the client's flushInterval (its timer's tick)

  private final AtomicLong now = new AtomicLong(1_000_000);
  private final Random random = new Random(29);
  private final List<RedisBudgetClient> processes = new ArrayList<>();
  private final List<RedisRetryBudget> fleet = new ArrayList<>();

  @BeforeEach
  void start() {
    redis.server().restart();
    BudgetConfig config = BudgetConfig.builder("raised").ratio(0.1).minRetriesPerSecond(FLOOR).windowSeconds(10)
        .maxCallsPerSecond(CEILING).build();
    // the subject is the fleet count, not Redis's speed: the longest timeouts the client takes. A flush
    // is waited at most its timeout (the call timeout, 1 s, before), and one that missed it at loads of
    // 20 to 40 left its budget with no fleet size learned ("before: [20, ..., 20, 0]"). At a load of 16 a
    // script call to a local Redis answers well inside 5 s; with Redis killed, calls fail at once
    // (the connection rejects commands while down), so the degraded part waits no timeout
    for (int i = 0; i < FLEET; i++) {
      RedisBudgetClient p = RedisBudgetClient.builder(redis.connectionOptions().commandTimeout(Duration.ofSeconds(5)).build())
          .callTimeout(Duration.ofSeconds(5)).millisClock(now::get).random(random::nextDouble).build();
      processes.add(p);
      // (20 clients connecting, each its own Lettuce client, took over 10 s at a load of 36)
      Eventually.await("connected", Duration.ofSeconds(30), () -> !p.isDegraded());
      fleet.add((RedisRetryBudget) p.budget(config));
    }
  }

  @AfterEach
  void stop() {
    processes.forEach(RedisBudgetClient::close);
  }

  private long callsSent() {
    return fleet.stream().mapToLong(RedisRetryBudget::callsSent).sum();
  }

  /**
   * One fake second, 100 ms steps: each budget counts a first attempt a step and, at each tick of its
   * timer (every flushInterval, 500 ms), flushes when due; returns its script calls.
   */
  private long healthySecond() {
    long before = callsSent();
    List<CompletableFuture<Void>> flushes = new ArrayList<>();
    for (long t = 0; t < 1_000; t += STEP) {
      long at = now.addAndGet(STEP);
      flushes.clear();
      for (RedisRetryBudget b : fleet) {
        b.recordFirstAttempt();
        if (at % TICK == 0) {
          flushes.add(b.flush(false));
        }
      }
      CompletableFuture.allOf(flushes.toArray(CompletableFuture[]::new)).join();
    }
    return callsSent() - before;
  }

  /** One fake second degraded: each budget counts a first attempt a step and asks for a retry; returns the grants. */
  private long degradedSecond() {
    long granted = 0;
    for (long t = 0; t < 1_000; t += STEP) {
      now.addAndGet(STEP);
      for (RedisRetryBudget b : fleet) {
        b.recordFirstAttempt();
        if (b.acquire().toCompletableFuture().join().granted()) {
          granted++;
        }
      }
    }
    return granted;
  }

  private long[] fleetSizes() {
    return fleet.stream().mapToLong(b -> b.learned().activeClients()).toArray();
  }

  /**
   * The ceiling is the builders' 10 in Redis (the first client seeded it), in every budget's last reply
   * (what paces its flushes: at the default 2,000 these 20 clients would flush every 500 ms, 40 calls a
   * second) and in the configuration each reports in force.
   */
  private void assertCeilingEverywhere(int windowSeconds) {
    assertEquals(Integer.toString(CEILING), redis.server().call("HGET", new BudgetKeys("raised").config(), "max_calls_per_s"));
    for (RedisRetryBudget b : fleet) {
      assertEquals(CEILING, b.learned().maxCallsPerSecond(), "the ceiling of the last reply");
      BudgetConfig inForce = b.configInForce().orElseThrow();
      assertEquals(CEILING, inForce.maxCallsPerSecond(), "the ceiling in force: " + inForce);
      assertEquals(windowSeconds, inForce.windowSeconds(), "the window in force: " + inForce);
    }
  }

  @Test
  void raisingTheWindowKeepsTheFleetCountedTheCallsUnderTheCeilingAndTheFallbackShareRight() throws Exception {
    for (int s = 0; s < 10; s++) {
      healthySecond();
    }
    assertTrue(Arrays.stream(fleetSizes()).allMatch(n -> n == FLEET), "before: " + Arrays.toString(fleetSizes()));
    assertCeilingEverywhere(10);
    try (RedisBudgetStore store = RedisBudgetStore.connect(redis.connectionOptions().build())) {
      new BudgetScripts(store).configure("raised", new ConfigChange(null, 60, null, null), BudgetConfig.builder("raised").build())
          .get(5, TimeUnit.SECONDS);
    }
    long[] calls = new long[20];
    for (int s = 0; s < calls.length; s++) {
      calls[s] = healthySecond();
      long[] sizes = fleetSizes();
      assertTrue(Arrays.stream(sizes).allMatch(n -> n >= FLEET * 9 / 10 && n <= FLEET * 11 / 10),
          "second " + s + " after the window was raised, fleet sizes learned: " + Arrays.toString(sizes));
    }
    // the window change kept the ceiling (configure.lua keeps a field it is not given)
    assertCeilingEverywhere(60);
    double mean = Arrays.stream(calls).sum() / (double) calls.length;
    System.out.println("window raised 10 -> 60 s, script calls per second: " + Arrays.toString(calls) + ", mean " + mean);
    // the clients aim at 0.9 C a second; a mean over 20 s under C leaves room for their random phases
    assertTrue(mean <= CEILING, "mean " + mean + " calls a second (all: " + Arrays.toString(calls) + ")");

    // Redis gone: each client's LOCAL fallback takes its share of the floor, 100 / 20 a second
    redis.server().kill();
    Eventually.await("every budget degraded", Duration.ofSeconds(20), () -> {
      // time moves on while we wait, as it would: a budget reusing a refusal from Redis (or not its turn
      // to ask) calls Redis, and finds it gone, only once the fake clock has moved past that
      now.addAndGet(STEP);
      List<CompletableFuture<BudgetDecision>> asks = new ArrayList<>();
      for (RedisRetryBudget b : fleet) {
        if (!b.isDegraded()) {
          asks.add(b.acquire().toCompletableFuture());
        }
      }
      asks.forEach(CompletableFuture::join);
      return fleet.stream().allMatch(RedisRetryBudget::isDegraded);
    });
    long[] grants = new long[5];
    for (int s = 0; s < grants.length; s++) {
      grants[s] = degradedSecond();
    }
    System.out.println("LOCAL fallback, grants per second: " + Arrays.toString(grants));
    // 200 first attempts a second x 0.1 + the floor, 100 = 120 a second; each client taking the whole
    // floor would grant every one of the 200 asks a second
    long total = Arrays.stream(grants).sum();
    assertTrue(total <= 120 * 5 * 12 / 10, total + " grants in 5 s: " + Arrays.toString(grants));
  }
}
