package io.retrybudget.resilience4j;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.resilience4j.retry.internal.RetryImpl;
import io.retrybudget.testing.RedisExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The runnable example does what the README says. */
class Resilience4jExampleTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();

  @BeforeAll
  static void noWaits() {
    RetryImpl.setSleepFunction(millis -> { });
  }

  @AfterAll
  static void restoreSleeps() {
    RetryImpl.setSleepFunction(Thread::sleep);
  }

  @Test
  void theBudgetCutsTheBackendsLoad() {
    long[] r = Resilience4jExample.run(redis.uri(), 200);
    // floor 1/s * 10 s = 10 retries plus 10 % of 200 first attempts = 30 retries at most
    assertTrue(r[1] <= 200 + 30, "attempts " + r[1]);
    assertTrue(r[2] >= 170 - 30, "refused " + r[2]);
  }
}
