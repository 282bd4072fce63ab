package io.retrybudget.bench.jmh;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import io.retrybudget.observation.ObservationRetryListener;
import io.retrybudget.retry.RetryExecutor;
import io.retrybudget.retry.RetryPolicy;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * The success path of the executor (first attempt succeeds, 3 attempts at most, no budget) with and
 * without retry-budget-observation's listener: no listener at all; the listener on
 * {@link ObservationRegistry#NOOP} (an application with no observation registry configured); the
 * listener on a registry with one handler that records nothing (the cost of the two observations
 * themselves, before any tracer or meter handler adds its own). Synchronous and asynchronous.
 *
 * <p>Run: see bench/README.md ("JMH: observation").
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class ObservationOverheadBenchmark {
  /** Not final, so the JIT cannot fold it into a constant. */
  private Integer value = 42;
  private Callable<Integer> callable;
  private Supplier<CompletionStage<Integer>> stage;

  private RetryExecutor bare;
  private RetryExecutor noopRegistry;
  private RetryExecutor configuredRegistry;

  /** Supports every context, does nothing: the registry's own cost without a tracer or meters. */
  private static final class NothingHandler implements ObservationHandler<Observation.Context> {
    @Override
    public boolean supportsContext(Observation.Context context) {
      return true;
    }
  }

  @Setup
  public void setUp() {
    callable = () -> value;
    stage = () -> CompletableFuture.completedFuture(value);
    RetryPolicy policy = RetryPolicy.builder().maxAttempts(3).build();
    bare = RetryExecutor.builder(policy).build();
    noopRegistry = RetryExecutor.builder(policy)
        .listener(ObservationRetryListener.builder(ObservationRegistry.NOOP, "bench").build()).build();
    ObservationRegistry registry = ObservationRegistry.create();
    registry.observationConfig().observationHandler(new NothingHandler());
    configuredRegistry = RetryExecutor.builder(policy)
        .listener(ObservationRetryListener.builder(registry, "bench").build()).build();
  }

  @TearDown
  public void tearDown() {
    bare.close();
    noopRegistry.close();
    configuredRegistry.close();
  }

  @Benchmark
  public Integer syncNoListener() throws Exception {
    return bare.call(callable);
  }

  @Benchmark
  public Integer syncNoopRegistry() throws Exception {
    return noopRegistry.call(callable);
  }

  @Benchmark
  public Integer syncConfiguredRegistry() throws Exception {
    return configuredRegistry.call(callable);
  }

  @Benchmark
  public Integer asyncNoListener() {
    return bare.callAsync(stage).join();
  }

  @Benchmark
  public Integer asyncNoopRegistry() {
    return noopRegistry.callAsync(stage).join();
  }

  @Benchmark
  public Integer asyncConfiguredRegistry() {
    return configuredRegistry.callAsync(stage).join();
  }
}
