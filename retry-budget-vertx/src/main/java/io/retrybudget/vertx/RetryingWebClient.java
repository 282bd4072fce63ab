package io.retrybudget.vertx;

import io.retrybudget.budget.RetryBudget;
import io.retrybudget.retry.AttemptContext;
import io.retrybudget.retry.RetryListener;
import io.retrybudget.retry.RetryPolicy;
import io.retrybudget.retry.http.HttpClientRules;
import io.retrybudget.retry.http.HttpRetryRules;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.ext.web.client.HttpRequest;
import io.vertx.ext.web.client.HttpResponse;
import io.vertx.ext.web.client.WebClient;
import io.vertx.core.http.HttpClientRequest;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.List;
import java.util.Objects;

/**
 * Vert.x {@code WebClient} requests with retries and the fleet budget, by HTTP's rules (the same
 * as {@code RetryingHttpClient}, through {@link HttpClientRules}): network errors, timeouts, 5xx,
 * 429 and 503 are retried, other 4xx never; {@code X-Retry-Pushback-Ms} and {@code Retry-After}
 * (both forms) are obeyed; every attempt carries {@code X-Retry-Attempt} (and {@code
 * X-Request-Deadline-Ms} when the policy bounds it: deadline or attempt timeout); POST and PATCH carry an
 * {@code Idempotency-Key} (the request's own or one made for the call), the same on every attempt.
 * Each attempt sends a {@link HttpRequest#copy() copy} of the request, with the same {@link Buffer}
 * body (replayable), so the caller's request is never changed. Responses are buffered by the
 * WebClient, so a retried response holds no connection. When retries run out the last response is
 * returned. Never blocks: see {@link VertxRetry}.
 *
 * <p>Stopping an attempt in flight: give the helper the {@link WebClient} the requests come from
 * ({@link Builder#webClient}); it adds an interceptor to that client that learns each attempt's
 * {@code HttpClientRequest}, and resets it when the call no longer wants the attempt (the call's
 * {@code cancellation} completed, the attempt ran past its attempt timeout, the call ended). Without
 * it, a cancelled call's attempt in flight runs on to its own timeout and its answer is dropped.
 *
 * <pre>{@code
 * RetryingWebClient http = RetryingWebClient.builder(vertx).policy(policy).budget(payments).build();
 * Future<HttpResponse<Buffer>> r = http.send(client.post(8080, "payments", "/charges"), Buffer.buffer(json));
 * }</pre>
 */
public final class RetryingWebClient implements AutoCloseable {
  private final VertxRetry idempotent;
  private final VertxRetry nonIdempotent;
  private final boolean makeKeys;
  /** Attempts in flight whose HttpClientRequest the interceptor hands over, by request object; null: no interceptor. */
  private final Map<HttpRequest<?>, Abandon> inFlight;

  private RetryingWebClient(Builder b) {
    this.makeKeys = b.makeKeys;
    if (b.webClient != null) {
      Map<HttpRequest<?>, Abandon> attempts = Collections.synchronizedMap(new IdentityHashMap<>());
      b.webClient.addInterceptor(ctx -> {
        // the phase's type (ClientPhase) is in a package Vert.x's module does not export: compared by
        // name, this works on the module path too, where naming the constant would not link
        if (((Enum<?>) ctx.phase()).name().equals("SEND_REQUEST")) {
          Abandon a = attempts.get(ctx.request());
          if (a != null) {
            a.sending(ctx.clientRequest());
          }
        }
        ctx.next();
      });
      this.inFlight = attempts;
    } else {
      this.inFlight = null;
    }
    HttpClientRules<HttpResponse<?>> rules = HttpClientRules.of(HttpResponse.class, HttpResponse::statusCode,
        r -> r::getHeader, b.clock);
    this.idempotent = retry(b, rules.apply(b.policy, true));
    this.nonIdempotent = retry(b, rules.apply(b.policy, false));
  }

  private static VertxRetry retry(Builder b, RetryPolicy policy) {
    VertxRetry.Builder r = VertxRetry.builder(b.vertx, policy);
    b.listeners.forEach(r::listener);
    if (b.budget != null) {
      r.budget(b.budget);
    }
    return r.build();
  }

  public static Builder builder(Vertx vertx) {
    return new Builder(vertx);
  }

  /** Sends {@code request} without a body, with retries. */
  public <T> Future<HttpResponse<T>> send(HttpRequest<T> request) {
    return send(request, null, null);
  }

  /** Sends {@code request} with {@code body} (sent again, unchanged, by every attempt; null: none). */
  public <T> Future<HttpResponse<T>> send(HttpRequest<T> request, Buffer body) {
    return send(request, body, null);
  }

  /** As {@link #send(HttpRequest, Buffer)}, stopped when {@code cancellation} (may be null) completes. */
  public <T> Future<HttpResponse<T>> send(HttpRequest<T> request, Buffer body, Future<?> cancellation) {
    Objects.requireNonNull(request, "request must not be null");
    String method = request.method().name();
    String ownKey = request.headers().get(HttpRetryRules.IDEMPOTENCY_KEY_HEADER);
    VertxRetry retry = HttpRetryRules.isIdempotentMethod(method) ? idempotent : nonIdempotent;
    boolean sendKey = HttpClientRules.sendsIdempotencyKey(method, ownKey, makeKeys, retry.policy());
    long attemptTimeout = retry.policy().attemptTimeout() == null ? 0 : retry.policy().attemptTimeout().toMillis();
    return retry.executeCancellable(ownKey, (AttemptContext context, Future<Void> abandoned) -> {
      HttpRequest<T> attempt = request.copy()
          .putHeader(HttpRetryRules.RETRY_ATTEMPT_HEADER, Integer.toString(context.attempt()));
      String deadline = HttpRetryRules.deadlineHeaderValue(context);
      if (deadline != null) {
        attempt.putHeader(HttpRetryRules.DEADLINE_HEADER, deadline);
      }
      if (sendKey) {
        attempt.putHeader(HttpRetryRules.IDEMPOTENCY_KEY_HEADER, context.idempotencyKey());
      }
      if (attemptTimeout > 0) {
        attempt.timeout(Math.max(1, attemptTimeout)); // the request itself ends too, not only our wait for it
      }
      if (inFlight == null) {
        return body == null ? attempt.send() : attempt.sendBuffer(body);
      }
      Abandon handle = new Abandon();
      inFlight.put(attempt, handle);
      abandoned.onComplete(v -> handle.abandon());
      Future<HttpResponse<T>> sent = body == null ? attempt.send() : attempt.sendBuffer(body);
      return sent.onComplete(ar -> inFlight.remove(attempt));
    }, cancellation);
  }

  /** One attempt's HttpClientRequest, reset when the call abandons the attempt (before or after it is sent). */
  private static final class Abandon {
    private HttpClientRequest request;
    private boolean abandoned;

    void sending(HttpClientRequest request) {
      boolean reset;
      synchronized (this) {
        this.request = request;
        reset = abandoned;
      }
      if (reset) {
        request.reset();
      }
    }

    void abandon() {
      HttpClientRequest r;
      synchronized (this) {
        abandoned = true;
        r = request;
      }
      if (r != null) {
        r.reset(); // HTTP/1.x: the connection is closed; HTTP/2: the stream is reset
      }
    }
  }

  @Override
  public void close() {
    idempotent.close();
    nonIdempotent.close();
  }

  public static final class Builder {
    private final Vertx vertx;
    private RetryPolicy policy = RetryPolicy.builder().build();
    private RetryBudget budget;
    private final List<RetryListener> listeners = new ArrayList<>(1);
    private Clock clock = Clock.systemUTC();
    private boolean makeKeys = true;
    private WebClient webClient;

    private Builder(Vertx vertx) {
      this.vertx = Objects.requireNonNull(vertx, "vertx must not be null");
    }

    /** Attempts, backoff, deadline, attempt timeout; status and idempotency rules are HTTP's. */
    public Builder policy(RetryPolicy policy) {
      this.policy = Objects.requireNonNull(policy, "policy must not be null");
      return this;
    }

    public Builder budget(RetryBudget budget) {
      this.budget = Objects.requireNonNull(budget, "budget must not be null");
      return this;
    }

    public Builder listener(RetryListener listener) {
      this.listeners.add(Objects.requireNonNull(listener, "listener must not be null"));
      return this;
    }

    /** The wall clock Retry-After dates are read against. */
    public Builder clock(Clock clock) {
      this.clock = Objects.requireNonNull(clock, "clock must not be null");
      return this;
    }

    /** Whether POST and PATCH get a key made for the call (default true); else only their own. */
    public Builder idempotencyKeys(boolean make) {
      this.makeKeys = make;
      return this;
    }

    /**
     * The WebClient the requests are made from: an interceptor is added to it (once, for the life
     * of that client; it acts only on this helper's attempts) so an attempt in flight is reset when
     * its call no longer wants it. Requests of other clients are still retried, without that.
     */
    public Builder webClient(WebClient webClient) {
      this.webClient = Objects.requireNonNull(webClient, "webClient must not be null");
      return this;
    }

    public RetryingWebClient build() {
      return new RetryingWebClient(this);
    }
  }
}
