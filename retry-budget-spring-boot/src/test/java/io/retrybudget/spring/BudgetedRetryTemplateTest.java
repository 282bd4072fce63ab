package io.retrybudget.spring;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.LocalRetryBudget;
import io.retrybudget.retry.RetryBudgetExhaustedException;
import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.springframework.core.retry.RetryException;
import org.springframework.core.retry.RetryPolicy;

/** Spring Framework 7's RetryTemplate with the budget, on an in-process budget and a fake clock. */
class BudgetedRetryTemplateTest {
  private final AtomicLong clock = new AtomicLong(1_000_000);

  private LocalRetryBudget budget(int floorPerSecond) {
    return new LocalRetryBudget(BudgetConfig.builder("spring-retry").ratio(0.000001)
        .minRetriesPerSecond(floorPerSecond).windowSeconds(1).build(), clock::get);
  }

  @Test
  void grantedRetriesRunAsTheTemplateSays() throws Exception {
    LocalRetryBudget budget = budget(10);
    BudgetedRetryTemplate template = new BudgetedRetryTemplate(
        RetryPolicy.builder().maxRetries(3).delay(Duration.ZERO).build(), budget);
    AtomicInteger calls = new AtomicInteger();

    String result = template.execute(() -> {
      if (calls.incrementAndGet() < 3) {
        throw new IOException("down");
      }
      return "ok";
    });

    assertEquals("ok", result);
    assertArrayEquals(new long[] {1, 2, 0}, budget.windowCounts());
    assertEquals("ok", template.execute(() -> "ok"));
    assertArrayEquals(new long[] {2, 2, 0}, budget.windowCounts());
  }

  @Test
  void refusedRetryFailsAtOnceWithoutTheTemplatesSleep() {
    LocalRetryBudget budget = budget(0);
    // an hour between attempts: the test would hang if the refusal slept first
    BudgetedRetryTemplate template = new BudgetedRetryTemplate(
        RetryPolicy.builder().maxRetries(3).delay(Duration.ofHours(1)).build(), budget);
    AtomicInteger calls = new AtomicInteger();

    RetryBudgetExhaustedException e = assertTimeoutPreemptively(Duration.ofSeconds(10), () ->
        assertThrows(RetryBudgetExhaustedException.class, () -> template.execute(() -> {
          calls.incrementAndGet();
          throw new IOException("down");
        })));

    assertEquals(1, calls.get());
    assertInstanceOf(IOException.class, e.getCause());
    assertArrayEquals(new long[] {1, 0, 1}, budget.windowCounts());
  }

  @Test
  void noPermitIsSpentWhenTheTemplateWouldNotRetry() {
    LocalRetryBudget budget = budget(10);
    BudgetedRetryTemplate template = new BudgetedRetryTemplate(
        RetryPolicy.builder().maxRetries(1).delay(Duration.ZERO).includes(IOException.class).build(), budget);

    assertThrows(RetryException.class, () -> template.execute(() -> {
      throw new IOException("down"); // one retry granted, then the back-off stops
    }));
    assertArrayEquals(new long[] {1, 1, 0}, budget.windowCounts());

    assertThrows(RetryException.class, () -> template.execute(() -> {
      throw new IllegalStateException("not retryable");
    }));
    assertArrayEquals(new long[] {2, 1, 0}, budget.windowCounts());
  }
}
