package io.retrybudget.retry.http;

import io.retrybudget.retry.RetryPolicy;
import java.time.Clock;
import java.util.Objects;
import java.util.function.ToIntFunction;
import java.util.function.UnaryOperator;

/**
 * HTTP's retry rules for a response type of any client ({@code java.net.http}, OkHttp, Vert.x
 * WebClient ...): one place that turns a caller's {@link RetryPolicy} into the policy an HTTP call
 * runs with, and says when a request carries an {@code Idempotency-Key}. The integrations build
 * one per client type and share it; the rules themselves are {@link HttpRetryRules}.
 *
 * <pre>{@code
 * HttpClientRules<Response> rules = HttpClientRules.of(Response.class, Response::code, r -> r::header, clock);
 * RetryPolicy forGet = rules.apply(policy, true);
 * }</pre>
 *
 * @param <R> the client's response type
 */
public final class HttpClientRules<R> {
  private final Class<R> type;
  private final ToIntFunction<R> status;
  private final java.util.function.Function<R, UnaryOperator<String>> headers;
  private final Clock clock;

  private HttpClientRules(Class<R> type, ToIntFunction<R> status,
      java.util.function.Function<R, UnaryOperator<String>> headers, Clock clock) {
    this.type = Objects.requireNonNull(type, "type must not be null");
    this.status = Objects.requireNonNull(status, "status must not be null");
    this.headers = Objects.requireNonNull(headers, "headers must not be null");
    this.clock = Objects.requireNonNull(clock, "clock must not be null");
  }

  /**
   * @param type    the response class (results of another class are never retried)
   * @param status  a response's status code
   * @param headers a response's header lookup: name to first value, null when absent
   * @param clock   the wall clock that Retry-After dates are read against
   */
  @SuppressWarnings({"unchecked", "rawtypes"})
  public static <R> HttpClientRules<R> of(Class<? super R> type, ToIntFunction<R> status,
      java.util.function.Function<R, UnaryOperator<String>> headers, Clock clock) {
    return new HttpClientRules<>((Class) type, status, headers, clock);
  }

  /**
   * The caller's policy (attempts, backoff, deadline, attempt timeout, which failures are retried)
   * with HTTP's result rules: 5xx and 429 are retried, other statuses never; the delay a response
   * asks for (X-Retry-Pushback-Ms, else Retry-After) is obeyed; {@code idempotent} from the method.
   */
  public RetryPolicy apply(RetryPolicy policy, boolean idempotent) {
    return policy.toBuilder()
        .<Object>retryOnResult(r -> type.isInstance(r) && HttpRetryRules.isRetryableStatus(status.applyAsInt(type.cast(r))))
        .serverDelay((result, failure) -> type.isInstance(result)
            ? HttpRetryRules.serverDelay(headers.apply(type.cast(result)), clock) : null)
        .idempotent(idempotent)
        .build();
  }

  /**
   * Whether the attempts of a request carry an {@code Idempotency-Key}: only a non-idempotent
   * method (POST, PATCH) that may be retried, with the request's own key or, when {@code makeKeys},
   * one made for the call.
   */
  public static boolean sendsIdempotencyKey(String method, String ownKey, boolean makeKeys, RetryPolicy policy) {
    return !HttpRetryRules.isIdempotentMethod(method) && (ownKey != null || makeKeys) && policy.maxAttempts() > 1;
  }
}
