package io.retrybudget.bench.jmh;

import io.github.resilience4j.retry.Retry;
import io.github.resilience4j.retry.RetryConfig;
import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.LocalRetryBudget;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import io.retrybudget.resilience4j.BudgetedRetry;
import io.retrybudget.testing.RedisServerProcess;
import java.util.concurrent.Callable;
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
 * What attaching a fleet budget costs a Resilience4j user: {@code Retry.executeCallable} on the
 * success path (first attempt succeeds), a plain Resilience4j Retry against the same configuration
 * with a {@link BudgetedRetry} (budget from a {@code RedisBudgetClient} on a real redis-server; a
 * success asks nothing, it only counts the first attempt) and, for comparison, with a
 * {@link LocalRetryBudget}. 3 attempts at most everywhere.
 *
 * <p>Run: see retry-budget-resilience4j/README.md ("JMH").
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class Resilience4jBudgetBenchmark {
  /** Not final, so the JIT cannot fold it into a constant. */
  private Integer value = 42;

  private Callable<Integer> callable;
  private RedisServerProcess redis;
  private RedisBudgetClient budgetClient;
  private RetryBudget redisBudget;
  private RetryBudget localBudget;

  private Retry plain;
  private Retry budgetedRedis;
  private Retry budgetedLocal;

  @Setup(Level.Trial)
  public void setUp() {
    callable = () -> value;
    redis = RedisServerProcess.start();
    budgetClient = RedisBudgetClient.builder(RedisConnectionOptions.standalone(redis.uri()).build()).build();
    redisBudget = budgetClient.budget(BudgetConfig.builder("jmh-r4j").build());
    localBudget = new LocalRetryBudget(BudgetConfig.builder("jmh-r4j-local").build());

    RetryConfig config = RetryConfig.custom().maxAttempts(3).build();
    plain = Retry.of("jmh", config);
    budgetedRedis = BudgetedRetry.of("jmh", config, redisBudget);
    budgetedLocal = BudgetedRetry.of("jmh", config, localBudget);
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    redisBudget.close();
    localBudget.close();
    budgetClient.close();
    redis.close();
  }

  /** Resilience4j alone: the reference. */
  @Benchmark
  public Integer resilience4j_executeCallable() throws Exception {
    return plain.executeCallable(callable);
  }

  /** The same Retry configuration with the fleet budget (Redis) attached. */
  @Benchmark
  public Integer resilience4j_fleetBudget_executeCallable() throws Exception {
    return budgetedRedis.executeCallable(callable);
  }

  /** With the in-process budget instead (a synchronized sliding window: not the target). */
  @Benchmark
  public Integer resilience4j_localBudget_executeCallable() throws Exception {
    return budgetedLocal.executeCallable(callable);
  }
}
