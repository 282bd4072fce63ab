package io.retrybudget.observation;

import static io.retrybudget.observation.ObservationRetryListener.RESEND_COUNT;
import static io.retrybudget.observation.ObservationRetryListener.RETRY_REASON;
import static io.retrybudget.observation.ObservationRetryListener.SUPPRESSED_EVENT;
import static io.retrybudget.observation.ObservationRetryListener.SUPPRESSED_REASON;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.sdk.trace.data.EventData;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.LocalRetryBudget;
import io.retrybudget.observation.ScriptedServer.Answer;
import io.retrybudget.retry.RetryBudgetExhaustedException;
import io.retrybudget.retry.RetryPolicy;
import io.retrybudget.retry.http.RetryingHttpClient;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Real HTTP calls through {@link RetryingHttpClient} (the SDK's executor) to a JDK HttpServer, their
 * observations turned into OpenTelemetry spans by Micrometer Tracing's OTel bridge and read back
 * from OTel's in-memory exporter. Nothing waits on real time but the loopback round trips: the
 * backoff sleeps are skipped and the random draw is fixed.
 */
class OtelSpansOverHttpTest {
  private static final AttributeKey<String> RESEND = AttributeKey.stringKey(RESEND_COUNT);
  private static final AttributeKey<String> REASON = AttributeKey.stringKey(RETRY_REASON);
  private static final AttributeKey<String> SUPPRESSED = AttributeKey.stringKey(SUPPRESSED_REASON);
  private static final AttributeKey<String> OUTCOME = AttributeKey.stringKey(ObservationRetryListener.OUTCOME);

  private final OtelTracing otel = new OtelTracing();
  private final HttpClient http = HttpClient.newHttpClient();
  private ScriptedServer server;

  @AfterEach
  void stop() {
    server.close();
    otel.close();
  }

  private RetryingHttpClient.Builder client(RetryPolicy policy, double random) {
    return RetryingHttpClient.builder(http).policy(policy)
        .listener(ObservationRetryListener.builder(otel.registry, "items-api").build())
        .executor(x -> x.sleeper(nanos -> { }).random(() -> random));
  }

  private HttpRequest get() {
    return HttpRequest.newBuilder(server.uri()).GET().build();
  }

  private SpanData onlyCall() throws InterruptedException {
    return otel.awaitCall();
  }

  private static List<String> eventNames(SpanData span) {
    return span.getEvents().stream().map(EventData::getName).toList();
  }

  /** Two 503s then a 200: one call span, three attempt spans under it with resend counts absent, 1, 2. */
  private void assertThreeAttempts(SpanData call) {
    assertEquals(List.of("1", "2", "3"), server.attemptHeaders);
    List<SpanData> attempts = otel.named(ObservationRetryListener.ATTEMPT);
    assertEquals(3, attempts.size(), "three attempt spans: " + otel.spans());
    for (SpanData a : attempts) {
      assertEquals(call.getSpanId(), a.getParentSpanId(), "every attempt is a child of the call");
      assertEquals(call.getTraceId(), a.getTraceId());
    }
    assertNull(attempts.get(0).getAttributes().get(RESEND), "no resend count on the first send");
    assertEquals("1", attempts.get(1).getAttributes().get(RESEND));
    assertEquals("2", attempts.get(2).getAttributes().get(RESEND));
    assertNull(attempts.get(0).getAttributes().get(REASON));
    assertEquals("503", attempts.get(1).getAttributes().get(REASON), "retried because the first answer was a 503");
    assertEquals("503", attempts.get(2).getAttributes().get(REASON));
    assertEquals("success_with_retry", call.getAttributes().get(OUTCOME));
    assertEquals("none", call.getAttributes().get(SUPPRESSED));
    assertEquals(List.of(), eventNames(call), "nothing was suppressed");
  }

  @Test
  void failingTwiceThenSucceedingMakesOneCallSpanWithThreeAttemptSpans() throws Exception {
    server = new ScriptedServer(Answer.of(503), Answer.of(503), Answer.of(200));
    HttpResponse<String> r = client(RetryPolicy.builder().maxAttempts(3).build(), 0.5).build()
        .send(get(), HttpResponse.BodyHandlers.ofString());
    assertEquals(200, r.statusCode());
    assertThreeAttempts(onlyCall());
  }

  @Test
  void theAsynchronousPathMakesTheSameSpans() throws Exception {
    server = new ScriptedServer(Answer.of(503), Answer.of(503), Answer.of(200));
    HttpResponse<String> r = client(RetryPolicy.builder().maxAttempts(3).build(), 0.5).build()
        .sendAsync(get(), HttpResponse.BodyHandlers.ofString()).get();
    assertEquals(200, r.statusCode());
    assertThreeAttempts(onlyCall());
  }

  @Test
  void aBudgetDenialIsASuppressedRetryForReasonBudget() throws Exception {
    server = new ScriptedServer(Answer.of(503));
    // ratio 0.1 of one first attempt, no floor: not one whole permit
    LocalRetryBudget empty = new LocalRetryBudget(
        BudgetConfig.builder("items-api").ratio(0.1).minRetriesPerSecond(0).build(), () -> 0L);
    RetryingHttpClient client = client(RetryPolicy.builder().maxAttempts(3).build(), 0.5).budget(empty).build();
    ExecutionException e = assertThrows(ExecutionException.class,
        () -> client.sendAsync(get(), HttpResponse.BodyHandlers.ofString()).get());
    assertTrue(e.getCause() instanceof RetryBudgetExhaustedException, "denied: " + e.getCause());
    SpanData call = onlyCall();
    assertEquals(List.of(SUPPRESSED_EVENT), eventNames(call));
    assertEquals("budget", call.getAttributes().get(SUPPRESSED));
    assertEquals("exhausted", call.getAttributes().get(AttributeKey.stringKey(ObservationRetryListener.BUDGET_DECISION)));
    assertEquals("budget_exhausted", call.getAttributes().get(OUTCOME));
    assertEquals(1, otel.named(ObservationRetryListener.ATTEMPT).size(), "the retry was never sent");
  }

  @Test
  void aServerThatSaysDoNotRetryIsASuppressedRetryForReasonPushback() throws Exception {
    server = new ScriptedServer(new Answer(503, Map.of("X-Retry-Pushback-Ms", "-1")));
    HttpResponse<String> r = client(RetryPolicy.builder().maxAttempts(3).build(), 0.5).build()
        .send(get(), HttpResponse.BodyHandlers.ofString());
    assertEquals(503, r.statusCode(), "the server's answer, as it gave it");
    SpanData call = onlyCall();
    assertEquals(List.of(SUPPRESSED_EVENT), eventNames(call));
    assertEquals("pushback", call.getAttributes().get(SUPPRESSED));
    assertEquals("failed_server_pushback", call.getAttributes().get(OUTCOME));
  }

  @Test
  void aRetryAfterBeyondTheDeadlineIsASuppressedRetryForReasonPushback() throws Exception {
    server = new ScriptedServer(new Answer(503, Map.of("Retry-After", "30")));
    client(RetryPolicy.builder().maxAttempts(3).deadline(Duration.ofSeconds(10)).build(), 0.5).build()
        .send(get(), HttpResponse.BodyHandlers.ofString());
    assertEquals("pushback", onlyCall().getAttributes().get(SUPPRESSED));
  }

  @Test
  void aBackoffTheDeadlineCannotHoldIsASuppressedRetryForReasonDeadline() throws Exception {
    server = new ScriptedServer(Answer.of(503));
    // full jitter at 0.99 of a 20 s base: a 19.8 s wait, beyond the 10 s deadline
    RetryPolicy policy = RetryPolicy.builder().maxAttempts(3).deadline(Duration.ofSeconds(10))
        .backoff(Duration.ofSeconds(20), Duration.ofSeconds(20)).build();
    HttpResponse<String> r = client(policy, 0.99).build().send(get(), HttpResponse.BodyHandlers.ofString());
    assertEquals(503, r.statusCode());
    SpanData call = onlyCall();
    assertEquals(List.of(SUPPRESSED_EVENT), eventNames(call));
    assertEquals("deadline", call.getAttributes().get(SUPPRESSED));
    assertEquals("failed_deadline", call.getAttributes().get(OUTCOME));
    assertEquals(1, otel.named(ObservationRetryListener.ATTEMPT).size());
  }

  @Test
  void runningOutOfAttemptsIsASuppressedRetryForReasonAttempts() throws Exception {
    server = new ScriptedServer(Answer.of(503));
    client(RetryPolicy.builder().maxAttempts(2).build(), 0.5).build().send(get(), HttpResponse.BodyHandlers.ofString());
    SpanData call = onlyCall();
    assertEquals("attempts", call.getAttributes().get(SUPPRESSED));
    assertEquals(List.of(SUPPRESSED_EVENT), eventNames(call));
    assertEquals(2, otel.named(ObservationRetryListener.ATTEMPT).size());
  }
}
