package io.retrybudget.grpc;

import io.retrybudget.testing.CountingBudget;
import static io.retrybudget.grpc.EchoService.ECHO;
import static io.retrybudget.grpc.EchoService.HANG;
import static io.retrybudget.grpc.EchoService.fail;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.common.util.concurrent.ListenableFuture;
import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCalls;
import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.retry.HedgePolicy;
import io.retrybudget.retry.Jitter;
import io.retrybudget.retry.RetryBudgetExhaustedException;
import io.retrybudget.retry.RetryListener;
import io.retrybudget.retry.RetryOutcome;
import io.retrybudget.retry.RetryPolicy;
import io.retrybudget.testing.RedisExtension;
import java.time.Duration;
import java.util.List;
import java.util.function.BiConsumer;
import io.grpc.stub.StreamObserver;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The interceptor on a real Netty channel to a real gRPC server on loopback, with a real Redis budget. */
class RetryBudgetClientInterceptorTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();
  private static RedisBudgetClient budgets;

  private EchoService service;
  private ManagedChannel channel;
  private RetryBudgetClientInterceptor interceptor;
  private CountingBudget budget;
  private final Recorder recorder = new Recorder();
  private String budgetName;

  private static final RetryPolicy FAST = RetryPolicy.builder().maxAttempts(3)
      .backoff(Duration.ofMillis(1), Duration.ofMillis(5)).build();
  private static final RetryPolicy FOREVER = RetryPolicy.builder().maxAttempts(3)
      .backoff(Duration.ofHours(1), Duration.ofHours(1)).jitter(Jitter.NONE).build();

  @BeforeAll
  static void connect() {
    budgets = RedisBudgetClient.builder(redis.connectionOptions().build()).callTimeout(Duration.ofSeconds(1)).build();
  }

  @AfterAll
  static void disconnect() {
    budgets.close();
  }

  @BeforeEach
  void start(TestInfo info) throws Exception {
    service = new EchoService();
    budgetName = "grpc-" + info.getTestMethod().orElseThrow().getName();
  }

  @AfterEach
  void stop() throws Exception {
    if (channel != null) {
      channel.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
    }
    if (interceptor != null) {
      interceptor.close();
    }
    if (budget != null) {
      budget.close();
    }
    service.close();
  }

  private void connect(RetryBudgetClientInterceptor.Builder b, double ratio, int floor) {
    budget = new CountingBudget(budgets.budget(BudgetConfig.builder(budgetName).ratio(ratio).minRetriesPerSecond(floor).build()));
    interceptor = b.budget(budget).listener(recorder).build();
    channel = NettyChannelBuilder.forAddress("127.0.0.1", service.port()).usePlaintext()
        .disableRetry() // gRPC's own retries off: ours are the only ones
        .intercept(interceptor).build();
  }

  private String call(CallOptions options) {
    return ClientCalls.blockingUnaryCall(channel, ECHO, options, "hi");
  }

  @Test
  void successIsOneAttemptCountedOnce() {
    connect(RetryBudgetClientInterceptor.builder().policy(FAST), 0.1, 10);
    assertEquals("echo hi", call(CallOptions.DEFAULT));
    assertEquals(List.of("-"), service.previousAttempts);
    assertEquals(1, budget.firstAttempts.get());
    assertEquals(0, budget.acquires.get());
  }

  @Test
  void retriesUnavailableAndResourceExhaustedThenSucceeds() {
    service.script.add(fail(Status.UNAVAILABLE));
    service.script.add(fail(Status.RESOURCE_EXHAUSTED));
    connect(RetryBudgetClientInterceptor.builder().policy(FAST), 0.1, 10);
    assertEquals("echo hi", call(CallOptions.DEFAULT));
    assertEquals(List.of("-", "1", "2"), service.previousAttempts);
    assertEquals(1, budget.firstAttempts.get());
    assertEquals(2, budget.acquires.get());
  }

  @Test
  void otherStatusesAreNotRetriedAndTheCodesAreConfigurable() {
    service.script.add(fail(Status.INVALID_ARGUMENT));
    service.script.add(fail(Status.INTERNAL));
    service.script.add(fail(Status.UNAVAILABLE));
    connect(RetryBudgetClientInterceptor.builder().policy(FAST).retryOn(Status.Code.INTERNAL), 0.1, 10);
    assertEquals(Status.Code.INVALID_ARGUMENT, assertThrows(StatusRuntimeException.class, () -> call(CallOptions.DEFAULT)).getStatus().getCode());
    // INTERNAL is retried, then UNAVAILABLE (not in the set) ends the call
    assertEquals(Status.Code.UNAVAILABLE, assertThrows(StatusRuntimeException.class, () -> call(CallOptions.DEFAULT)).getStatus().getCode());
    assertEquals(List.of("-", "-", "1"), service.previousAttempts);
    assertThrows(IllegalArgumentException.class, () -> RetryBudgetClientInterceptor.builder().retryOn(Status.Code.OK));
  }

  @Test
  void pushbackIsWaitedAtLeastAndNegativeMeansDoNotRetry() {
    service.script.add(fail(Status.UNAVAILABLE, "grpc-retry-pushback-ms", "150"));
    service.script.add(fail(Status.UNAVAILABLE.withDescription("shed"), "grpc-retry-pushback-ms", "-1"));
    connect(RetryBudgetClientInterceptor.builder().policy(FAST.toBuilder().backoff(Duration.ofMillis(1), Duration.ofSeconds(10)).build()), 0.1, 10);
    StatusRuntimeException e = assertThrows(StatusRuntimeException.class, () -> call(CallOptions.DEFAULT));
    assertEquals("shed", e.getStatus().getDescription());
    assertEquals("-1", e.getTrailers().get(RetryBudgetClientInterceptor.PUSHBACK));
    assertEquals(2, service.requests());
    assertTrue(recorder.delaysNanos.get(0) >= TimeUnit.MILLISECONDS.toNanos(150), "slept " + recorder.delaysNanos);
    assertEquals(1, recorder.delaysNanos.size());
  }

  @Test
  void budgetDenialFailsFastWithoutSleeping() {
    service.otherwise = fail(Status.UNAVAILABLE.withDescription("down"));
    // ratio 1 ppm and no floor: Redis refuses every retry; the hour of backoff would hang a call that slept
    connect(RetryBudgetClientInterceptor.builder().policy(FOREVER), 0.000001, 0);
    StatusRuntimeException e = assertTimeoutPreemptively(Duration.ofSeconds(10),
        () -> assertThrows(StatusRuntimeException.class, () -> call(CallOptions.DEFAULT)));
    assertEquals(Status.Code.UNAVAILABLE, e.getStatus().getCode());
    RetryBudgetExhaustedException refused = assertInstanceOf(RetryBudgetExhaustedException.class, e.getStatus().getCause());
    assertEquals(BudgetDecision.Reason.DENIED_EXHAUSTED, refused.decision().reason());
    assertTrue(e.getStatus().getDescription().endsWith(": down"), e.getStatus().getDescription());
    assertEquals(1, service.requests());
    assertEquals(0, recorder.delaysNanos.size());
  }

  @Test
  void everyAttemptTellsTheServerItsAttemptTimeoutCutToTheCallsDeadline() {
    service.script.add(fail(Status.UNAVAILABLE));
    service.script.add(fail(Status.UNAVAILABLE));
    RetryPolicy timed = FAST.toBuilder().attemptTimeout(Duration.ofMillis(5_000)).build();
    connect(RetryBudgetClientInterceptor.builder().policy(timed), 1.0, 100);
    assertEquals("echo hi", call(CallOptions.DEFAULT));
    assertEquals(3, service.deadlineMillis.size());
    for (long ms : service.deadlineMillis) {
      assertTrue(ms > 0 && ms <= 5_000, "grpc-timeout of an attempt with a 5 s attempt timeout: " + service.deadlineMillis);
    }
    service.deadlineMillis.clear();
    service.script.add(fail(Status.UNAVAILABLE));
    assertEquals("echo hi", call(CallOptions.DEFAULT.withDeadlineAfter(2_000, TimeUnit.MILLISECONDS)));
    assertEquals(2, service.deadlineMillis.size());
    for (long ms : service.deadlineMillis) {
      assertTrue(ms > 0 && ms <= 2_000, "the call's 2 s deadline binds before the attempt timeout: " + service.deadlineMillis);
    }
    assertTrue(service.deadlineMillis.get(1) <= service.deadlineMillis.get(0), "the retry has no more time: " + service.deadlineMillis);
  }

  @Test
  void withoutADeadlineOrAttemptTimeoutNoGrpcTimeoutIsSent() {
    connect(RetryBudgetClientInterceptor.builder().policy(FAST), 0.1, 10);
    assertEquals("echo hi", call(CallOptions.DEFAULT));
    assertEquals(List.of(-1L), service.deadlineMillis);
  }

  @Test
  void callDeadlineCutsTheAttemptInFlight() {
    service.script.add(fail(Status.UNAVAILABLE));
    service.script.add(HANG);
    connect(RetryBudgetClientInterceptor.builder().policy(FAST), 1.0, 100);
    StatusRuntimeException e = assertTimeoutPreemptively(Duration.ofSeconds(10), () -> assertThrows(StatusRuntimeException.class,
        () -> call(CallOptions.DEFAULT.withDeadlineAfter(300, TimeUnit.MILLISECONDS))));
    assertEquals(Status.Code.DEADLINE_EXCEEDED, e.getStatus().getCode());
    assertEquals(2, service.requests());
  }

  @Test
  void callDeadlineCutsTheBackoffSleep() {
    service.otherwise = fail(Status.UNAVAILABLE);
    connect(RetryBudgetClientInterceptor.builder().policy(FOREVER), 1.0, 100);
    // time for the budget's first answer (it seeds Redis) on a loaded machine, then the hour-long sleep is cut
    StatusRuntimeException e = assertTimeoutPreemptively(Duration.ofSeconds(10), () -> assertThrows(StatusRuntimeException.class,
        () -> call(CallOptions.DEFAULT.withDeadlineAfter(2, TimeUnit.SECONDS))));
    assertEquals(Status.Code.DEADLINE_EXCEEDED, e.getStatus().getCode());
    assertEquals(1, service.requests());
    assertEquals(1, recorder.delaysNanos.size());
  }

  @Test
  void cancelStopsTheBackoffSleep() throws Exception {
    service.otherwise = fail(Status.UNAVAILABLE);
    connect(RetryBudgetClientInterceptor.builder().policy(FOREVER), 1.0, 100);
    CompletableFuture<ListenableFuture<String>> call = new CompletableFuture<>();
    recorder.onSleep = () -> call.thenAccept(f -> f.cancel(true)); // cancelled as the hour-long sleep is scheduled
    call.complete(ClientCalls.futureUnaryCall(channel.newCall(ECHO, CallOptions.DEFAULT), "hi"));
    assertThrows(CancellationException.class, () -> call.get().get(10, TimeUnit.SECONDS));
    io.retrybudget.testing.Eventually.await("the call ends cancelled", Duration.ofSeconds(10),
        () -> recorder.outcomes.contains(RetryOutcome.CANCELLED + " 1"));
    assertEquals(1, service.requests());
    assertEquals(1, budget.acquires.get());
  }

  @Test
  void cancellingTheCallersContextStopsTheBackoffSleep() throws Exception {
    service.otherwise = fail(Status.UNAVAILABLE);
    connect(RetryBudgetClientInterceptor.builder().policy(FOREVER), 1.0, 100);
    io.grpc.Context.CancellableContext context = io.grpc.Context.current().withCancellation();
    recorder.onSleep = () -> context.cancel(null); // on the budget's hand-off thread, not the caller's
    ListenableFuture<String> f = context.call(() -> ClientCalls.futureUnaryCall(channel.newCall(ECHO, CallOptions.DEFAULT), "hi"));
    java.util.concurrent.ExecutionException e = assertThrows(java.util.concurrent.ExecutionException.class,
        () -> f.get(10, TimeUnit.SECONDS));
    assertEquals(Status.Code.CANCELLED, Status.fromThrowable(e.getCause()).getCode());
    assertEquals(1, service.requests());
    assertEquals(1, budget.acquires.get());
  }

  @Test
  void theCallersContextDeadlineBoundsTheCall() {
    service.otherwise = fail(Status.UNAVAILABLE);
    connect(RetryBudgetClientInterceptor.builder().policy(FOREVER), 1.0, 100);
    // connected first: on a loaded machine the first connect alone can outlast the 2 s deadline
    io.retrybudget.testing.Eventually.await("the channel is ready", Duration.ofSeconds(10),
        () -> channel.getState(true) == io.grpc.ConnectivityState.READY);
    io.grpc.Context.CancellableContext context = io.grpc.Context.current()
        .withDeadlineAfter(2, TimeUnit.SECONDS, java.util.concurrent.Executors.newSingleThreadScheduledExecutor());
    StatusRuntimeException e = assertTimeoutPreemptively(Duration.ofSeconds(10), () -> assertThrows(StatusRuntimeException.class,
        () -> context.call(() -> call(CallOptions.DEFAULT))));
    assertEquals(Status.Code.DEADLINE_EXCEEDED, e.getStatus().getCode(), e.getStatus().toString());
    assertEquals(1, service.requests());
  }

  @Test
  void cancelStopsTheAttemptInFlightAndAsksNothing() throws Exception {
    service.script.add(HANG);
    connect(RetryBudgetClientInterceptor.builder().policy(FAST), 1.0, 100);
    ListenableFuture<String> f = ClientCalls.futureUnaryCall(channel.newCall(ECHO, CallOptions.DEFAULT), "hi");
    io.retrybudget.testing.Eventually.await("the attempt reached the server", Duration.ofSeconds(10), () -> service.requests() == 1);
    f.cancel(true);
    io.retrybudget.testing.Eventually.await("the call ends cancelled", Duration.ofSeconds(10),
        () -> recorder.outcomes.contains(RetryOutcome.CANCELLED + " 1"));
    assertEquals(1, service.requests());
    assertEquals(0, budget.acquires.get());
  }

  @Test
  void aHedgeWinsOverAnAttemptThatHangs() {
    BiConsumer<String, StreamObserver<String>> echo = service.otherwise;
    service.otherwise = (req, out) -> ("-".equals(EchoService.ATTEMPT.get()) ? HANG : echo).accept(req, out); // the first attempt hangs
    connect(RetryBudgetClientInterceptor.builder().policy(FAST.toBuilder().deadline(Duration.ofSeconds(5)).build())
        .hedging(HedgePolicy.fixedDelay(Duration.ofMillis(50)).build()), 1.0, 100);
    assertEquals("echo hi", call(CallOptions.DEFAULT));
    assertEquals(2, service.requests());
    // the first attempt and the hedge may reach the server in either order (the connection is new)
    assertEquals(List.of("-", "1"), service.previousAttempts.stream().sorted().toList());
    assertEquals(1, budget.acquires.get());
    assertEquals(1, recorder.hedgesWon.size());
  }

  static final class Recorder implements RetryListener {
    final List<String> outcomes = new CopyOnWriteArrayList<>();
    final List<Long> delaysNanos = new CopyOnWriteArrayList<>();
    final List<Integer> hedgesWon = new CopyOnWriteArrayList<>();
    volatile Runnable onSleep;

    @Override
    public void onRetryScheduled(int nextAttempt, long delayNanos, Throwable failure) {
      delaysNanos.add(delayNanos);
      Runnable r = onSleep;
      if (r != null) {
        r.run();
      }
    }

    @Override
    public void onHedgeWon(int attempt) {
      hedgesWon.add(attempt);
    }

    @Override
    public void onOutcome(RetryOutcome outcome, int attempts) {
      outcomes.add(outcome + " " + attempts);
    }
  }
}
