package io.retrybudget.bench.jmh;

import dev.failsafe.Failsafe;
import dev.failsafe.FailsafeExecutor;
import dev.failsafe.RetryPolicy;
import dev.failsafe.function.CheckedSupplier;
import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import io.retrybudget.failsafe.BudgetedRetryPolicy;
import io.retrybudget.testing.RedisServerProcess;
import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * What paying Failsafe's retries from a budget costs: the same Failsafe executions with a plain
 * {@code RetryPolicy} (2 retries, no delay) and with {@code BudgetedRetryPolicy.of(policy, budget)}
 * (a {@code RedisBudgetClient} budget on a real redis-server with plenty of allowance), side by side:
 * a successful synchronous call, a successful {@code getStageAsync}, and a synchronous call whose
 * first attempt fails (one retry, one permit from Redis).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class FailsafeBudgetBenchmark {
  private static final IOException FAILURE = new IOException("first attempt fails (pre-made, no stack trace)") {
    @Override
    public synchronized Throwable fillInStackTrace() {
      return this;
    }
  };

  /** Not final, so the JIT cannot fold it into a constant. */
  private Integer value = 42;
  private int attemptsMade;

  private RedisServerProcess redis;
  private RedisBudgetClient budgetClient;
  private FailsafeExecutor<Integer> bare;
  private FailsafeExecutor<Integer> budgeted;
  private CheckedSupplier<Integer> succeeds;
  private CheckedSupplier<CompletionStage<Integer>> stageSucceeds;
  private CheckedSupplier<Integer> failsOnce;

  @Setup(Level.Trial)
  public void setUp() {
    redis = RedisServerProcess.start();
    // a 1 s call timeout: the benchmark measures the cost of a permit, not a loaded machine's timeouts
    budgetClient = RedisBudgetClient.builder(RedisConnectionOptions.standalone(redis.uri()).build())
        .callTimeout(Duration.ofSeconds(1)).build();
    // every retry granted: ratio 1 and a floor far above the benchmark's rate
    RetryBudget budget = budgetClient.budget(BudgetConfig.builder("jmh-failsafe").ratio(1.0).minRetriesPerSecond(1_000_000).build());
    long until = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    while (!budget.acquireBlocking().granted()) { // until Redis has the budget and answers
      if (System.nanoTime() > until) {
        throw new IllegalStateException("the budget granted nothing within 30 s");
      }
    }
    RetryPolicy<Integer> policy = RetryPolicy.<Integer>builder().withMaxRetries(2).build();
    bare = Failsafe.with(policy);
    budgeted = Failsafe.with(BudgetedRetryPolicy.of(policy, budget));
    succeeds = () -> value;
    stageSucceeds = () -> CompletableFuture.completedFuture(value);
    failsOnce = () -> {
      if ((attemptsMade++ & 1) == 0) {
        throw FAILURE;
      }
      return value;
    };
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    budgetClient.close();
    redis.close();
  }

  @Benchmark
  public Integer failsafe_get() {
    return bare.get(succeeds);
  }

  @Benchmark
  public Integer failsafe_budgeted_get() {
    return budgeted.get(succeeds);
  }

  @Benchmark
  public Integer failsafe_getStageAsync() {
    return bare.getStageAsync(stageSucceeds).join();
  }

  @Benchmark
  public Integer failsafe_budgeted_getStageAsync() {
    return budgeted.getStageAsync(stageSucceeds).join();
  }

  @Benchmark
  public Integer failsafe_retried_get() {
    return bare.get(failsOnce);
  }

  @Benchmark
  public Integer failsafe_budgeted_retried_get() {
    return budgeted.get(failsOnce);
  }
}
