package io.retrybudget.bench.clients;

import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.ServerServiceDefinition;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import io.retrybudget.grpc.RetryBudgetClientInterceptor;
import io.retrybudget.okhttp.RetryBudgetInterceptor;
import io.retrybudget.retry.HedgePolicy;
import io.retrybudget.retry.RetryPolicy;
import io.retrybudget.testing.RedisServerProcess;
import io.retrybudget.vertx.RetryingWebClient;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServer;
import io.vertx.ext.web.client.HttpResponse;
import io.vertx.ext.web.client.WebClient;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;
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
 * The client integrations' success paths (first attempt answered 200 / OK, so the budget only
 * counts the first attempt) against their bare clients, each pair on the same loopback server in
 * this JVM: OkHttp {@code Call.execute} with and without {@link RetryBudgetInterceptor} (and with
 * its hedging on, the hedge never sent), Vert.x {@code WebClient.send} with and without {@link
 * RetryingWebClient} (and with its in-flight cancellation interceptor), a gRPC blocking unary call
 * with and without {@link RetryBudgetClientInterceptor}. Policy: 3 attempts; budget on a real
 * redis-server. {@code gc.alloc.rate.norm} counts the whole JVM (client, server, Vert.x and Netty
 * threads): compare the differences within a pair.
 *
 * <p>Run: see retry-budget-okhttp/README.md ("JMH").
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class ClientIntegrationsBenchmark {
  private RedisServerProcess redis;
  private RedisBudgetClient budgets;
  private RetryBudget budget;
  private Vertx vertx;
  private HttpServer http;
  private Server grpc;
  private int httpPort;

  private OkHttpClient bareOk;
  private RetryBudgetInterceptor okInterceptor;
  private OkHttpClient retryingOk;
  private RetryBudgetInterceptor okHedgingInterceptor;
  private OkHttpClient hedgingOk;
  private Request request;

  private WebClient web;
  private RetryingWebClient retryingWeb;
  private WebClient cancellableWeb;
  private RetryingWebClient retryingCancellableWeb;

  private ManagedChannel bareChannel;
  private RetryBudgetClientInterceptor grpcInterceptor;
  private ManagedChannel retryingChannel;

  @Setup(Level.Trial)
  public void setUp() throws Exception {
    redis = RedisServerProcess.start();
    budgets = RedisBudgetClient.builder(RedisConnectionOptions.standalone(redis.uri()).build()).build();
    budget = budgets.budget(BudgetConfig.builder("jmh-clients").build());
    vertx = Vertx.vertx();
    http = vertx.createHttpServer().requestHandler(req -> req.response().end("ok"))
        .listen(0, "127.0.0.1").toCompletionStage().toCompletableFuture().get();
    httpPort = http.actualPort();
    ServerServiceDefinition echo = ServerServiceDefinition.builder("bench.Echo")
        .addMethod(ClientIntegrationsBench.ECHO, ServerCalls.asyncUnaryCall((String req, StreamObserver<String> out) -> {
          out.onNext(req);
          out.onCompleted();
        })).build();
    grpc = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0)).addService(echo).build().start();

    RetryPolicy policy = RetryPolicy.builder().maxAttempts(3).build();
    bareOk = new OkHttpClient.Builder().retryOnConnectionFailure(false).build();
    okInterceptor = RetryBudgetInterceptor.builder().policy(policy).budget(budget).build();
    retryingOk = bareOk.newBuilder().addInterceptor(okInterceptor).build();
    okHedgingInterceptor = RetryBudgetInterceptor.builder().policy(policy).budget(budget)
        .hedging(HedgePolicy.fixedDelay(Duration.ofSeconds(1)).build(), bareOk).build();
    hedgingOk = bareOk.newBuilder().addInterceptor(okHedgingInterceptor).build();
    request = new Request.Builder().url("http://127.0.0.1:" + httpPort + "/x").build();

    web = WebClient.create(vertx);
    retryingWeb = RetryingWebClient.builder(vertx).policy(policy).budget(budget).build();
    cancellableWeb = WebClient.create(vertx);
    retryingCancellableWeb = RetryingWebClient.builder(vertx).policy(policy).budget(budget).webClient(cancellableWeb).build();

    bareChannel = NettyChannelBuilder.forAddress("127.0.0.1", grpc.getPort()).usePlaintext().disableRetry().build();
    grpcInterceptor = RetryBudgetClientInterceptor.builder().policy(policy).budget(budget).build();
    retryingChannel = NettyChannelBuilder.forAddress("127.0.0.1", grpc.getPort()).usePlaintext().disableRetry()
        .intercept(grpcInterceptor).build();
  }

  @TearDown(Level.Trial)
  public void tearDown() throws Exception {
    bareChannel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    retryingChannel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    grpcInterceptor.close();
    retryingWeb.close();
    retryingCancellableWeb.close();
    web.close();
    cancellableWeb.close();
    okInterceptor.close();
    okHedgingInterceptor.close();
    bareOk.dispatcher().executorService().shutdown();
    bareOk.connectionPool().evictAll();
    grpc.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    vertx.close().toCompletionStage().toCompletableFuture().get();
    budget.close();
    budgets.close();
    redis.close();
  }

  private static String body(Response r) throws IOException {
    try (r) {
      return r.body().string();
    }
  }

  @Benchmark
  public String okhttp_bare() throws IOException {
    return body(bareOk.newCall(request).execute());
  }

  @Benchmark
  public String okhttp_interceptor() throws IOException {
    return body(retryingOk.newCall(request).execute());
  }

  /** Hedging on (1 s delay, never reached): the attempt runs as a call of its own, through the executor's async path. */
  @Benchmark
  public String okhttp_interceptor_hedging() throws IOException {
    return body(hedgingOk.newCall(request).execute());
  }

  @Benchmark
  public HttpResponse<Buffer> vertx_bare() throws Exception {
    return web.get(httpPort, "127.0.0.1", "/x").send().toCompletionStage().toCompletableFuture().get();
  }

  @Benchmark
  public HttpResponse<Buffer> vertx_retryingWebClient() throws Exception {
    return retryingWeb.send(web.get(httpPort, "127.0.0.1", "/x")).toCompletionStage().toCompletableFuture().get();
  }

  /** With webClient(...): each attempt registered for the interceptor that can reset it. */
  @Benchmark
  public HttpResponse<Buffer> vertx_retryingWebClient_cancellable() throws Exception {
    return retryingCancellableWeb.send(cancellableWeb.get(httpPort, "127.0.0.1", "/x"))
        .toCompletionStage().toCompletableFuture().get();
  }

  @Benchmark
  public String grpc_bare() {
    return ClientCalls.blockingUnaryCall(bareChannel, ClientIntegrationsBench.ECHO, CallOptions.DEFAULT, "x");
  }

  @Benchmark
  public String grpc_interceptor() {
    return ClientCalls.blockingUnaryCall(retryingChannel, ClientIntegrationsBench.ECHO, CallOptions.DEFAULT, "x");
  }
}
