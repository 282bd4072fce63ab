package io.retrybudget.grpc;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCalls;
import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.retry.RetryPolicy;
import io.retrybudget.testing.RedisExtension;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * 50 gRPC channels, each with its own interceptor and budget client on one fleet budget in a real
 * Redis, against a server that answers UNAVAILABLE to everything: the retries it sees stay near
 * the budget's ratio of the first attempts it sees.
 */
class GrpcStormTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();

  static final int CLIENTS = 50;
  static final Duration STORM = Duration.ofSeconds(3);
  static final Duration LONGEST = Duration.ofSeconds(15);
  static final long ENOUGH = 500;

  @Test
  void fiftyChannelsInATotalOutageRetryAboutTheFleetRatio() throws Exception {
    List<ManagedChannel> channels = new ArrayList<>();
    List<RetryBudgetClientInterceptor> interceptors = new ArrayList<>();
    List<RetryBudget> fleet = new ArrayList<>();
    long firsts;
    long retries;
    try (EchoService service = new EchoService();
        RedisBudgetClient budgets = RedisBudgetClient.builder(redis.connectionOptions().build())
            .callTimeout(Duration.ofSeconds(1)).build()) { // a loaded build machine: Redis decides, not the fallback
      service.otherwise = EchoService.fail(Status.UNAVAILABLE.withDescription("down"));
      BudgetConfig config = BudgetConfig.builder("grpc-storm").ratio(0.10).minRetriesPerSecond(0).windowSeconds(10).build();
      RetryPolicy policy = RetryPolicy.builder().maxAttempts(3).backoff(Duration.ofMillis(1), Duration.ofMillis(5)).build();
      AtomicBoolean stop = new AtomicBoolean();
      List<CompletableFuture<Void>> runs = new ArrayList<>();
      for (int i = 0; i < CLIENTS; i++) {
        RetryBudget budget = budgets.budget(config);
        RetryBudgetClientInterceptor interceptor = RetryBudgetClientInterceptor.builder().policy(policy).budget(budget).build();
        ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1", service.port()).usePlaintext()
            .disableRetry().intercept(interceptor).build();
        fleet.add(budget);
        interceptors.add(interceptor);
        channels.add(channel);
        runs.add(CompletableFuture.runAsync(() -> {
          while (!stop.get()) {
            try {
              ClientCalls.blockingUnaryCall(channel, EchoService.ECHO, CallOptions.DEFAULT, "pay");
              throw new AssertionError("the backend is down");
            } catch (StatusRuntimeException e) {
              if (e.getStatus().getCode() != Status.Code.UNAVAILABLE) {
                throw e;
              }
            }
          }
        }, runnable -> new Thread(runnable, "storm-channel").start()));
      }
      long start = System.nanoTime();
      java.util.concurrent.ScheduledExecutorService timer = java.util.concurrent.Executors.newSingleThreadScheduledExecutor();
      timer.scheduleWithFixedDelay(() -> {
        long elapsed = System.nanoTime() - start;
        if ((elapsed >= STORM.toNanos() && service.previousAttempts.stream().filter("-"::equals).count() >= ENOUGH) || elapsed >= LONGEST.toNanos()) {
          stop.set(true);
          timer.shutdown();
        }
      }, 200, 200, TimeUnit.MILLISECONDS);
      CompletableFuture.allOf(runs.toArray(new CompletableFuture<?>[0])).get(60, TimeUnit.SECONDS);
      firsts = service.previousAttempts.stream().filter("-"::equals).count();
      retries = service.requests() - firsts;
      for (ManagedChannel c : channels) {
        c.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
      }
      interceptors.forEach(RetryBudgetClientInterceptor::close);
      fleet.forEach(RetryBudget::close);
    }
    double ratio = (double) retries / firsts;
    System.out.printf("grpc storm: %d channels, %d first attempts, %d retries, ratio %.4f%n", CLIENTS, firsts, retries, ratio);
    assertTrue(firsts > 300, "too few first attempts for a ratio: " + firsts);
    assertTrue(ratio >= 0.05 && ratio <= 0.125, "fleet retry ratio " + ratio + " (" + retries + " / " + firsts + ")");
  }
}
