package io.retrybudget.coordinator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.lettuce.core.RedisException;
import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.testing.RedisExtension;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Review finding 2: Lettuce's WARNING per refused command, bounded. */
class LettuceLogThrottleTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();

  private static LogRecord warning(String logger, String message, Throwable thrown) {
    LogRecord r = new LogRecord(Level.WARNING, message);
    r.setLoggerName(logger);
    r.setThrown(thrown);
    return r;
  }

  @Test
  void onePerKindEveryTenSecondsWithTheCountOfTheOthers() {
    AtomicLong now = new AtomicLong(1_000);
    LettuceLogThrottle t = new LettuceLogThrottle(null, now::get, 10);
    String queue = "Internal stack size exceeded: 4096. Commands are not accepted until the stack size drops.";
    assertTrue(t.isLoggable(warning("a", "[channel=0x1f] Unexpected exception", new RedisException(queue))));
    for (int i = 0; i < 500; i++) {
      now.addAndGet(TimeUnit.MILLISECONDS.toNanos(10)); // 5 s in all
      assertFalse(t.isLoggable(warning("a", "[channel=0x" + i + "] Unexpected exception", new RedisException(queue))));
    }
    // another kind, another logger: each its own first
    assertTrue(t.isLoggable(warning("a", "m", new IllegalStateException("x"))));
    assertTrue(t.isLoggable(warning("b", "m", new RedisException(queue))));
    LogRecord fine = new LogRecord(Level.FINE, "detail");
    fine.setLoggerName("a");
    assertTrue(t.isLoggable(fine), "below WARNING passes");
    now.addAndGet(TimeUnit.SECONDS.toNanos(5)); // 10 s after the first
    LogRecord next = warning("a", "[channel=0x2] Unexpected exception", new RedisException(queue));
    assertTrue(t.isLoggable(next));
    assertTrue(next.getMessage().startsWith("(500 more like this were not logged"), next.getMessage());
    assertFalse(t.isLoggable(warning("a", "[channel=0x3] Unexpected exception", new RedisException(queue))));
  }

  @Test
  void kindsAreBounded() {
    LettuceLogThrottle t = new LettuceLogThrottle(null, () -> 0L, 10);
    int passed = 0;
    for (int i = 0; i < 1000; i++) {
      if (t.isLoggable(warning("logger-" + i, "m", null))) {
        passed++;
      }
    }
    assertEquals(LettuceLogThrottle.MAX_KINDS + 1, passed, "64 kinds, then one for all the others");
  }

  @Test
  void kindsQuietForAPeriodAreForgottenSoANewKindStillPasses() {
    long[] now = {0};
    LettuceLogThrottle t = new LettuceLogThrottle(null, () -> now[0], 10);
    for (int i = 0; i < LettuceLogThrottle.MAX_KINDS; i++) {
      now[0] += TimeUnit.MINUTES.toNanos(1);
      assertTrue(t.isLoggable(warning("logger-" + i, "m", null)), "kind " + i);
    }
    // a day later, the first record of a kind never seen: the 64 old ones are long quiet
    now[0] += TimeUnit.DAYS.toNanos(1);
    assertTrue(t.isLoggable(warning("new", "Connection refused", null)), "the first of a new kind");
    assertTrue(t.isLoggable(warning("newer", "Internal stack size exceeded", null)), "and of another");
    assertFalse(t.isLoggable(warning("new", "Connection refused", null)), "a repeat within the period is held");
  }

  @Test
  void aFullQueueOnARealConnectionLogsOncePerKind() throws Exception {
    Coordinator.class.getName(); // the throttle is the coordinator's: installed as it starts
    LettuceLogThrottle.install();
    Map<String, AtomicInteger> logged = new ConcurrentHashMap<>();
    Handler capture = new Handler() {
      @Override
      public void publish(LogRecord r) {
        if (r.getLevel().intValue() >= Level.WARNING.intValue()) {
          logged.computeIfAbsent(r.getLoggerName(), k -> new AtomicInteger()).incrementAndGet();
        }
      }

      @Override
      public void flush() {}

      @Override
      public void close() {}
    };
    Logger lettuce = Logger.getLogger("io.lettuce");
    lettuce.addHandler(capture);
    int refused = 0;
    try (RedisBudgetStore store = RedisBudgetStore.connect(redis.connectionOptions().requestQueueSize(4).build())) {
      for (int round = 0; round < 5; round++) {
        List<CompletableFuture<String>> pings = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
          pings.add(store.ping());
        }
        for (CompletableFuture<String> p : pings) {
          try {
            p.get(10, TimeUnit.SECONDS);
          } catch (Exception e) {
            refused++;
          }
        }
      }
    } finally {
      lettuce.removeHandler(capture);
    }
    System.out.println("refused " + refused + " commands; logged at WARNING: " + logged);
    assertTrue(refused > 100, "the queue of 4 refused most of 1,000 pings: " + refused);
    int total = logged.values().stream().mapToInt(AtomicInteger::get).sum();
    assertTrue(total <= 4, "at most a few kinds logged once each: " + logged);
  }
}
