package io.retrybudget.budget;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.internal.LogLimiter;
import io.retrybudget.budget.redis.protocol.BudgetKeys;
import io.retrybudget.budget.redis.protocol.BudgetScripts;
import io.retrybudget.budget.redis.protocol.ConfigChange;
import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import io.retrybudget.testing.RedisServerProcess;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A budget whose keys in Redis hold bad state: the SDK answers from its fallback for that budget
 * (others are unaffected), says so once, and recovers once the configuration is fixed. Degradation
 * and recovery are logged once each (WARNING with the cause, INFO), repeats held back.
 */
class BrokenBudgetTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();
  private static final Logger CLIENT_LOG = Logger.getLogger(RedisBudgetClient.class.getName());
  private final List<LogRecord> records = new CopyOnWriteArrayList<>();
  private final Handler capture = new Handler() {
    @Override
    public void publish(LogRecord r) {
      records.add(r);
    }

    @Override
    public void flush() {}

    @Override
    public void close() {}
  };

  @BeforeEach
  void listen() {
    redis.server().restart();
    CLIENT_LOG.addHandler(capture);
  }

  @AfterEach
  void stopListening() {
    CLIENT_LOG.removeHandler(capture);
  }

  private long count(Level level, String text) {
    return records.stream().filter(r -> r.getLevel() == level && r.getMessage().contains(text)).count();
  }

  @Test
  void aBrokenBudgetFallsBackAloneLogsOnceAndRecoversWhenFixed() throws Exception {
    BudgetKeys k = new BudgetKeys("nan-budget");
    redis.server().call("HSET", k.config(), "ratio_ppm", "nan", "window_s", "10", "min_rps", "10", "mode", "enforce");
    try (RedisBudgetClient client = RedisBudgetClient.builder(redis.connectionOptions().build())
        .callTimeout(Duration.ofMillis(500)).flushInterval(Duration.ofMillis(50)).build()) {
      RetryBudget broken = client.budget(BudgetConfig.builder("nan-budget").build());
      RetryBudget fine = client.budget(BudgetConfig.builder("fine").build());
      Eventually.await("the broken budget falls back", Duration.ofSeconds(3), () -> {
        broken.acquireBlocking();
        return broken.isDegraded();
      });
      for (int i = 0; i < 50; i++) {
        BudgetDecision d = broken.acquireBlocking();
        assertTrue(d.reason() == BudgetDecision.Reason.GRANTED_FALLBACK || d.reason() == BudgetDecision.Reason.DENIED_FALLBACK, d.toString());
      }
      assertEquals(BudgetDecision.GRANTED, fine.acquireBlocking(), "another budget still decides in Redis");
      assertEquals(1, count(Level.WARNING, "budget nan-budget degraded"), records.toString());
      assertEquals(1, count(Level.WARNING, "ratio_ppm"), "the cause names the field");

      try (RedisBudgetStore store = RedisBudgetStore.connect(redis.connectionOptions().build())) {
        new BudgetScripts(store).configure("nan-budget", new ConfigChange(100_000L, 10, 10, "enforce"),
            BudgetConfig.builder("d").build()).get(5, TimeUnit.SECONDS);
      }
      Eventually.await("recovered once fixed", Duration.ofSeconds(3), () -> !broken.isDegraded());
      assertEquals(BudgetDecision.GRANTED, broken.acquireBlocking());
      assertEquals(1, count(Level.INFO, "budget nan-budget recovered"), records.toString());
      assertEquals(1, count(Level.WARNING, "degraded"), "still one warning");
    }
  }

  @Test
  void noRedisAtStartIsOneWarningNotOnePerAttempt() {
    RedisServerProcess server = redis.server();
    server.kill();
    try (RedisBudgetClient client = RedisBudgetClient.builder(RedisConnectionOptions.standalone(server.uri())
        .connectTimeout(Duration.ofMillis(200)).build()).build()) {
      RetryBudget b = client.budget(BudgetConfig.builder("nobody-home").build());
      // the client retries every 500 ms; watch several attempts
      Eventually.await("several connect attempts", Duration.ofSeconds(10), () -> {
        b.acquireBlocking();
        return client.connectAttempts() >= 4;
      });
      assertEquals(1, count(Level.WARNING, "not reachable"), records.toString());
    }
  }

  @Test
  void theLimiterHoldsRepeatsBackAndCountsThem() {
    AtomicLong now = new AtomicLong(1_000);
    Logger logger = Logger.getLogger("limiter-test");
    logger.setUseParentHandlers(false);
    logger.addHandler(capture);
    // System.Logger with no LoggerFinder installed: the java.util.logging logger of the same name
    LogLimiter limiter = new LogLimiter(System.getLogger("limiter-test"), System.Logger.Level.WARNING, 30_000,
        now::get);
    assertTrue(limiter.log(() -> "first"));
    for (int i = 0; i < 5; i++) {
      now.addAndGet(1_000);
      assertTrue(!limiter.log(() -> "repeat"));
    }
    now.addAndGet(30_000);
    assertTrue(limiter.log(() -> "later"));
    assertEquals(List.of("first", "later (5 similar messages held back in the last 30 s)"),
        records.stream().map(LogRecord::getMessage).toList());
  }
}
