package io.retrybudget.grpc;

import static io.retrybudget.grpc.EchoService.COUNT;
import static io.retrybudget.grpc.EchoService.fail;
import static io.retrybudget.grpc.EchoService.failAfter;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCalls;
import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.retry.HedgePolicy;
import io.retrybudget.retry.Jitter;
import io.retrybudget.retry.RetryBudgetExhaustedException;
import io.retrybudget.retry.RetryPolicy;
import io.retrybudget.testing.CountingBudget;
import io.retrybudget.testing.RedisExtension;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Server-streaming calls on a real Netty channel to a real gRPC server, with a real Redis budget:
 * retried only before the first response message (gRFC A6), never after it; flow control and
 * cancellation are the caller's.
 */
class ServerStreamingRetryTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();
  private static RedisBudgetClient budgets;
  private static final RetryPolicy FAST = RetryPolicy.builder().maxAttempts(3)
      .backoff(Duration.ofMillis(1), Duration.ofMillis(5)).build();

  private EchoService service;
  private ManagedChannel channel;
  private RetryBudgetClientInterceptor interceptor;
  private CountingBudget budget;
  private String budgetName;

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
    budgetName = "grpc-stream-" + info.getTestMethod().orElseThrow().getName();
  }

  @AfterEach
  void stop() throws Exception {
    if (channel != null) {
      channel.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
    }
    if (interceptor != null) {
      interceptor.close();
    }
    service.close();
  }

  private void connect(RetryBudgetClientInterceptor.Builder b, double ratio, int floor) {
    budget = new CountingBudget(budgets.budget(BudgetConfig.builder(budgetName).ratio(ratio).minRetriesPerSecond(floor).build()));
    interceptor = b.budget(budget).build();
    channel = NettyChannelBuilder.forAddress("127.0.0.1", service.port()).usePlaintext().disableRetry()
        .intercept(interceptor).build();
  }

  private List<String> blocking(String n) {
    List<String> got = new ArrayList<>();
    // a deadline far beyond every test's timing, so a broken call fails instead of hanging the build
    Iterator<String> it = ClientCalls.blockingServerStreamingCall(channel, COUNT,
        CallOptions.DEFAULT.withDeadlineAfter(30, TimeUnit.SECONDS), n);
    it.forEachRemaining(got::add);
    return got;
  }

  @Test
  void aStreamThatFailsBeforeItsFirstMessageIsRetriedAndThenStreamsWhole() {
    service.script.add(fail(Status.UNAVAILABLE));
    service.script.add(fail(Status.RESOURCE_EXHAUSTED));
    connect(RetryBudgetClientInterceptor.builder().policy(FAST), 0.1, 10);
    assertEquals(List.of("0", "1", "2", "3", "4"), blocking("5"));
    assertEquals(List.of("-", "1", "2"), service.previousAttempts);
    assertEquals(1, budget.firstAttempts.get());
    assertEquals(2, budget.acquires.get(), "each retry asked the budget");
  }

  @Test
  void aStreamThatDeliveredAMessageIsNeverSentAgain() {
    service.script.add(failAfter(2, Status.UNAVAILABLE));
    connect(RetryBudgetClientInterceptor.builder().policy(FAST), 0.1, 10);
    List<String> got = new ArrayList<>();
    Iterator<String> it = ClientCalls.blockingServerStreamingCall(channel, COUNT, CallOptions.DEFAULT, "5");
    StatusRuntimeException e = assertThrows(StatusRuntimeException.class, () -> it.forEachRemaining(got::add));
    assertEquals(Status.Code.UNAVAILABLE, e.getStatus().getCode());
    assertEquals(List.of("0", "1"), got, "what was streamed reached the caller, once");
    assertEquals(List.of("-"), service.previousAttempts, "one attempt");
    assertEquals(0, budget.acquires.get());
  }

  @Test
  void aRefusedRetryEndsTheStreamAtOnceWithTheLastStatus() {
    for (int i = 0; i < 3; i++) {
      service.script.add(fail(Status.UNAVAILABLE));
    }
    // a small ratio, no floor, a new budget: a balance of nothing, so the first retry is refused
    connect(RetryBudgetClientInterceptor.builder().policy(RetryPolicy.builder().maxAttempts(3)
        .backoff(Duration.ofHours(1), Duration.ofHours(1)).jitter(Jitter.NONE).build()), 0.01, 0);
    StatusRuntimeException e = assertTimeoutPreemptively(Duration.ofSeconds(20),
        () -> assertThrows(StatusRuntimeException.class, () -> blocking("5")));
    assertEquals(Status.Code.UNAVAILABLE, e.getStatus().getCode());
    assertInstanceOf(RetryBudgetExhaustedException.class, e.getStatus().getCause());
    assertEquals(List.of("-"), service.previousAttempts, "no sleep of an hour, no second attempt");
  }

  @Test
  void messagesFlowOnlyAsTheCallerRequestsThem() throws Exception {
    service.script.add(fail(Status.UNAVAILABLE));
    connect(RetryBudgetClientInterceptor.builder().policy(FAST), 0.1, 10);
    LinkedBlockingQueue<String> messages = new LinkedBlockingQueue<>();
    CompletableFuture<Status> closed = new CompletableFuture<>();
    ClientCall<String, String> call = channel.newCall(COUNT, CallOptions.DEFAULT);
    call.start(new ClientCall.Listener<>() {
      @Override
      public void onMessage(String message) {
        messages.add(message);
      }

      @Override
      public void onClose(Status status, Metadata trailers) {
        closed.complete(status);
      }
    }, new Metadata());
    call.sendMessage("4");
    call.halfClose(); // nothing requested yet: the retried attempt commits, and its first message waits
    assertEquals(null, messages.poll(300, TimeUnit.MILLISECONDS), "no message before it is requested");
    call.request(1);
    assertEquals("0", messages.poll(10, TimeUnit.SECONDS));
    assertEquals(null, messages.poll(300, TimeUnit.MILLISECONDS), "one requested, one delivered");
    call.request(10);
    for (String expected : List.of("1", "2", "3")) {
      assertEquals(expected, messages.poll(10, TimeUnit.SECONDS));
    }
    assertEquals(Status.Code.OK, closed.get(10, TimeUnit.SECONDS).getCode());
    assertEquals(List.of("-", "1"), service.previousAttempts);
  }

  @Test
  void cancellingWhileItWaitsToRetryEndsItCancelledAndSendsNothingMore() throws Exception {
    service.script.add(fail(Status.UNAVAILABLE));
    connect(RetryBudgetClientInterceptor.builder().policy(RetryPolicy.builder().maxAttempts(3)
        .backoff(Duration.ofHours(1), Duration.ofHours(1)).jitter(Jitter.NONE).build()), 1.0, 100);
    CompletableFuture<Status> closed = new CompletableFuture<>();
    List<String> messages = new CopyOnWriteArrayList<>();
    ClientCall<String, String> call = channel.newCall(COUNT, CallOptions.DEFAULT);
    call.start(new ClientCall.Listener<>() {
      @Override
      public void onMessage(String message) {
        messages.add(message);
      }

      @Override
      public void onClose(Status status, Metadata trailers) {
        closed.complete(status);
      }
    }, new Metadata());
    call.request(5);
    call.sendMessage("3");
    call.halfClose();
    io.retrybudget.testing.Eventually.await("the first attempt failed", Duration.ofSeconds(10), () -> service.requests() == 1);
    call.cancel("the caller gave up", null);
    assertEquals(Status.Code.CANCELLED, closed.get(10, TimeUnit.SECONDS).getCode());
    assertEquals(List.of(), messages);
    assertEquals(1, service.requests(), "the retry planned an hour later was never sent");
  }

  @Test
  void hedgingConfiguredForUnaryCallsLeavesStreamsUnhedged() {
    service.script.add(EchoService.HANG);
    connect(RetryBudgetClientInterceptor.builder().policy(RetryPolicy.builder().maxAttempts(3)
        .attemptTimeout(Duration.ofSeconds(2)).backoff(Duration.ofMillis(1), Duration.ofMillis(5)).build())
        .hedging(HedgePolicy.fixedDelay(Duration.ofMillis(20)).build()), 1.0, 100);
    // the first attempt hangs: no hedge after 20 ms; its attempt timeout (2 s) ends it, then a retry streams
    assertEquals(List.of("0", "1"), blocking("2"));
    assertEquals(List.of("-", "1"), service.previousAttempts);
    assertTrue(budget.acquires.get() == 1, "one retry, no hedge: " + budget.acquires.get());
  }

  /** A listener that records messages and fails the test on a second close. */
  private static final class Recorder extends ClientCall.Listener<String> {
    final LinkedBlockingQueue<String> messages = new LinkedBlockingQueue<>();
    final CompletableFuture<Status> closed = new CompletableFuture<>();

    @Override
    public void onMessage(String message) {
      messages.add(message);
    }

    @Override
    public void onClose(Status status, Metadata trailers) {
      if (!closed.complete(status)) {
        throw new AssertionError("closed twice: " + status);
      }
    }
  }

  private ClientCall<String, String> started(Recorder r, CallOptions options, String n) {
    ClientCall<String, String> call = channel.newCall(COUNT, options);
    call.start(r, new Metadata());
    call.sendMessage(n);
    call.halfClose();
    return call;
  }

  @Test
  void aCancelAfterTheFirstMessageCameButBeforeAnyRequestStillCloses() throws Exception {
    java.util.concurrent.CountDownLatch sent = new java.util.concurrent.CountDownLatch(1);
    service.script.add((req, out) -> {
      out.onNext("0"); // then the stream stays open
      sent.countDown();
    });
    connect(RetryBudgetClientInterceptor.builder().policy(FAST), 0.1, 10);
    Recorder r = new Recorder();
    ClientCall<String, String> call = started(r, CallOptions.DEFAULT, "4"); // nothing requested
    assertTrue(sent.await(10, TimeUnit.SECONDS));
    call.cancel("the caller gave up", null);
    assertEquals(Status.Code.CANCELLED, r.closed.get(10, TimeUnit.SECONDS).getCode(), "a cancelled call is closed");
    assertEquals(List.of(), List.copyOf(r.messages), "the unrequested message is dropped");
  }

  @Test
  void theDeadlineEndsACallWhoseFirstMessageWaitsForARequest() throws Exception {
    service.script.add((req, out) -> out.onNext("0")); // then the stream stays open
    connect(RetryBudgetClientInterceptor.builder().policy(FAST), 0.1, 10);
    Recorder r = new Recorder();
    started(r, CallOptions.DEFAULT.withDeadlineAfter(500, TimeUnit.MILLISECONDS), "4");
    assertEquals(Status.Code.DEADLINE_EXCEEDED, r.closed.get(10, TimeUnit.SECONDS).getCode());
  }

  @Test
  void requestsAddUpWithoutOverflowing() throws Exception {
    service.script.add(fail(Status.UNAVAILABLE)); // retried: the requests wait for the commit
    connect(RetryBudgetClientInterceptor.builder().policy(FAST), 0.1, 10);
    Recorder r = new Recorder();
    ClientCall<String, String> call = channel.newCall(COUNT, CallOptions.DEFAULT.withDeadlineAfter(10, TimeUnit.SECONDS));
    call.start(r, new Metadata());
    call.request(Integer.MAX_VALUE);
    call.request(Integer.MAX_VALUE);
    call.sendMessage("3");
    call.halfClose();
    assertEquals(Status.Code.OK, r.closed.get(15, TimeUnit.SECONDS).getCode());
    assertEquals(List.of("0", "1", "2"), List.copyOf(r.messages));
  }

  @Test
  void aListenerThatThrowsOnTheFirstMessageCancelsTheCallAndIsClosed() throws Exception {
    service.script.add((req, out) -> out.onNext("0")); // then the stream stays open
    connect(RetryBudgetClientInterceptor.builder().policy(FAST), 0.1, 10);
    CompletableFuture<Throwable> ended = new CompletableFuture<>();
    ClientCalls.asyncServerStreamingCall(channel.newCall(COUNT, CallOptions.DEFAULT), "3",
        new io.grpc.stub.StreamObserver<String>() {
          @Override
          public void onNext(String value) {
            throw new IllegalStateException("a bug in the caller");
          }

          @Override
          public void onError(Throwable t) {
            ended.complete(t);
          }

          @Override
          public void onCompleted() {
            ended.complete(null);
          }
        });
    assertEquals(Status.Code.CANCELLED, Status.fromThrowable(ended.get(10, TimeUnit.SECONDS)).getCode());
    io.retrybudget.testing.Eventually.await("the server's stream cancelled", Duration.ofSeconds(10),
        () -> service.requests() == 1);
  }
}
