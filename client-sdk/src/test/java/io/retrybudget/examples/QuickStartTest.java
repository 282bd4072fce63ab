package io.retrybudget.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.budget.redis.protocol.BudgetScripts;
import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.budget.redis.protocol.StatusReply;
import io.retrybudget.testing.RedisExtension;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The README's example against a real Redis: a call that fails once is retried; every first attempt is counted once. */
class QuickStartTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();

  @Test
  void aCallThatFailsOnceIsRetriedAndItsFirstAttemptIsCountedOnce() throws Exception {
    // warm this JVM's Redis path on another budget: a cold JVM can miss the 20 ms permit timeout on
    // a loaded machine, and a permit request in doubt is refused (the example's catch branch)
    try (RedisBudgetClient warm = RedisBudgetClient.builder(redis.connectionOptions().build()).build()) {
      RetryBudget b = warm.budget(BudgetConfig.builder("warm-up").build());
      b.recordFirstAttempt();
      b.acquireBlocking();
    }

    AtomicInteger attempts = new AtomicInteger();
    String printed = run(order -> {
      if (attempts.incrementAndGet() == 1) {
        throw new IOException("connection reset");
      }
      return "charged " + order;
    }, "order-7");

    StatusReply s;
    try (RedisBudgetStore store = RedisBudgetStore.connect(redis.connectionOptions().build())) {
      s = new BudgetScripts(store).status("payments-api", BudgetConfig.builder("x").build()).get(10, TimeUnit.SECONDS);
    }
    assertEquals(100_000, s.settings().ratioPpm(), "seeded from the example's config");
    if (printed.equals("charged order-7")) {
      assertEquals(2, attempts.get());
      // the granted permit request carried the pending first attempt: both are in Redis, once each
      assertEquals(1, s.requests(), "the first attempt, counted once (by the executor)");
      assertEquals(1, s.retries(), "the one retry, paid for by the budget");
    } else {
      // the permit request missed its 20 ms on a loaded machine: in doubt, so refused (and what it
      // carried may or may not have been applied)
      assertEquals("the fleet has spent its retries: failing fast", printed);
      assertEquals(1, attempts.get(), "no retry without a permit");
      assertTrue(s.requests() <= 1 && s.retries() <= 1, "never counted twice: " + s);
    }
  }

  private static String run(QuickStart.PaymentsClient client, String order) throws Exception {
    PrintStream out = System.out;
    ByteArrayOutputStream printed = new ByteArrayOutputStream();
    System.setOut(new PrintStream(printed, true, StandardCharsets.UTF_8));
    try {
      QuickStart.run(redis.uri(), client, order);
    } finally {
      System.setOut(out);
    }
    return printed.toString(StandardCharsets.UTF_8).strip();
  }
}
