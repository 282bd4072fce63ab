package io.retrybudget.bench.clients;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import io.retrybudget.reactor.BudgetRetry;
import io.retrybudget.reactor.BudgetRetryFilter;
import io.retrybudget.retry.RetryPolicy;
import io.retrybudget.testing.RedisServerProcess;
import java.time.Duration;
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
import org.springframework.web.reactive.function.client.WebClient;
import reactor.core.publisher.Mono;
import reactor.netty.DisposableServer;
import reactor.netty.http.server.HttpServer;
import reactor.util.retry.Retry;
import reactor.util.retry.RetryBackoffSpec;

/**
 * retry-budget-reactor's success paths (first attempt answered, so the budget only counts the
 * first attempt) against what they replace, in one JMH run: a Spring {@code WebClient} with and
 * without {@link BudgetRetryFilter} on a Reactor Netty loopback server in this JVM, and a
 * synchronous {@code Mono} with {@code retryWhen(BudgetRetry)} (and {@code BudgetRetry.apply},
 * the whole-call form) against {@code retryWhen(Retry.backoff(...))}, Reactor's own. Policy: 3
 * attempts everywhere (Reactor's: 2 retries, 100 ms backoff); budget on a real redis-server.
 * {@code gc.alloc.rate.norm} counts the whole JVM (client, server and Netty threads for the
 * WebClient pair): compare the differences within a pair.
 *
 * <p>Run: see retry-budget-reactor/README.md ("JMH").
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class ReactorIntegrationBenchmark {
  private RedisServerProcess redis;
  private RedisBudgetClient budgets;
  private RetryBudget budget;
  private DisposableServer server;
  private String url;
  private WebClient bare;
  private WebClient filtered;
  private BudgetRetry budgetRetry;
  private RetryBackoffSpec reactorBackoff;
  private Mono<String> source;
  private String value = "ok";

  @Setup(Level.Trial)
  public void setUp() {
    redis = RedisServerProcess.start();
    budgets = RedisBudgetClient.builder(RedisConnectionOptions.standalone(redis.uri()).build()).build();
    budget = budgets.budget(BudgetConfig.builder("jmh-reactor").build());
    server = HttpServer.create().host("127.0.0.1").port(0)
        .handle((req, res) -> res.sendString(Mono.just("ok"))).bindNow();
    url = "http://127.0.0.1:" + server.port() + "/x";
    RetryPolicy policy = RetryPolicy.builder().maxAttempts(3).build();
    bare = WebClient.create();
    filtered = WebClient.builder().filter(BudgetRetryFilter.builder().policy(policy).budget(budget).build()).build();
    budgetRetry = BudgetRetry.of(policy, budget);
    reactorBackoff = Retry.backoff(2, Duration.ofMillis(100));
    source = Mono.fromSupplier(() -> value); // reads a field per subscription, as RetryOverheadBenchmark's callable
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    server.disposeNow();
    budget.close();
    budgets.close();
    redis.close();
  }

  @Benchmark
  public String webclient_bare() {
    return bare.get().uri(url).retrieve().bodyToMono(String.class).block();
  }

  @Benchmark
  public String webclient_budgetRetryFilter() {
    return filtered.get().uri(url).retrieve().bodyToMono(String.class).block();
  }

  @Benchmark
  public String mono_bare() {
    return source.block();
  }

  @Benchmark
  public String mono_retryWhen_reactorBackoff() {
    return source.retryWhen(reactorBackoff).block();
  }

  @Benchmark
  public String mono_retryWhen_budgetRetry() {
    return source.retryWhen(budgetRetry).block();
  }

  /** The whole-call form: results judged, attempt made through a ReactiveAttempt, outcome reported. */
  @Benchmark
  public String mono_budgetRetry_apply() {
    return budgetRetry.apply(source).block();
  }
}
