package io.retrybudget.retry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Deadlines and attempt timeouts are nanoseconds from a start on the nano clock: one over about 292
 * years was accepted and overflowed (ArithmeticException) on the first retry. Now the builder bounds
 * both at {@link RetryPolicy#MAX_DURATION} and names the value; the longest allowed one retries.
 */
class RetryPolicyLimitsTest {
  private final FakeTime time = new FakeTime();

  @Test
  void theBuilderRefusesADeadlineOrAttemptTimeoutBeyondTheLongestAndNamesIt() {
    Duration forever = ChronoUnit.FOREVER.getDuration();
    IllegalArgumentException d = assertThrows(IllegalArgumentException.class,
        () -> RetryPolicy.builder().deadline(forever));
    assertTrue(d.getMessage().contains("deadline") && d.getMessage().contains(forever.toString()), d.getMessage());
    IllegalArgumentException t = assertThrows(IllegalArgumentException.class,
        () -> RetryPolicy.builder().attemptTimeout(Duration.ofDays(365 * 300)));
    assertTrue(t.getMessage().contains("attemptTimeout"), t.getMessage());
    assertThrows(IllegalArgumentException.class, () -> RetryPolicy.builder().deadline(RetryPolicy.MAX_DURATION.plusNanos(1)));
  }

  @Test
  void theLongestDeadlineRetriesAndWithDeadlineAtMostCapsAnyDuration() throws Exception {
    RetryPolicy longest = RetryPolicy.builder().maxAttempts(3).backoff(Duration.ofMillis(10), Duration.ofSeconds(1))
        .deadline(RetryPolicy.MAX_DURATION).attemptTimeout(RetryPolicy.MAX_DURATION).build();
    assertEquals("ok after 2", failOnceThenSucceed(longest));
    RetryPolicy capped = RetryPolicy.builder().maxAttempts(3).backoff(Duration.ofMillis(10), Duration.ofSeconds(1)).build()
        .withDeadlineAtMost(ChronoUnit.FOREVER.getDuration());
    assertEquals(RetryPolicy.MAX_DURATION, capped.deadline());
    assertEquals("ok after 2", failOnceThenSucceed(capped));
  }

  private String failOnceThenSucceed(RetryPolicy policy) throws Exception {
    AtomicInteger attempts = new AtomicInteger();
    RetryExecutor executor = RetryExecutor.builder(policy).nanoClock(time::nanos).scheduler(time).sleeper(time)
        .random(() -> 0.5).build();
    return executor.call(() -> {
      if (attempts.incrementAndGet() == 1) {
        throw new IOException("first attempt fails");
      }
      return "ok after " + attempts.get();
    });
  }
}
