package io.retrybudget.failsafe;

import dev.failsafe.Failsafe;
import dev.failsafe.FailsafeException;
import dev.failsafe.RetryPolicy;
import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import io.retrybudget.retry.RetryBudgetExhaustedException;
import io.retrybudget.testing.RedisServerProcess;
import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The README's example, runnable: a Failsafe retry policy paid from a fleet budget against a local
 * redis-server (started here), calling a backend that is down. Run {@link #main} from an IDE on the
 * module's test classpath; {@link FailsafeExampleTest} runs it in the build.
 */
public final class FailsafeExample {
  private FailsafeExample() {}

  /** Returns {calls, backend attempts, refused calls}. */
  static long[] run(String redisUri, int calls) {
    try (RedisBudgetClient budgets = RedisBudgetClient.builder(RedisConnectionOptions.standalone(redisUri).build()).build()) {
      RetryBudget payments = budgets.budget(BudgetConfig.builder("example-payments").ratio(0.10).minRetriesPerSecond(1).build());
      RetryPolicy<String> policy = BudgetedRetryPolicy.of(
          RetryPolicy.<String>builder().withMaxRetries(2).withDelay(Duration.ofMillis(1)).build(), payments);
      AtomicInteger attempts = new AtomicInteger();
      long refused = 0;
      for (int i = 0; i < calls; i++) {
        try {
          Failsafe.with(policy).get(() -> {
            attempts.incrementAndGet();
            throw new IOException("payments-api is down");
          });
        } catch (RetryBudgetExhaustedException e) {
          refused++; // failed fast: no wait, the cause is the IOException
        } catch (FailsafeException e) {
          // retries ran out: Failsafe's own failure
        }
      }
      return new long[] {calls, attempts.get(), refused};
    }
  }

  public static void main(String[] args) {
    try (RedisServerProcess redis = RedisServerProcess.start()) {
      long[] r = run(redis.uri(), 200);
      System.out.printf("%d calls, %d attempts at the backend (%d without the budget), %d refused by the budget%n",
          r[0], r[1], 3 * r[0], r[2]);
    }
  }
}
