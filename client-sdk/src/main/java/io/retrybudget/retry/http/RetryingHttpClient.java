package io.retrybudget.retry.http;

import io.retrybudget.budget.RetryBudget;
import io.retrybudget.retry.AttemptContext;
import io.retrybudget.retry.AttemptTimeoutException;
import io.retrybudget.retry.RetryExecutor;
import io.retrybudget.retry.RetryListener;
import io.retrybudget.retry.RetryPolicy;
import java.io.IOException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Clock;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.function.Consumer;

/**
 * {@link HttpClient} with retries done right: network errors, timeouts, 5xx, 429 and 503 are
 * retried, other 4xx never; Retry-After and {@code X-Retry-Pushback-Ms} are obeyed; every attempt
 * carries {@code X-Retry-Attempt}, and {@code X-Request-Deadline-Ms} when the policy has a deadline
 * or an attempt timeout; POST and PATCH are retried only with an {@code Idempotency-Key}
 * (the request's own, or one made for the call), the same on every attempt. When retries run out,
 * the last response is returned as the server gave it.
 *
 * <p>The body of a response that is not the call's answer (retried, or a hedge that lost) is closed
 * when it is closeable ({@code ofInputStream}, {@code ofLines}), so its connection is freed; other
 * handlers read it whole. A {@code ofPublisher} body of such a response is left to its handler. That
 * includes the response a {@code RetryBudgetExhaustedException} carries in {@code lastResult()}: its
 * status and headers are there, its body is closed. They are closed before {@code send()} returns or
 * throws and before {@code sendAsync}'s future completes, however the call ends (answer, retries run
 * out, budget refusal, deadline, cancellation); a hedge's response that arrives after that (its
 * exchange answered as it was cancelled) is closed as it arrives.
 */
public final class RetryingHttpClient implements AutoCloseable {
  private final HttpClient http;
  private final RetryExecutor idempotent;
  private final RetryExecutor nonIdempotent;
  private final boolean keysForNonIdempotent;
  private final java.util.List<java.net.URI> replicas;

  private RetryingHttpClient(Builder b) {
    this.http = b.http;
    this.keysForNonIdempotent = b.keysForNonIdempotent;
    this.replicas = b.replicas;
    HttpClientRules<HttpResponse<?>> rules = HttpClientRules.of(HttpResponse.class, HttpResponse::statusCode,
        r -> name -> r.headers().firstValue(name).orElse(null), b.clock);
    this.idempotent = executor(b, rules.apply(b.policy, true));
    this.nonIdempotent = executor(b, rules.apply(b.policy, false));
  }

  private static RetryExecutor executor(Builder b, RetryPolicy policy) {
    RetryExecutor.Builder e = RetryExecutor.builder(policy);
    b.listeners.forEach(e::listener);
    if (b.budget != null) {
      e.budget(b.budget);
    }
    if (b.hedging != null) {
      e.hedging(b.hedging);
    }
    if (b.customizer != null) {
      b.customizer.accept(e);
    }
    return e.build();
  }

  public static Builder builder(HttpClient http) {
    return new Builder(http);
  }

  public <T> CompletableFuture<HttpResponse<T>> sendAsync(HttpRequest request, HttpResponse.BodyHandler<T> handler) {
    return sendAsync(request, handler, null);
  }

  /**
   * As {@link #sendAsync(HttpRequest, HttpResponse.BodyHandler)}, the whole call bounded by
   * {@code deadline} from now as well as by the policy's own deadline, whichever is earlier (null:
   * the policy's alone). For a server that passes its caller's deadline on: no attempt starts that
   * the time left cannot hold, and every attempt carries what is left in
   * {@code X-Request-Deadline-Ms}. Zero or negative: the call fails at once with
   * {@code AttemptTimeoutException}, nothing sent.
   */
  public <T> CompletableFuture<HttpResponse<T>> sendAsync(HttpRequest request, HttpResponse.BodyHandler<T> handler,
      java.time.Duration deadline) {
    Objects.requireNonNull(request, "request must not be null");
    Objects.requireNonNull(handler, "handler must not be null");
    boolean safe = HttpRetryRules.isIdempotentMethod(request.method());
    String ownKey = request.headers().firstValue(HttpRetryRules.IDEMPOTENCY_KEY_HEADER).orElse(null);
    RetryExecutor executor = safe ? idempotent : nonIdempotent;
    boolean sendKey = HttpClientRules.sendsIdempotencyKey(request.method(), ownKey, keysForNonIdempotent, executor.policy());
    // a random first replica per call spreads load; each later attempt or hedge takes the next one
    int offset = replicas.isEmpty() ? 0 : java.util.concurrent.ThreadLocalRandom.current().nextInt(replicas.size());
    DiscardedResponses<T> responses = new DiscardedResponses<>();
    CompletableFuture<HttpResponse<T>> call = executor.callAsync(ownKey, deadline, (AttemptContext context) ->
        // registered before the executor sees it; cancelling it (a losing hedge) aborts the exchange
        new DiscardedResponses.Attempt<>(http.sendAsync(attempt(request, context, sendKey, offset), handler), responses));
    return new HttpCallFuture<>(responses).follow(call);
  }

  /**
   * Blocks for {@link #sendAsync}; interrupting the caller cancels the call. An attempt cut by the
   * attempt timeout or deadline surfaces as {@link HttpTimeoutException}.
   */
  public <T> HttpResponse<T> send(HttpRequest request, HttpResponse.BodyHandler<T> handler)
      throws IOException, InterruptedException {
    CompletableFuture<HttpResponse<T>> call = sendAsync(request, handler);
    try {
      return call.get();
    } catch (InterruptedException e) {
      call.cancel(true);
      throw e;
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      if (cause instanceof AttemptTimeoutException timeout) {
        HttpTimeoutException http = new HttpTimeoutException(timeout.getMessage());
        http.initCause(timeout);
        throw http;
      }
      if (cause instanceof IOException io) {
        throw io;
      }
      if (cause instanceof RuntimeException re) {
        throw re;
      }
      if (cause instanceof Error err) {
        throw err;
      }
      throw new IOException(cause);
    }
  }

  private HttpRequest attempt(HttpRequest request, AttemptContext context, boolean sendKey, int offset) {
    String deadline = HttpRetryRules.deadlineHeaderValue(context);
    HttpRequest.Builder b = HttpRequest.newBuilder(request, (name, value) ->
        !name.equalsIgnoreCase(HttpRetryRules.RETRY_ATTEMPT_HEADER)
            && !(deadline != null && name.equalsIgnoreCase(HttpRetryRules.DEADLINE_HEADER))
            && !(sendKey && name.equalsIgnoreCase(HttpRetryRules.IDEMPOTENCY_KEY_HEADER)));
    if (!replicas.isEmpty()) {
      b.uri(onReplica(request.uri(), replicas.get((offset + context.replica()) % replicas.size())));
    }
    b.header(HttpRetryRules.RETRY_ATTEMPT_HEADER, Integer.toString(context.attempt()));
    if (deadline != null) {
      b.header(HttpRetryRules.DEADLINE_HEADER, deadline);
    }
    if (sendKey) {
      b.header(HttpRetryRules.IDEMPOTENCY_KEY_HEADER, context.idempotencyKey());
    }
    return b.build();
  }

  /**
   * The request's path and query on another replica's scheme, host and port, byte for byte: built
   * from the raw (still percent-encoded) parts, so {@code a%2Fb} stays one path segment and
   * {@code q=x%26y} one query parameter.
   */
  static java.net.URI onReplica(java.net.URI uri, java.net.URI replica) {
    StringBuilder s = new StringBuilder(replica.getScheme()).append("://").append(replica.getRawAuthority());
    if (uri.getRawPath() != null) {
      s.append(uri.getRawPath());
    }
    if (uri.getRawQuery() != null) {
      s.append('?').append(uri.getRawQuery());
    }
    if (uri.getRawFragment() != null) {
      s.append('#').append(uri.getRawFragment());
    }
    try {
      return new java.net.URI(s.toString());
    } catch (java.net.URISyntaxException e) {
      throw new IllegalArgumentException("cannot move " + uri + " to replica " + replica, e);
    }
  }

  @Override
  public void close() {
    idempotent.close();
    nonIdempotent.close();
  }

  public static final class Builder {
    private final HttpClient http;
    private RetryPolicy policy = RetryPolicy.builder().build();
    private RetryBudget budget;
    private final java.util.List<RetryListener> listeners = new java.util.ArrayList<>(1);
    private Clock clock = Clock.systemUTC();
    private boolean keysForNonIdempotent = true;
    private Consumer<RetryExecutor.Builder> customizer;
    private io.retrybudget.retry.HedgePolicy hedging;
    private java.util.List<java.net.URI> replicas = java.util.List.of();

    private Builder(HttpClient http) {
      this.http = Objects.requireNonNull(http, "http must not be null");
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

    /** Adds a listener of both executors (call again to add more; see {@link RetryExecutor.Builder#listener}). */
    public Builder listener(RetryListener listener) {
      this.listeners.add(Objects.requireNonNull(listener, "listener must not be null"));
      return this;
    }

    /** The wall clock that Retry-After dates are read against. */
    public Builder clock(Clock clock) {
      this.clock = Objects.requireNonNull(clock, "clock must not be null");
      return this;
    }

    /**
     * Whether POST and PATCH get an Idempotency-Key made for the call (default true). When false,
     * they are retried only if the request carries its own key.
     */
    public Builder idempotencyKeys(boolean make) {
      this.keysForNonIdempotent = make;
      return this;
    }

    /** Hedged requests (see {@link io.retrybudget.retry.HedgePolicy}); they draw on the same budget. */
    public Builder hedging(io.retrybudget.retry.HedgePolicy hedging) {
      this.hedging = Objects.requireNonNull(hedging, "hedging must not be null");
      return this;
    }

    /**
     * Replicas of the service ({@code scheme://host:port}): each call starts on a random one and
     * every retry or hedge goes to the next, keeping the request's path and query.
     */
    public Builder replicas(java.util.List<java.net.URI> replicas) {
      for (java.net.URI r : replicas) {
        if (r.getScheme() == null || r.getHost() == null) {
          throw new IllegalArgumentException("replicas must be absolute scheme://host[:port] URIs, was " + r);
        }
      }
      this.replicas = java.util.List.copyOf(replicas);
      return this;
    }

    /** Adjusts the underlying executors (scheduler, clock, random source), e.g. in tests. */
    public Builder executor(Consumer<RetryExecutor.Builder> customizer) {
      this.customizer = Objects.requireNonNull(customizer, "customizer must not be null");
      return this;
    }

    public RetryingHttpClient build() {
      return new RetryingHttpClient(this);
    }
  }
}
