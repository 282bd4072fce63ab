package io.retrybudget.budget;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.redis.protocol.BudgetKeys;
import io.retrybudget.budget.redis.protocol.BudgetScripts;
import io.retrybudget.budget.redis.protocol.ConfigChange;
import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.budget.redis.protocol.WindowRing;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The client's Redis cost at large fleet sizes, on a fake clock against a real Redis: the fleet
 * size is planted in the window ring (the clients counted in the current bucket), as 10,000 clients
 * would have left it. Each test drives one budget client; the fleet's cost is its cost times N.
 */
class BoundedCostTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();

  private final AtomicLong now = new AtomicLong(1_000_000);
  private final AtomicReference<Double> random = new AtomicReference<>(0.5);
  private RedisBudgetClient client;

  @BeforeEach
  void start() {
    redis.flushAll();
    client = RedisBudgetClient.builder(redis.connectionOptions().build())
        .callTimeout(Duration.ofSeconds(1)) // correctness here; timeouts are BudgetFaultTest's
        .millisClock(now::get).random(random::get).build();
  }

  @AfterEach
  void stop() {
    client.close();
  }

  /** A budget whose hello has reached Redis, with the fleet planted at {@code clients} and learned. */
  private RedisRetryBudget budgetOfAFleet(BudgetConfig config, long clients) {
    RedisRetryBudget b = (RedisRetryBudget) client.budget(config);
    BudgetKeys keys = new BudgetKeys(config.name());
    // (waits that hold at a load average of 16: the hello and the client's connection run on threads
    // that wait their turn for one of 2 cores; at a load of 25 the hello took over 5 s)
    Eventually.await("the hello reached Redis", Duration.ofSeconds(30),
        () -> (Long) redis.server().call("EXISTS", keys.window()) == 1 && b.learned().activeClients() == 1);
    new WindowRing(redis.server(), keys).plantClients(clients);
    b.recordFirstAttempt();
    now.addAndGet(1_000);
    b.flush(false).join();
    // the client's own timer (real time, fake clock) may have sent that flush a moment before: then this
    // one found it in flight and returned at once, and the size comes with the timer's reply
    Eventually.await("the fleet size Redis reports", Duration.ofSeconds(30), () -> b.learned().activeClients() == clients);
    return b;
  }

  private static long scriptCalls() {
    return redis.commandCalls("evalsha") + redis.commandCalls("eval");
  }

  /** Ticks the timer every 500 ms of fake time for {@code millis}, with traffic; returns the script calls made. */
  private long run(RedisRetryBudget b, long millis) {
    long before = scriptCalls();
    for (long t = 0; t < millis; t += 500) {
      for (int i = 0; i < 10; i++) {
        b.recordFirstAttempt();
      }
      now.addAndGet(500);
      b.flush(false).join();
    }
    return scriptCalls() - before;
  }

  @Test
  void flushesStretchSoThatTheFleetsCallsStayUnderTheCeiling() throws Exception {
    // a 60 s window: the planted bucket stays in it for the whole (real-time) test
    RedisRetryBudget b = budgetOfAFleet(BudgetConfig.builder("stretch").windowSeconds(60).build(), 10_000);
    // 10,000 clients, 2,000 calls a second: one flush every 5.6 s each (90 % of the ceiling)
    assertEquals(5_556, FlushSchedule.flushIntervalMillis(500, 10_000, 10_000, 2_000));
    assertEquals(500, FlushSchedule.flushIntervalMillis(500, 10_000, 900, 2_000), "small fleets: every tick");
    assertEquals(10_000, FlushSchedule.flushIntervalMillis(500, 10_000, 1_000_000, 2_000), "at most maxFlushInterval");
    long calls = run(b, 60_000);
    double fleetPerSecond = calls * 10_000 / 60.0;
    System.out.println("10,000 clients: " + calls + " flushes in 60 s from one client, the fleet's " + fleetPerSecond + "/s");
    assertTrue(calls >= 10 && calls <= 12, calls + " flushes in 60 s: every 5.5 s (a random first phase)");
    assertTrue(fleetPerSecond <= 2_000, "fleet " + fleetPerSecond + "/s");
    assertFalse(b.isDegraded(), "rarer calls are no failure");

    // the ceiling is a budget setting: a change reaches the client with its next flush
    try (RedisBudgetStore store = RedisBudgetStore.connect(redis.connectionOptions().build())) {
      new BudgetScripts(store).configure("stretch", new ConfigChange(null, null, null, null, 20_000),
          BudgetConfig.builder("stretch").build()).get(5, TimeUnit.SECONDS);
    }
    long reachedAfter = 0;
    while (b.learned().maxCallsPerSecond() != 20_000 && reachedAfter < 20_000) {
      reachedAfter += 500;
      run(b, 500);
    }
    assertEquals(20_000, b.learned().maxCallsPerSecond());
    assertTrue(reachedAfter <= 5_556 * 5 / 4 + 500, "the change arrived after " + reachedAfter + " ms");
    long fast = run(b, 10_000);
    assertTrue(fast >= 19, fast + " flushes in 10 s: 10,000 clients at 20,000 calls a second flush every tick again");
  }

  @Test
  void aSmallFleetFlushesEveryTickAsBefore() {
    RedisRetryBudget b = budgetOfAFleet(BudgetConfig.builder("small").windowSeconds(60).build(), 20);
    long calls = run(b, 10_000);
    assertTrue(calls >= 19 && calls <= 21, calls + " flushes in 10 s at 500 ms");
  }

  @Test
  void permitRequestsAreSampledAndLeasedAtTenThousandClients() {
    // a floor of 3,000 a second: the budget refills a little more than 3,000 permits a second (the
    // first attempts add a trickle), so each of the fleet's permit calls (at most 666 a second)
    // carries ceil(3 * 3,000.001 / 2,000) = 5
    RedisRetryBudget b = budgetOfAFleet(BudgetConfig.builder("lease").windowSeconds(60).minRetriesPerSecond(3_000).build(), 10_000);
    long lease = PermitCache.leaseSize(b.learned());
    assertEquals(5, lease);
    // with these first attempts the fleet's asks (N times this client's) are far above the C / 3 a
    // second of permit calls: asks are sampled, and each call asks for a lease
    for (int i = 0; i < 100; i++) {
      b.recordFirstAttempt();
    }
    random.set(0.0); // this ask is sampled in
    long before = scriptCalls();
    assertEquals(BudgetDecision.GRANTED, b.acquireBlocking());
    assertEquals(before + 1, scriptCalls(), "one permit call");
    for (int i = 1; i < lease; i++) {
      assertEquals(BudgetDecision.GRANTED, b.acquireBlocking());
    }
    assertEquals(before + 1, scriptCalls(), "the rest of the lease, without asking Redis");
    // the lease is spent; the client's share of the permit calls is a fraction of its asks: a draw
    // above it refuses locally, counted as denied
    random.set(0.999);
    assertEquals(BudgetDecision.Reason.DENIED_EXHAUSTED_CACHED, b.acquireBlocking().reason());
    assertEquals(before + 1, scriptCalls(), "not this client's turn: no call");
    random.set(0.0);
    assertEquals(BudgetDecision.GRANTED, b.acquireBlocking());
    assertEquals(before + 2, scriptCalls());
    // leased permits are kept for this client's spacing of permit calls (3 N / C = 15 s), at most a
    // bucket (6 s): then dropped
    now.addAndGet(6_001);
    random.set(0.999);
    assertEquals(BudgetDecision.Reason.DENIED_EXHAUSTED_CACHED, b.acquireBlocking().reason(), "the rest of the lease expired");
    now.addAndGet(10_000);
    b.flush(false).join();
    assertEquals(2, new WindowRing(redis.server(), new BudgetKeys("lease")).sum(WindowRing.D), "local refusals reach Redis");
    assertEquals(2 * lease, new WindowRing(redis.server(), new BudgetKeys("lease")).sum(WindowRing.G),
        "two leases, counted when granted");
  }

  @Test
  void aFleetUnderTheCallShareAsksForOnePermitAtATime() {
    RedisRetryBudget b = budgetOfAFleet(BudgetConfig.builder("unsampled").windowSeconds(60).minRetriesPerSecond(3_000).build(), 100);
    random.set(0.999); // would refuse, were asks sampled
    long before = scriptCalls();
    assertEquals(BudgetDecision.GRANTED, b.acquireBlocking());
    assertEquals(BudgetDecision.GRANTED, b.acquireBlocking());
    assertEquals(before + 2, scriptCalls(), "100 clients asking 1 a minute stay under 1,000 calls a second: every ask asks Redis, for one");
    assertEquals(0, b.unusedPermits());
  }

  @Test
  void aRefusalIsReusedUntilTheBudgetCanGrantAgain() {
    // 100 first attempts spanning 360 s (a new budget with a one-hour window) at ratio 0.1 and no
    // floor: a permit every 36 s, never more than 1 saved
    RedisRetryBudget b = (RedisRetryBudget) client.budget(
        BudgetConfig.builder("deny").windowSeconds(3600).minRetriesPerSecond(0).build());
    Eventually.await("the hello reached Redis", Duration.ofSeconds(5), () -> b.learned().activeClients() == 1);
    for (int i = 0; i < 100; i++) {
      b.recordFirstAttempt();
    }
    now.addAndGet(1_000);
    b.flush(false).join();
    assertEquals(BudgetDecision.GRANTED, b.acquireBlocking());
    long before = scriptCalls();
    BudgetDecision refused = b.acquireBlocking();
    assertEquals(BudgetDecision.Reason.DENIED_EXHAUSTED, refused.reason(), "Redis says: the next permit in 36 s, so 1 s (the most)");
    // 0.1 permits a first attempt, 100 of them over 360 s: 36 s a permit, from an empty balance (what
    // Redis refilled in the real milliseconds between the two calls aside)
    long next = refused.nextPermitIn().orElseThrow().toMillis();
    assertTrue(next > 30_000 && next <= 36_010, "next permit in " + next + " ms"); // 36 s, the rate truncated, rounded up
    now.addAndGet(999);
    BudgetDecision reused = b.acquireBlocking();
    assertEquals(BudgetDecision.Reason.DENIED_EXHAUSTED_CACHED, reused.reason());
    assertEquals(next - 999, reused.nextPermitIn().orElseThrow().toMillis(), "a reused refusal counts down from Redis's answer");
    assertEquals(before + 1, scriptCalls(), "refused locally until then, not for 100 ms only");
    now.addAndGet(2);
    b.acquireBlocking();
    assertEquals(before + 2, scriptCalls(), "then Redis is asked again");
  }
}
