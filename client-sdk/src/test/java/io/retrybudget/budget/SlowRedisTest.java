package io.retrybudget.budget;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * A Redis that is slow, not down, on fake time: every reply comes 30 ms after its call, over the 20
 * ms call timeout and under the flush timeout. 100 budgets of one name, 50 first attempts a second
 * between them, every one failing and asking for a retry for 20 s. The fleet must still retry at
 * about its ratio (0.10; no floor): each budget goes SLOW after its first late reply and decides from
 * its paced share, and no decision waits past the call timeout.
 */
class SlowRedisTest {
  private static final int FLEET = 100;
  private static final long CALL_TIMEOUT = 20;
  private static final long REPLY_DELAY = 30;
  private static final long EVERY = 20; // ms between first attempts: 50 a second

  @Test
  void aSlowRedisStillYieldsThePacedShare() {
    Random random = new Random(11);
    FakeEngine engine = new FakeEngine(CALL_TIMEOUT, FallbackPolicy.LOCAL, random::nextDouble);
    BudgetConfig config = BudgetConfig.builder("slow-redis").ratio(0.1).minRetriesPerSecond(0).windowSeconds(10).build();
    List<RedisRetryBudget> fleet = new ArrayList<>();
    for (int i = 0; i < FLEET; i++) {
      fleet.add(engine.budget(config));
    }
    // 10 s healthy, every first attempt succeeding: Redis counts the fleet and its traffic
    int next = 0;
    for (long t = 0; t < 10_000; t += EVERY) {
      fleet.get(next++ % FLEET).recordFirstAttempt();
      engine.advanceMillis(EVERY);
    }
    assertEquals(FLEET, fleet.get(0).learned().activeClients(), "Redis counted the fleet");

    engine.store.replyAfter(REPLY_DELAY);
    long firstAttempts = 0;
    long granted = 0;
    long worstWait = 0;
    for (long t = 0; t < 20_000; t += EVERY) {
      RedisRetryBudget b = fleet.get(next++ % FLEET);
      b.recordFirstAttempt();
      firstAttempts++;
      long asked = engine.millis();
      CompletableFuture<BudgetDecision> d = b.acquire().toCompletableFuture();
      // fake time moves 1 ms at a time until the decision: how long a caller waits
      while (!d.isDone() && engine.millis() - asked <= CALL_TIMEOUT + 10) {
        engine.advanceMillis(1);
      }
      assertTrue(d.isDone(), "an acquire outlived the call timeout + 10 ms");
      worstWait = Math.max(worstWait, engine.millis() - asked);
      if (d.join().granted()) {
        granted++;
      }
      engine.advanceMillis(Math.max(0, EVERY - (engine.millis() - asked)));
    }
    double ratio = granted / (double) firstAttempts;
    long slow = fleet.stream().filter(b -> b.health() == RedisHealth.State.SLOW).count();
    System.out.println("slow Redis (" + REPLY_DELAY + " ms replies, " + CALL_TIMEOUT + " ms call timeout): " + granted
        + " retries for " + firstAttempts + " first attempts, ratio " + ratio + "; " + slow + " of " + FLEET
        + " budgets SLOW; worst wait " + worstWait + " ms; permits Redis granted " + engine.store.permitsGranted);
    assertTrue(ratio >= 0.05 && ratio <= 0.15, "a slow Redis gave a ratio of " + ratio + " (" + granted + " of "
        + firstAttempts + ")");
    assertTrue(worstWait <= CALL_TIMEOUT + 10, "waited " + worstWait + " ms");
    assertFalse(fleet.stream().anyMatch(RedisRetryBudget::isDegraded), "a Redis that answers is not down");
    assertEquals(FLEET, slow, "every budget found Redis slow and decides from its paced share");
  }
}
