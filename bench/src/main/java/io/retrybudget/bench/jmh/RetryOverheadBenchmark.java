package io.retrybudget.bench.jmh;

import dev.failsafe.Failsafe;
import dev.failsafe.FailsafeExecutor;
import io.github.resilience4j.core.functions.CheckedSupplier;
import io.github.resilience4j.retry.Retry;
import io.github.resilience4j.retry.RetryConfig;
import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.LocalRetryBudget;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import io.retrybudget.retry.AttemptFunction;
import io.retrybudget.retry.RetryExecutor;
import io.retrybudget.retry.RetryPolicy;
import io.retrybudget.testing.RedisServerProcess;
import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
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
 * Overhead of one call through a retry wrapper: our {@link RetryExecutor} (with a Redis budget, a
 * local budget, no budget) against Resilience4j Retry and Failsafe, all with 3 attempts at most.
 * The callable reads a field and returns it (JMH consumes the returned value), so the wrapped work
 * is a few instructions. Three groups: a synchronous success (first attempt succeeds), an
 * asynchronous success (the attempt's stage is already complete; each wrapper's returned future is
 * joined), and one retried call (the first attempt fails with a pre-made exception, the second
 * succeeds, zero backoff, no budget), synchronous and asynchronous.
 *
 * <p>Run: see bench/README.md ("JMH: overhead of a successful call").
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class RetryOverheadBenchmark {
  /** Not final, so the JIT cannot fold it into a constant. */
  private Integer value = 42;

  private Callable<Integer> callable;
  private AttemptFunction<Integer> attemptFunction;

  private RedisServerProcess redis;
  private RedisBudgetClient budgetClient;
  private RetryBudget redisBudget;
  private RetryBudget localBudget;

  private RetryExecutor oursRedis;
  private RetryExecutor oursLocal;
  private RetryExecutor oursNoBudget;

  private Retry resilience4j;
  private Callable<Integer> resilience4jDecorated;
  private CheckedSupplier<Integer> resilience4jDecoratedSupplier;

  private FailsafeExecutor<Integer> failsafe;
  private dev.failsafe.function.CheckedSupplier<Integer> failsafeSupplier;

  // asynchronous success
  private ScheduledExecutorService resilience4jScheduler;
  private Supplier<CompletionStage<Integer>> stageSupplier;
  private dev.failsafe.function.CheckedSupplier<CompletionStage<Integer>> failsafeStageSupplier;

  // one retried call: the first attempt of each call fails, the second succeeds
  private static final IOException FAILURE = new IOException("first attempt fails (pre-made, no stack trace)") {
    @Override
    public synchronized Throwable fillInStackTrace() {
      return this;
    }
  };
  private int attemptsMade;
  private RetryExecutor oursRetrying;
  private Retry resilience4jRetrying;
  private FailsafeExecutor<Integer> failsafeRetrying;
  private Callable<Integer> failsOnce;
  private dev.failsafe.function.CheckedSupplier<Integer> failsafeFailsOnce;
  private Supplier<CompletionStage<Integer>> stageFailsOnce;
  private dev.failsafe.function.CheckedSupplier<CompletionStage<Integer>> failsafeStageFailsOnce;

  @Setup(Level.Trial)
  public void setUp() {
    callable = () -> value;
    attemptFunction = context -> value;

    redis = RedisServerProcess.start();
    budgetClient = RedisBudgetClient.builder(RedisConnectionOptions.standalone(redis.uri()).build()).build();
    redisBudget = budgetClient.budget(BudgetConfig.builder("jmh").build());
    localBudget = new LocalRetryBudget(BudgetConfig.builder("jmh-local").build());

    RetryPolicy policy = RetryPolicy.builder().maxAttempts(3).build();
    oursRedis = RetryExecutor.builder(policy).budget(redisBudget).build();
    oursLocal = RetryExecutor.builder(policy).budget(localBudget).build();
    oursNoBudget = RetryExecutor.builder(policy).build();

    // RetryConfig.ofDefaults(): maxAttempts 3, 500 ms fixed wait, retry on every exception
    resilience4j = Retry.of("jmh", RetryConfig.custom().maxAttempts(3).build());
    resilience4jDecorated = Retry.decorateCallable(resilience4j, callable);
    CheckedSupplier<Integer> supplier = () -> value;
    resilience4jDecoratedSupplier = Retry.decorateCheckedSupplier(resilience4j, supplier);

    // RetryPolicy.ofDefaults(): 3 attempts (2 retries), no delay, retry on every exception
    failsafe = Failsafe.with(dev.failsafe.RetryPolicy.<Integer>ofDefaults());
    failsafeSupplier = () -> value;

    resilience4jScheduler = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "resilience4j-jmh");
      t.setDaemon(true);
      return t;
    });
    stageSupplier = () -> CompletableFuture.completedFuture(value);
    failsafeStageSupplier = () -> CompletableFuture.completedFuture(value);

    // zero backoff: ours cannot be configured below 1 ns, so the sleeper skips it and the async
    // path schedules a 1 ns timer (a hop to its scheduler thread, as the others hop to theirs)
    oursRetrying = RetryExecutor.builder(RetryPolicy.builder().maxAttempts(3)
        .backoff(Duration.ofNanos(1), Duration.ofNanos(1)).jitter(io.retrybudget.retry.Jitter.NONE).build())
        .sleeper(nanos -> { }).build();
    resilience4jRetrying = Retry.of("jmh-retrying", RetryConfig.custom().maxAttempts(3).waitDuration(Duration.ZERO).build());
    failsafeRetrying = Failsafe.with(dev.failsafe.RetryPolicy.<Integer>builder().withMaxRetries(2).build());
    failsOnce = () -> {
      if ((attemptsMade++ & 1) == 0) {
        throw FAILURE;
      }
      return value;
    };
    failsafeFailsOnce = () -> failsOnce.call();
    stageFailsOnce = () -> (attemptsMade++ & 1) == 0
        ? CompletableFuture.failedFuture(FAILURE) : CompletableFuture.completedFuture(value);
    failsafeStageFailsOnce = () -> stageFailsOnce.get();
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    oursRedis.close();
    oursLocal.close();
    oursNoBudget.close();
    oursRetrying.close();
    resilience4jScheduler.shutdownNow();
    redisBudget.close();
    localBudget.close();
    budgetClient.close();
    redis.close();
  }

  /** The callable alone: what the wrapped work costs. */
  @Benchmark
  public Integer baseline() throws Exception {
    return callable.call();
  }

  /** Our executor, fleet budget in Redis attached: recordFirstAttempt() is a LongAdder increment. */
  @Benchmark
  public Integer ours_redisBudget() throws Exception {
    return oursRedis.call(callable);
  }

  /** The same with an {@link AttemptFunction} made once: no per-call adapter lambda. */
  @Benchmark
  public Integer ours_redisBudget_attemptFunction() throws Exception {
    return oursRedis.call(attemptFunction);
  }

  /** Our executor with the in-process budget (synchronized sliding window). */
  @Benchmark
  public Integer ours_localBudget() throws Exception {
    return oursLocal.call(callable);
  }

  /** Our executor without a budget. */
  @Benchmark
  public Integer ours_noBudget() throws Exception {
    return oursNoBudget.call(callable);
  }

  /** Resilience4j as usually called per request: {@code retry.executeCallable(callable)}. */
  @Benchmark
  public Integer resilience4j_executeCallable() throws Exception {
    return resilience4j.executeCallable(callable);
  }

  /** Resilience4j, callable decorated once ({@code Retry.decorateCallable}) and called. */
  @Benchmark
  public Integer resilience4j_decoratedCallable() throws Exception {
    return resilience4jDecorated.call();
  }

  /** Resilience4j, {@code Retry.decorateCheckedSupplier} made once and called. */
  @Benchmark
  public Integer resilience4j_decoratedCheckedSupplier() throws Throwable {
    return resilience4jDecoratedSupplier.get();
  }

  /** Failsafe: {@code Failsafe.with(RetryPolicy.ofDefaults())} made once, {@code get(supplier)} per call. */
  @Benchmark
  public Integer failsafe_get() {
    return failsafe.get(failsafeSupplier);
  }

  // ---- asynchronous, first attempt succeeds ----------------------------------------------------

  /** Our callAsync, fleet budget in Redis attached; the returned future is complete on return. */
  @Benchmark
  public Integer ours_async_redisBudget() {
    return oursRedis.callAsync(stageSupplier).join();
  }

  /** Our callAsync without a budget. */
  @Benchmark
  public Integer ours_async_noBudget() {
    return oursNoBudget.callAsync(stageSupplier).join();
  }

  /** Resilience4j {@code retry.executeCompletionStage(scheduler, supplier)}. */
  @Benchmark
  public Integer resilience4j_executeCompletionStage() {
    return resilience4j.executeCompletionStage(resilience4jScheduler, stageSupplier).toCompletableFuture().join();
  }

  /** Failsafe {@code getStageAsync(supplier)} (its default scheduler: the common pool). */
  @Benchmark
  public Integer failsafe_getStageAsync() {
    return failsafe.getStageAsync(failsafeStageSupplier).join();
  }

  // ---- one retried call: first attempt fails, second succeeds, zero backoff, no budget ---------

  @Benchmark
  public Integer ours_retried_sync() throws Exception {
    return oursRetrying.call(failsOnce);
  }

  @Benchmark
  public Integer resilience4j_retried_executeCallable() throws Exception {
    return resilience4jRetrying.executeCallable(failsOnce);
  }

  @Benchmark
  public Integer failsafe_retried_get() {
    return failsafeRetrying.get(failsafeFailsOnce);
  }

  @Benchmark
  public Integer ours_retried_async() {
    return oursRetrying.callAsync(stageFailsOnce).join();
  }

  @Benchmark
  public Integer resilience4j_retried_executeCompletionStage() {
    return resilience4jRetrying.executeCompletionStage(resilience4jScheduler, stageFailsOnce).toCompletableFuture().join();
  }

  @Benchmark
  public Integer failsafe_retried_getStageAsync() {
    return failsafeRetrying.getStageAsync(failsafeStageFailsOnce).join();
  }
}
