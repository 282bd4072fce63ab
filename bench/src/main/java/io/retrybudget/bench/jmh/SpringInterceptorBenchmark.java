package io.retrybudget.bench.jmh;

import io.retrybudget.spring.RetryBudgetAutoConfiguration;
import io.retrybudget.spring.RetryBudgetInterceptors;
import io.retrybudget.testing.RedisServerProcess;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import java.util.Map;
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
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.core.env.MapPropertySource;
import org.springframework.http.client.SimpleClientHttpRequestFactory;
import org.springframework.web.client.RestClient;

/**
 * The Spring starter's {@code ClientHttpRequestInterceptor} on its success path (first attempt 200,
 * so the budget only counts the first attempt) against the same {@code RestClient} without it, both
 * calling one local HTTP server (Vert.x on loopback, answering {@code ok}) through the
 * same request factory ({@code SimpleClientHttpRequestFactory}: {@code HttpURLConnection} on the
 * caller's thread, connections kept alive, so no thread hand-off blurs the difference). The interceptor comes from a real application
 * context (the starter's auto-configuration) with its budget on a real redis-server.
 *
 * <p>Run: see retry-budget-spring-boot/README.md ("JMH").
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class SpringInterceptorBenchmark {
  private RedisServerProcess redis;
  private Vertx vertx;
  private HttpServer server;
  private AnnotationConfigApplicationContext context;
  private RestClient bare;
  private RestClient budgeted;
  private RestClient noop;

  @Setup(Level.Trial)
  public void setUp() throws Exception {
    redis = RedisServerProcess.start();
    vertx = Vertx.vertx();
    server = vertx.createHttpServer().requestHandler(req -> req.response().end("ok"))
        .listen(0, "127.0.0.1").toCompletionStage().toCompletableFuture().get();

    context = new AnnotationConfigApplicationContext();
    context.getEnvironment().getPropertySources().addFirst(new MapPropertySource("bench", Map.of(
        "retrybudget.redis.uri", redis.uri(),
        "retrybudget.budgets.bench.ratio", "0.10",
        "retrybudget.clients.backend.budget", "bench",
        "retrybudget.clients.backend.max-attempts", "3")));
    context.register(RetryBudgetAutoConfiguration.class);
    context.refresh();

    SimpleClientHttpRequestFactory factory = new SimpleClientHttpRequestFactory(); // HttpURLConnection, keep-alive
    String base = "http://127.0.0.1:" + server.actualPort();
    bare = RestClient.builder().requestFactory(factory).baseUrl(base).build();
    noop = RestClient.builder().requestFactory(factory).baseUrl(base)
        .requestInterceptor((request, body, execution) -> execution.execute(request, body)).build();
    budgeted = RestClient.builder().requestFactory(factory).baseUrl(base)
        .requestInterceptor(context.getBean(RetryBudgetInterceptors.class).forClient("backend")).build();
  }

  @TearDown(Level.Trial)
  public void tearDown() throws Exception {
    context.close();
    vertx.close().toCompletionStage().toCompletableFuture().get();
    redis.close();
  }

  /** The reference: RestClient alone. */
  @Benchmark
  public String bareRestClient() {
    return bare.get().uri("/work").retrieve().body(String.class);
  }

  /** Control: an interceptor that only calls on (what any interceptor costs in Spring's chain). */
  @Benchmark
  public String noopInterceptorRestClient() {
    return noop.get().uri("/work").retrieve().body(String.class);
  }

  /** The same RestClient with the starter's interceptor (policy 3 attempts, fleet budget on Redis). */
  @Benchmark
  public String interceptorRestClient() {
    return budgeted.get().uri("/work").retrieve().body(String.class);
  }
}
