package io.retrybudget.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.budget.BudgetMode;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.budget.redis.protocol.BudgetKeys;
import io.retrybudget.budget.redis.protocol.LuaScript;
import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * One set of budget behaviours, run unchanged against every backend: standalone Redis and a
 * 3-master Redis Cluster (the subclasses only say which). A deployment of its own (a managed Redis,
 * another Cluster layout) runs it the same way:
 *
 * <pre>{@code
 * class MyRedisBudgetTest extends BudgetTestKit {
 *   @RegisterExtension static final RedisExtension redis = RedisExtension.cluster();
 *
 *   @Override protected RedisExtension redis() { return redis; }
 * }
 * }</pre>
 */
public abstract class BudgetTestKit {
  /** Subclasses' constructor. */
  protected BudgetTestKit() {}

  /**
   * The Redis the kit runs against.
   *
   * @return the extension the subclass registered
   */
  protected abstract RedisExtension redis();

  private RedisBudgetClient client;
  private RedisBudgetStore statusStore;

  @BeforeEach
  void start() {
    redis().flushAll();
    client = RedisBudgetClient.builder(redis().connectionOptions().build())
        .callTimeout(Duration.ofMillis(500)) // correctness here; the timeout is tested in BudgetFaultTest
        .flushInterval(Duration.ofMillis(50))
        .build();
    statusStore = RedisBudgetStore.connect(redis().connectionOptions().build());
  }

  @AfterEach
  void stop() {
    client.close();
    statusStore.close();
  }

  /** {requests, retries, denied, allowance} as status.lua reports them. */
  long[] status(String name) throws Exception {
    BudgetKeys k = new BudgetKeys(name);
    List<Object> s = statusStore.run(LuaScript.STATUS, new String[] {k.config(), k.window(), k.pace()},
        "100000", "10", "10", "enforce").get(5, TimeUnit.SECONDS);
    return new long[] {(Long) s.get(1), (Long) s.get(2), (Long) s.get(3), (Long) s.get(4)};
  }

  private long requestsInRedis(String name) {
    try {
      return status(name)[0];
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  @Test
  void firstAttemptsReachRedisWithinAFlushInterval() {
    RetryBudget budget = client.budget(BudgetConfig.builder("kit-flush").build());
    for (int i = 0; i < 1234; i++) {
      budget.recordFirstAttempt();
    }
    long took = Eventually.await("1234 requests in Redis", Duration.ofSeconds(2),
        () -> requestsInRedis("kit-flush") == 1234);
    assertTrue(took < 1000, "lag " + took + " ms");
    assertFalse(budget.isDegraded());
  }

  @Test
  void clientsShareOneFleetWideAllowance() throws Exception {
    // no floor: the balance refills by first attempts only, so the few ms the test takes change nothing;
    // a one-hour window: a new budget's first attempts span its first bucket, 360 s
    BudgetConfig config = BudgetConfig.builder("kit-shared").ratio(0.1).minRetriesPerSecond(0).windowSeconds(3600).build();
    List<RetryBudget> fleet = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      fleet.add(client.budget(config));
    }
    for (RetryBudget b : fleet) {
      for (int i = 0; i < 90_000; i++) {
        b.recordFirstAttempt();
      }
    }
    Eventually.await("360,000 requests in Redis", Duration.ofSeconds(3), () -> requestsInRedis("kit-shared") == 360_000);
    int granted = 0;
    for (int round = 0; round < 40; round++) {
      for (RetryBudget b : fleet) {
        BudgetDecision d = b.acquire().toCompletableFuture().get(5, TimeUnit.SECONDS);
        if (d.granted()) {
          assertEquals(BudgetDecision.GRANTED, d);
          granted++;
        }
      }
    }
    // 360,000 first attempts over 360 s at ratio 0.1: 100 permits a second, half a second saved up,
    // fleet-wide (not per client)
    assertEquals(50, granted, "half a second of 10% of 1,000 first attempts a second, fleet-wide");
    long[] s = status("kit-shared");
    assertEquals(50, s[1]);
  }

  @Test
  void anExhaustedBudgetFailsFastWithoutAskingRedisAgain() throws Exception {
    RetryBudget budget = client.budget(BudgetConfig.builder("kit-cache").minRetriesPerSecond(0).build());
    assertEquals(BudgetDecision.Reason.DENIED_EXHAUSTED, budget.acquireBlocking().reason());
    long before = redis().commandCalls("evalsha");
    for (int i = 0; i < 50; i++) {
      BudgetDecision d = budget.acquireBlocking();
      if (d.reason() != BudgetDecision.Reason.DENIED_EXHAUSTED_CACHED) {
        // the 100 ms cache ran out on a slow machine: Redis may be asked once more
        assertEquals(BudgetDecision.Reason.DENIED_EXHAUSTED, d.reason());
      }
    }
    assertTrue(redis().commandCalls("evalsha") - before < 5, "cached refusals must not reach Redis");
    // local refusals are still counted as denied
    Eventually.await("51 denied in Redis", Duration.ofSeconds(2), () -> {
      try {
        return status("kit-cache")[2] == 51;
      } catch (Exception e) {
        return false;
      }
    });
  }

  @Test
  void aHealthyClientCostsAFewCommandsPerSecondWhateverItsRate() {
    RetryBudget budget = client.budget(BudgetConfig.builder("kit-cost").build());
    long before = redis().commandCalls("evalsha") + redis().commandCalls("eval");
    long start = System.nanoTime();
    long recorded = 0;
    while (System.nanoTime() - start < TimeUnit.MILLISECONDS.toNanos(600)) {
      for (int i = 0; i < 1000; i++) {
        budget.recordFirstAttempt();
      }
      recorded += 1000;
    }
    long elapsedMs = (System.nanoTime() - start) / 1_000_000;
    long calls = redis().commandCalls("evalsha") + redis().commandCalls("eval") - before;
    // flush interval 50 ms in this kit: at most one call per interval, plus one
    assertTrue(calls <= elapsedMs / 50 + 2, calls + " script calls for " + recorded + " first attempts in " + elapsedMs + " ms");
    long total = recorded;
    // that every count arrives is the point here, not how fast: a call that misses its timeout on a
    // loaded machine (load 28 in a helper's run) sends its counts again with the next flush
    Eventually.await("all first attempts flushed", Duration.ofSeconds(10), () -> requestsInRedis("kit-cost") == total);
  }

  @Test
  void scriptsAreReloadedAfterScriptFlush() throws Exception {
    RetryBudget budget = client.budget(BudgetConfig.builder("kit-noscript").build());
    assertTrue(budget.acquireBlocking().granted());
    redis().flushScripts();
    assertEquals(BudgetDecision.GRANTED, budget.acquire().toCompletableFuture().get(5, TimeUnit.SECONDS));
    assertFalse(budget.isDegraded());
  }

  @Test
  void redisConfigurationIsAuthoritative() throws Exception {
    RetryBudget first = client.budget(BudgetConfig.builder("kit-config").minRetriesPerSecond(0).mode(BudgetMode.SHADOW).build());
    first.recordFirstAttempt();
    assertEquals(BudgetDecision.GRANTED_SHADOW, first.acquire().toCompletableFuture().get(5, TimeUnit.SECONDS));
    // a later client with other seed values follows what Redis holds
    RetryBudget second = client.budget(BudgetConfig.builder("kit-config").minRetriesPerSecond(100).build());
    assertEquals(BudgetDecision.GRANTED_SHADOW, second.acquire().toCompletableFuture().get(5, TimeUnit.SECONDS));
  }

  @Test
  void closeFlushesWhatIsCountedLocally() throws Exception {
    RedisBudgetClient slow = RedisBudgetClient.builder(redis().connectionOptions().build())
        .flushInterval(Duration.ofSeconds(1)).callTimeout(Duration.ofMillis(500)).build();
    RetryBudget budget = slow.budget(BudgetConfig.builder("kit-close").build());
    for (int i = 0; i < 77; i++) {
      budget.recordFirstAttempt();
    }
    slow.close();
    assertEquals(77, status("kit-close")[0]);
  }
}
