package io.retrybudget.failsafe;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.testing.RedisExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The runnable example does what the README says. */
class FailsafeExampleTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();

  @Test
  void theBudgetCutsTheBackendsLoad() {
    long[] r = FailsafeExample.run(redis.uri(), 200);
    assertEquals(200, r[0]);
    // floor 1/s * 10 s = 10 retries plus 10 % of 200 first attempts = 30 retries at most
    assertTrue(r[1] <= 200 + 30, "attempts " + r[1]);
    assertTrue(r[2] >= 170 - 30, "refused " + r[2]);
  }
}
