package io.retrybudget.resilience4j;

import io.github.resilience4j.core.IntervalFunction;
import io.github.resilience4j.retry.Retry;
import io.github.resilience4j.retry.RetryConfig;
import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import io.retrybudget.retry.RetryBudgetExhaustedException;
import io.retrybudget.testing.RedisServerProcess;
import java.io.IOException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The README's example, runnable: a Resilience4j Retry with a fleet budget against a local
 * redis-server (started here), calling a backend that is down. Run {@link #main} from an IDE
 * on the module's test classpath; {@link Resilience4jExampleTest} runs it in the build.
 */
public final class Resilience4jExample {
  private Resilience4jExample() {}

  /** Returns {calls, backend attempts, refused calls}. */
  static long[] run(String redisUri, int calls) {
    try (RedisBudgetClient budgets = RedisBudgetClient.builder(RedisConnectionOptions.standalone(redisUri).build()).build()) {
      RetryBudget payments = budgets.budget(BudgetConfig.builder("example-payments").ratio(0.10).minRetriesPerSecond(1).build());
      Retry retry = BudgetedRetry.of("payments",
          RetryConfig.custom().maxAttempts(3).intervalFunction(IntervalFunction.of(1)).build(), payments);
      AtomicInteger attempts = new AtomicInteger();
      long refused = 0;
      for (int i = 0; i < calls; i++) {
        try {
          retry.executeCallable(() -> {
            attempts.incrementAndGet();
            throw new IOException("payments-api is down");
          });
        } catch (RetryBudgetExhaustedException e) {
          refused++; // failed fast: no wait, the cause is the IOException
        } catch (Exception e) {
          // attempts ran out: Resilience4j's own failure
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
