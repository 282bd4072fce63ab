package io.retrybudget.spring;

import io.retrybudget.budget.RetryBudget;
import io.retrybudget.retry.AttemptFunction;
import io.retrybudget.retry.RetryBudgetExhaustedException;
import io.retrybudget.retry.RetryExecutor;
import io.retrybudget.retry.RetryListener;
import io.retrybudget.retry.RetryPolicy;
import io.retrybudget.retry.http.HttpRetryRules;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Clock;
import java.time.Duration;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpRequest;
import org.springframework.http.client.ClientHttpRequestExecution;
import org.springframework.http.client.ClientHttpRequestInterceptor;
import org.springframework.http.client.ClientHttpResponse;

/**
 * Retries for {@code RestClient} and {@code RestTemplate} with the rules of the SDK's
 * {@code RetryingHttpClient}, paid for by a fleet budget:
 *
 * <ul>
 *   <li>retries I/O errors, 5xx (503 included) and 429; never other 4xx;
 *   <li>obeys {@code X-Retry-Pushback-Ms} (negative: do not retry) and {@code Retry-After}
 *       (delta-seconds or HTTP-date): waits at least that long, and ends the call at once with the
 *       server's answer when that is beyond the backoff cap or the deadline;
 *   <li>sends {@code X-Retry-Attempt: n} on every attempt ({@code X-Request-Deadline-Ms} too when
 *       the policy has a deadline or an attempt timeout), and on POST / PATCH an
 *       {@code Idempotency-Key} (the request's own, or one made for the call) that is the same on
 *       every attempt; with {@code idempotency-keys: false} POST / PATCH are retried only with the
 *       caller's own key;
 *   <li>asks the budget before every retry; refused: {@link RetryBudgetExhaustedException} at once,
 *       its {@code lastResult()} the last response (body closed) or its cause the last I/O error.
 * </ul>
 *
 * <p>When attempts run out the last response is returned (or the last I/O error thrown). A
 * response that is retried is closed before the next attempt, which gives its connection back.
 * Attempts run on the caller's thread: the backoff sleeps there.
 *
 * <pre>{@code
 * RestClient payments = RestClient.builder()
 *     .baseUrl("https://payments.internal")
 *     .requestInterceptor(interceptors.forClient("payments"))
 *     .build();
 * }</pre>
 */
public final class RetryBudgetInterceptor implements ClientHttpRequestInterceptor, AutoCloseable {
  private final RetryExecutor idempotent;
  private final RetryExecutor nonIdempotent;
  private final boolean makeKeys;

  RetryBudgetInterceptor(RetryPolicy policy, RetryBudget budget, RetryListener listener,
      RetryExecutor.Sleeper sleeper, boolean makeKeys, Clock clock) {
    RetryPolicy http = policy.toBuilder()
        .retryOnResult((ClientHttpResponse r) -> HttpRetryRules.isRetryableStatus(status(r)))
        .serverDelay((result, failure) -> result instanceof ClientHttpResponse r ? serverDelay(r.getHeaders(), clock) : null)
        .build();
    this.idempotent = executor(http.toBuilder().idempotent(true).build(), budget, listener, sleeper);
    this.nonIdempotent = executor(http.toBuilder().idempotent(false).build(), budget, listener, sleeper);
    this.makeKeys = makeKeys;
  }

  private static RetryExecutor executor(RetryPolicy policy, RetryBudget budget, RetryListener listener,
      RetryExecutor.Sleeper sleeper) {
    RetryExecutor.Builder b = RetryExecutor.builder(policy).budget(budget).listener(listener);
    if (sleeper != null) {
      b.sleeper(sleeper);
    }
    return b.build();
  }

  @Override
  public ClientHttpResponse intercept(HttpRequest request, byte[] body, ClientHttpRequestExecution execution)
      throws IOException {
    boolean idempotentMethod = HttpRetryRules.isIdempotentMethod(request.getMethod().name());
    String callerKey = request.getHeaders().getFirst(HttpRetryRules.IDEMPOTENCY_KEY_HEADER);
    boolean sendKey = !idempotentMethod && (callerKey != null || makeKeys);
    ClientHttpResponse[] sent = new ClientHttpResponse[1];
    AttemptFunction<ClientHttpResponse> attempt = ctx -> {
      closeQuietly(sent[0]); // the previous answer is being retried: not the call's answer
      sent[0] = null;
      // the chain's request headers are the ones sent, mutable as Spring's own interceptors use them
      HttpHeaders headers = request.getHeaders();
      headers.set(HttpRetryRules.RETRY_ATTEMPT_HEADER, Integer.toString(ctx.attempt()));
      String deadline = HttpRetryRules.deadlineHeaderValue(ctx);
      if (deadline != null) {
        headers.set(HttpRetryRules.DEADLINE_HEADER, deadline);
      }
      if (sendKey) {
        headers.set(HttpRetryRules.IDEMPOTENCY_KEY_HEADER, ctx.idempotencyKey());
      }
      sent[0] = execution.execute(request, body);
      return sent[0];
    };
    try {
      return (idempotentMethod ? idempotent : nonIdempotent).call(callerKey, attempt);
    } catch (RetryBudgetExhaustedException e) {
      closeQuietly(sent[0]);
      throw e;
    } catch (IOException | RuntimeException e) {
      throw e;
    } catch (Exception e) {
      throw new IOException(e);
    }
  }

  private static int status(ClientHttpResponse response) {
    try {
      return response.getStatusCode().value();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** As the SDK's HttpRetryRules.serverDelay, over Spring's headers. */
  static Duration serverDelay(HttpHeaders headers, Clock clock) {
    String pushback = headers.getFirst(HttpRetryRules.PUSHBACK_HEADER);
    if (pushback != null) {
      try {
        long ms = Long.parseLong(pushback.trim());
        return ms < 0 ? Duration.ofMillis(-1) : Duration.ofMillis(ms);
      } catch (NumberFormatException e) {
        // unreadable: fall through to Retry-After
      }
    }
    String retryAfter = headers.getFirst(HttpHeaders.RETRY_AFTER);
    return retryAfter == null ? null : HttpRetryRules.parseRetryAfter(retryAfter, clock);
  }

  private static void closeQuietly(ClientHttpResponse response) {
    if (response != null) {
      response.close();
    }
  }

  @Override
  public void close() {
    idempotent.close();
    nonIdempotent.close();
  }
}
