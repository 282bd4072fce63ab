package io.retrybudget.bench.jmh;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.LocalRetryBudget;
import io.retrybudget.retry.RetryExecutor;
import io.retrybudget.retry.RetryPlanner;
import io.retrybudget.retry.RetryPolicy;
import java.util.concurrent.Callable;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
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
 * Where the time of {@code RetryExecutor.call} on a successful first attempt goes: the pieces of its
 * success path measured alone, and the executor with its clock and random source replaced by
 * constants (through the public builder), so the difference to {@code RetryOverheadBenchmark} is
 * what those two cost inside the real path. Diagnosis only; the comparison lives in
 * {@link RetryOverheadBenchmark}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class RetryOverheadPartsBenchmark {
  private Integer value = 42;
  private Callable<Integer> callable;
  private final LongAdder adder = new LongAdder();
  private RetryPlanner planner;
  private LocalRetryBudget localBudget;
  private RetryExecutor noBudgetFixedClockAndRandom;
  private RetryExecutor noBudgetFixedClock;
  private RetryExecutor noBudgetFixedRandom;

  @Setup(Level.Trial)
  public void setUp() {
    callable = () -> value;
    RetryPolicy policy = RetryPolicy.builder().maxAttempts(3).build();
    planner = new RetryPlanner(policy);
    localBudget = new LocalRetryBudget(BudgetConfig.builder("jmh-parts").build());
    noBudgetFixedClockAndRandom = RetryExecutor.builder(policy).nanoClock(() -> 0L).random(() -> 0.5).build();
    noBudgetFixedClock = RetryExecutor.builder(policy).nanoClock(() -> 0L).build();
    noBudgetFixedRandom = RetryExecutor.builder(policy).random(() -> 0.5).build();
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    noBudgetFixedClockAndRandom.close();
    noBudgetFixedClock.close();
    noBudgetFixedRandom.close();
  }

  /** RetryExecutor.call reads System.nanoTime() twice per attempt (start, and elapsed for the planner). */
  @Benchmark
  public long part_nanoTime() {
    return System.nanoTime();
  }

  /** The default random source, drawn on every attempt, success included. */
  @Benchmark
  public double part_threadLocalRandomNextDouble() {
    return ThreadLocalRandom.current().nextDouble();
  }

  /** RedisRetryBudget.recordFirstAttempt(): one LongAdder increment. */
  @Benchmark
  public void part_longAdderIncrement() {
    adder.increment();
  }

  /** LocalRetryBudget.recordFirstAttempt(): synchronized, currentTimeMillis, sliding-window add. */
  @Benchmark
  public void part_localBudgetRecordFirstAttempt() {
    localBudget.recordFirstAttempt();
  }

  /** The clock LocalRetryBudget reads. */
  @Benchmark
  public long part_currentTimeMillis() {
    return System.currentTimeMillis();
  }

  /** The planner's decision after a successful attempt (policy predicate, constant SUCCESS plan). */
  @Benchmark
  public RetryPlanner.Plan part_plannerNextOnSuccess() {
    return planner.next(1, 0, 1_000, value, null, false, 0.5);
  }

  /** Executor without budget, clock and random replaced by constants: the rest of the path. */
  @Benchmark
  public Integer ours_noBudget_fixedClockAndRandom() throws Exception {
    return noBudgetFixedClockAndRandom.call(callable);
  }

  /** Executor without budget, clock replaced by a constant (random source real). */
  @Benchmark
  public Integer ours_noBudget_fixedClock() throws Exception {
    return noBudgetFixedClock.call(callable);
  }

  /** Executor without budget, random source replaced by a constant (clock real). */
  @Benchmark
  public Integer ours_noBudget_fixedRandom() throws Exception {
    return noBudgetFixedRandom.call(callable);
  }
}
