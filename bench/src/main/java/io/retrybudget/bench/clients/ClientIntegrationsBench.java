package io.retrybudget.bench.clients;

import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
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
import io.retrybudget.retry.RetryPolicy;
import io.retrybudget.testing.RedisServerProcess;
import io.retrybudget.vertx.RetryingWebClient;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.ext.web.client.WebClient;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;

/**
 * A program (not a test) that measures the client integrations on loopback, everything in one JVM
 * and one run, side by side:
 *
 * <ol>
 *   <li>success-path cost per call of each integration against its bare client (OkHttp
 *       {@code Call.execute}, Vert.x {@code WebClient.send}, a gRPC blocking unary call), in
 *       interleaved rounds from one caller thread: time per call, and bytes allocated per call by
 *       the whole JVM (client and server, so compare the difference);</li>
 *   <li>gRPC in a total outage, 50 channels: the fleet budget (this interceptor, ratio 0.10, no
 *       floor) against gRPC's built-in {@code retryThrottling} (maxTokens 10, tokenRatio 0.1, the
 *       same retry policy): the retry ratio the server sees, over the run and per second.</li>
 * </ol>
 *
 * <pre>
 * mvn -q -B -pl bench -am package -DskipTests dependency:build-classpath -Dmdep.outputFile=/tmp/bench.cp
 * java -cp bench/target/classes:$(cat /tmp/bench.cp) io.retrybudget.bench.clients.ClientIntegrationsBench [rounds] [callsPerRound] [outageSeconds]
 * </pre>
 */
public final class ClientIntegrationsBench {
  static final MethodDescriptor.Marshaller<String> UTF8 = new MethodDescriptor.Marshaller<>() {
    @Override
    public InputStream stream(String value) {
      return new ByteArrayInputStream(value.getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public String parse(InputStream stream) {
      try {
        return new String(stream.readAllBytes(), StandardCharsets.UTF_8);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  };
  static final MethodDescriptor<String, String> ECHO = MethodDescriptor.<String, String>newBuilder()
      .setType(MethodDescriptor.MethodType.UNARY).setFullMethodName("bench.Echo/Echo")
      .setRequestMarshaller(UTF8).setResponseMarshaller(UTF8).build();
  static final Metadata.Key<String> PREVIOUS = RetryBudgetClientInterceptor.PREVIOUS_ATTEMPTS;

  private ClientIntegrationsBench() {}

  interface Call {
    void run() throws Exception;
  }

  public static void main(String[] args) throws Exception {
    int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 5;
    int calls = args.length > 1 ? Integer.parseInt(args[1]) : 2000;
    int outageSeconds = args.length > 2 ? Integer.parseInt(args[2]) : 5;
    System.out.printf("client integrations bench: %d rounds x %d calls per variant; outage %d s; %d cores%n",
        rounds, calls, outageSeconds, Runtime.getRuntime().availableProcessors());
    AtomicBoolean down = new AtomicBoolean();
    AtomicLong firsts = new AtomicLong();
    AtomicLong retries = new AtomicLong();
    Vertx vertx = Vertx.vertx();
    try (RedisServerProcess redis = RedisServerProcess.start();
        RedisBudgetClient budgets = RedisBudgetClient.builder(RedisConnectionOptions.standalone(redis.uri()).build()).build()) {
      HttpServer http = vertx.createHttpServer().requestHandler(req -> req.response().end("ok"))
          .listen(0, "127.0.0.1").toCompletionStage().toCompletableFuture().get();
      Server grpc = grpcServer(down, firsts, retries);
      try {
        overhead(budgets, vertx, http.actualPort(), grpc.getPort(), rounds, calls);
        down.set(true);
        outage(budgets, grpc.getPort(), outageSeconds, firsts, retries);
      } finally {
        grpc.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
        http.close().toCompletionStage().toCompletableFuture().get();
      }
    } finally {
      vertx.close().toCompletionStage().toCompletableFuture().get();
    }
  }

  static Server grpcServer(AtomicBoolean down, AtomicLong firsts, AtomicLong retries) throws IOException {
    ServerServiceDefinition service = ServerServiceDefinition.builder("bench.Echo")
        .addMethod(ECHO, ServerCalls.asyncUnaryCall((String req, StreamObserver<String> out) -> {
          if (down.get()) {
            out.onError(Status.UNAVAILABLE.withDescription("down").asRuntimeException());
          } else {
            out.onNext(req);
            out.onCompleted();
          }
        })).build();
    ServerInterceptor counter = new ServerInterceptor() {
      @Override
      public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        if (down.get()) {
          (headers.get(PREVIOUS) == null ? firsts : retries).incrementAndGet();
        }
        return next.startCall(call, headers);
      }
    };
    return NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
        .addService(ServerInterceptors.intercept(service, counter)).build().start();
  }

  static void overhead(RedisBudgetClient budgets, Vertx vertx, int httpPort, int grpcPort, int rounds, int calls) throws Exception {
    RetryPolicy policy = RetryPolicy.builder().maxAttempts(3).build();
    RetryBudget budget = budgets.budget(BudgetConfig.builder("bench-clients").build());
    OkHttpClient bareOk = new OkHttpClient();
    RetryBudgetInterceptor okInterceptor = RetryBudgetInterceptor.builder().policy(policy).budget(budget).build();
    OkHttpClient retryingOk = bareOk.newBuilder().addInterceptor(okInterceptor).retryOnConnectionFailure(false).build();
    Request request = new Request.Builder().url("http://127.0.0.1:" + httpPort + "/x").build();
    WebClient web = WebClient.create(vertx);
    RetryingWebClient retryingWeb = RetryingWebClient.builder(vertx).policy(policy).budget(budget).build();
    ManagedChannel bareChannel = NettyChannelBuilder.forAddress("127.0.0.1", grpcPort).usePlaintext().disableRetry().build();
    RetryBudgetClientInterceptor grpcInterceptor = RetryBudgetClientInterceptor.builder().policy(policy).budget(budget).build();
    ManagedChannel retryingChannel = NettyChannelBuilder.forAddress("127.0.0.1", grpcPort).usePlaintext().disableRetry()
        .intercept(grpcInterceptor).build();
    String[] names = {"okhttp Call.execute", "okhttp + RetryBudgetInterceptor", "vertx WebClient.send",
        "vertx RetryingWebClient.send", "grpc blocking unary", "grpc + RetryBudgetClientInterceptor"};
    Call[] variants = {
        () -> {
          try (Response r = bareOk.newCall(request).execute()) {
            r.body().string();
          }
        },
        () -> {
          try (Response r = retryingOk.newCall(request).execute()) {
            r.body().string();
          }
        },
        () -> web.get(httpPort, "127.0.0.1", "/x").send().toCompletionStage().toCompletableFuture().get(),
        () -> retryingWeb.send(web.get(httpPort, "127.0.0.1", "/x")).toCompletionStage().toCompletableFuture().get(),
        () -> ClientCalls.blockingUnaryCall(bareChannel, ECHO, CallOptions.DEFAULT, "x"),
        () -> ClientCalls.blockingUnaryCall(retryingChannel, ECHO, CallOptions.DEFAULT, "x"),
    };
    long[][] nanos = new long[variants.length][rounds];
    long[][] bytes = new long[variants.length][rounds];
    for (Call v : variants) { // warm-up
      for (int i = 0; i < calls; i++) {
        v.run();
      }
    }
    for (int round = 0; round < rounds; round++) {
      for (int k = 0; k < variants.length; k++) {
        long b0 = allocated();
        long t0 = System.nanoTime();
        for (int i = 0; i < calls; i++) {
          variants[k].run();
        }
        nanos[k][round] = (System.nanoTime() - t0) / calls;
        bytes[k][round] = (allocated() - b0) / calls;
      }
    }
    System.out.println("success path, median over rounds (whole-JVM allocation: client and server)");
    System.out.printf("%-40s %12s %14s%n", "variant", "us/call", "bytes/call");
    for (int k = 0; k < variants.length; k++) {
      System.out.printf("%-40s %12.1f %14d%n", names[k], median(nanos[k]) / 1000.0, median(bytes[k]));
    }
    for (int k = 0; k < variants.length; k += 2) {
      System.out.printf("%-40s time x%.2f, +%d bytes/call%n", names[k + 1] + " vs bare",
          (double) median(nanos[k + 1]) / median(nanos[k]), median(bytes[k + 1]) - median(bytes[k]));
    }
    bareChannel.shutdownNow();
    retryingChannel.shutdownNow();
    grpcInterceptor.close();
    retryingWeb.close();
    web.close();
    okInterceptor.close();
    budget.close();
  }

  static void outage(RedisBudgetClient budgets, int port, int seconds, AtomicLong firsts, AtomicLong retries) throws Exception {
    RetryPolicy policy = RetryPolicy.builder().maxAttempts(3).backoff(Duration.ofMillis(1), Duration.ofMillis(5)).build();
    Map<String, Object> throttled = Map.of(
        "methodConfig", List.of(Map.of(
            "name", List.of(Map.of("service", "bench.Echo")),
            "retryPolicy", Map.of("maxAttempts", 3.0, "initialBackoff", "0.001s", "maxBackoff", "0.005s",
                "backoffMultiplier", 2.0, "retryableStatusCodes", List.of("UNAVAILABLE")))),
        "retryThrottling", Map.of("maxTokens", 10.0, "tokenRatio", 0.1));
    for (String strategy : List.of("fleet budget (ratio 0.10, no floor)", "grpc retryThrottling (maxTokens 10, tokenRatio 0.1)")) {
      boolean fleet = strategy.startsWith("fleet");
      BudgetConfig config = BudgetConfig.builder("bench-grpc-outage").ratio(0.10).minRetriesPerSecond(0).build();
      List<ManagedChannel> channels = new ArrayList<>();
      List<AutoCloseable> closeables = new ArrayList<>();
      for (int i = 0; i < 50; i++) {
        NettyChannelBuilder b = NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext();
        if (fleet) {
          RetryBudget budget = budgets.budget(config);
          RetryBudgetClientInterceptor interceptor = RetryBudgetClientInterceptor.builder().policy(policy).budget(budget).build();
          closeables.add(interceptor);
          closeables.add(budget);
          b.disableRetry().intercept(interceptor);
        } else {
          b.enableRetry().defaultServiceConfig(throttled);
        }
        channels.add(b.build());
      }
      firsts.set(0);
      retries.set(0);
      AtomicBoolean stop = new AtomicBoolean();
      List<Thread> threads = new ArrayList<>();
      for (ManagedChannel channel : channels) {
        Thread t = new Thread(() -> {
          while (!stop.get()) {
            try {
              ClientCalls.blockingUnaryCall(channel, ECHO, CallOptions.DEFAULT, "pay");
            } catch (StatusRuntimeException expected) {
              // down
            }
          }
        });
        t.start();
        threads.add(t);
      }
      StringBuilder perSecond = new StringBuilder();
      long lastF = 0;
      long lastR = 0;
      for (int s = 0; s < seconds; s++) {
        Thread.sleep(1000);
        long f = firsts.get();
        long r = retries.get();
        perSecond.append(String.format(" %.3f", (double) (r - lastR) / Math.max(1, f - lastF)));
        lastF = f;
        lastR = r;
      }
      stop.set(true);
      for (Thread t : threads) {
        t.join();
      }
      System.out.printf("outage, 50 channels, %s: first attempts %d, retries %d, retry ratio %.4f; per second:%s%n",
          strategy, firsts.get(), retries.get(), (double) retries.get() / firsts.get(), perSecond);
      for (ManagedChannel c : channels) {
        c.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
      }
      for (AutoCloseable c : closeables) {
        c.close();
      }
    }
  }

  static long allocated() {
    com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    long sum = 0;
    for (long b : mx.getThreadAllocatedBytes(mx.getAllThreadIds())) {
      if (b > 0) {
        sum += b;
      }
    }
    return sum;
  }

  static long median(long[] values) {
    long[] v = values.clone();
    java.util.Arrays.sort(v);
    return v[v.length / 2];
  }
}
