package io.retrybudget.observation;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.sdk.trace.data.EventData;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.retry.AttemptTimeoutException;
import io.retrybudget.retry.HedgePolicy;
import io.retrybudget.retry.RetryExecutor;
import io.retrybudget.retry.RetryListener;
import io.retrybudget.retry.RetryOutcome;
import io.retrybudget.retry.RetryPolicy;
import java.net.ConnectException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The listener's observations, read back as OpenTelemetry spans, for what the HTTP test does not reach. */
class ObservationRetryListenerTest {
  private final OtelTracing otel = new OtelTracing();
  private final ObservationRetryListener listener = ObservationRetryListener.builder(otel.registry, "backend").build();

  @AfterEach
  void stop() {
    otel.close();
  }

  private RetryExecutor.Builder executor(int maxAttempts) {
    return RetryExecutor.builder(RetryPolicy.builder().maxAttempts(maxAttempts).build())
        .listener(listener).sleeper(n -> { }).random(() -> 0.5);
  }

  private static String attr(SpanData span, String key) {
    return span.getAttributes().get(AttributeKey.stringKey(key));
  }

  @Test
  void eachAttemptIsCurrentWhileItRunsAndTheCallIsAChildOfTheCallersObservation() throws Exception {
    List<Observation> seen = new ArrayList<>();
    AtomicInteger n = new AtomicInteger();
    Observation parent = Observation.start("caller", otel.registry);
    try (Observation.Scope s = parent.openScope()) {
      executor(3).build().call(() -> {
        seen.add(otel.registry.getCurrentObservation());
        if (n.getAndIncrement() == 0) {
          throw new ConnectException("refused");
        }
        return "ok";
      });
    }
    parent.stop();
    assertNull(otel.registry.getCurrentObservation(), "every scope was closed");
    SpanData caller = otel.named("caller").get(0);
    SpanData call = otel.awaitCall();
    assertEquals(caller.getSpanId(), call.getParentSpanId());
    List<SpanData> attempts = otel.named(ObservationRetryListener.ATTEMPT);
    assertEquals(2, attempts.size());
    for (int i = 0; i < 2; i++) {
      assertEquals(ObservationRetryListener.ATTEMPT, seen.get(i).getContext().getName());
    }
    assertEquals("java.net.ConnectException", attr(attempts.get(1), ObservationRetryListener.RETRY_REASON));
    assertEquals(StatusCode.ERROR, attempts.get(0).getStatus().getStatusCode(), "the failed attempt carries its error");
    assertEquals("retry", attr(attempts.get(1), ObservationRetryListener.KIND));
  }

  @Test
  void aTimeoutIsNamedTimeoutAndAFailedCallCarriesItsLastFailure() throws Exception {
    assertThrows(AttemptTimeoutException.class, () -> executor(2).build().call(() -> {
      throw new AttemptTimeoutException(Duration.ofMillis(5));
    }));
    SpanData call = otel.awaitCall();
    assertEquals("timeout", attr(otel.named(ObservationRetryListener.ATTEMPT).get(1), ObservationRetryListener.RETRY_REASON));
    assertEquals(StatusCode.ERROR, call.getStatus().getStatusCode());
    assertEquals("attempts", attr(call, ObservationRetryListener.SUPPRESSED_REASON));
  }

  @Test
  void whatThePolicyNeverRetriesIsSuppressedAsNotRetryable() throws Exception {
    assertThrows(IllegalStateException.class, () -> executor(3).build().call(() -> {
      throw new IllegalStateException("a bug, not a blip");
    }));
    SpanData call = otel.awaitCall();
    assertEquals("not_retryable", attr(call, ObservationRetryListener.SUPPRESSED_REASON));
    assertEquals("failed_not_retryable", attr(call, ObservationRetryListener.OUTCOME));
  }

  @Test
  void aCallGivenNoTimeHasNoAttemptAndSuppressesNothing() throws Exception {
    assertThrows(AttemptTimeoutException.class, () -> executor(3).build().call(null, Duration.ZERO, c -> "never"));
    SpanData call = otel.awaitCall();
    assertEquals("none", attr(call, ObservationRetryListener.SUPPRESSED_REASON));
    assertEquals("0", attr(call, ObservationRetryListener.ATTEMPTS));
    assertEquals(List.of(), call.getEvents());
  }

  @Test
  void aHedgeIsAResendForReasonHedgeAndTheLoserEndsWithTheCall() throws Exception {
    CompletableFuture<String> slow = new CompletableFuture<>();
    AtomicInteger n = new AtomicInteger();
    RetryExecutor x = executor(3).hedging(HedgePolicy.fixedDelay(Duration.ofMillis(1)).build()).build();
    CompletableFuture<String> call = x.callAsync(() -> n.getAndIncrement() == 0 ? slow : CompletableFuture.completedFuture("hedge"));
    assertEquals("hedge", call.get());
    SpanData span = otel.awaitCall();
    List<SpanData> attempts = otel.named(ObservationRetryListener.ATTEMPT);
    assertEquals(2, attempts.size(), "the first and its hedge: " + attempts);
    SpanData first = attempts.stream().filter(a -> "first".equals(attr(a, ObservationRetryListener.KIND))).findFirst().get();
    SpanData hedge = attempts.stream().filter(a -> "hedge".equals(attr(a, ObservationRetryListener.KIND))).findFirst().get();
    assertEquals("1", attr(hedge, ObservationRetryListener.RESEND_COUNT));
    assertEquals("hedge", attr(hedge, ObservationRetryListener.RETRY_REASON));
    assertEquals("true", attr(first, ObservationRetryListener.ABANDONED), "the loser ended with the call");
    assertEquals("success_with_retry", attr(span, ObservationRetryListener.OUTCOME));
    x.close();
  }

  @Test
  void aHedgeTheBudgetRefusesIsAnEventOnTheCall() throws Exception {
    CompletableFuture<String> slow = new CompletableFuture<>();
    RetryBudget refusing = new RetryBudget() {
      public String name() { return "backend"; }
      public void recordFirstAttempt() { }
      public BudgetDecision acquireBlocking() { return BudgetDecision.DENIED_EXHAUSTED; }
      public CompletionStage<BudgetDecision> acquire() { return CompletableFuture.completedFuture(BudgetDecision.DENIED_EXHAUSTED); }
      public void close() { }
    };
    CountDown denied = new CountDown();
    RetryExecutor x = executor(3).budget(refusing).listener(denied)
        .hedging(HedgePolicy.fixedDelay(Duration.ofMillis(1)).build()).build();
    CompletableFuture<String> call = x.callAsync(() -> slow);
    denied.await();
    slow.complete("first");
    assertEquals("first", call.get());
    SpanData span = otel.awaitCall();
    assertEquals(List.of(ObservationRetryListener.HEDGE_SUPPRESSED_EVENT),
        span.getEvents().stream().map(EventData::getName).toList());
    assertEquals("none", attr(span, ObservationRetryListener.SUPPRESSED_REASON), "the call itself suppressed no retry");
    x.close();
  }

  @Test
  void theNoopRegistryKeepsNothingPerCall() throws Exception {
    ObservationRetryListener noop = ObservationRetryListener.builder(ObservationRegistry.NOOP, "backend").build();
    assertSame(noop, noop.onCallStart(), "no listener made per call: the executor allocates nothing for it");
    ObservationRegistry declining = ObservationRegistry.create();
    declining.observationConfig().observationHandler(c -> true).observationPredicate((name, c) -> false);
    ObservationRetryListener unobserved = ObservationRetryListener.builder(declining, "backend").build();
    assertSame(unobserved, unobserved.onCallStart());
  }

  @Test
  void theBuilderNamesWhatIsWrong() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> ObservationRetryListener.builder(otel.registry, " "));
    assertTrue(e.getMessage().contains("name"), e.getMessage());
    assertThrows(NullPointerException.class, () -> ObservationRetryListener.builder(otel.registry, "b").reasons(null));
  }

  @Test
  void everyOutcomeHasATagAndTheSuppressingOnesAReason() {
    for (RetryOutcome o : RetryOutcome.values()) {
      assertTrue(!ObservationRetryListener.outcomeTag(o, 1).isEmpty());
    }
    assertEquals(SuppressedReason.PUSHBACK, SuppressedReason.of(RetryOutcome.SERVER_DELAY_TOO_LONG));
    assertEquals(SuppressedReason.PUSHBACK, SuppressedReason.of(RetryOutcome.SERVER_SAYS_NO));
    assertNull(SuppressedReason.of(RetryOutcome.CANCELLED));
  }

  /** Opens when the budget has refused a hedge. */
  private static final class CountDown implements RetryListener {
    private final java.util.concurrent.CountDownLatch latch = new java.util.concurrent.CountDownLatch(1);

    @Override
    public void onHedgeDenied(BudgetDecision decision) {
      latch.countDown();
    }

    void await() throws InterruptedException {
      assertTrue(latch.await(10, java.util.concurrent.TimeUnit.SECONDS), "the hedge was asked for within 10 s of a 1 ms delay");
    }
  }
}
