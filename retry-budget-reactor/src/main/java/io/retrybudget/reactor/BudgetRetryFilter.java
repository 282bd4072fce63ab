package io.retrybudget.reactor;

import io.retrybudget.budget.RetryBudget;
import io.retrybudget.retry.RetryListener;
import io.retrybudget.retry.RetryPolicy;
import io.retrybudget.retry.http.HttpClientRules;
import io.retrybudget.retry.http.HttpRetryRules;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.DoubleSupplier;
import java.util.function.LongSupplier;
import org.springframework.web.reactive.function.client.ClientRequest;
import org.springframework.web.reactive.function.client.ClientResponse;
import org.springframework.web.reactive.function.client.ExchangeFilterFunction;
import org.springframework.web.reactive.function.client.ExchangeFunction;
import org.springframework.web.reactive.function.client.WebClientRequestException;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;

/**
 * A Spring {@code WebClient} filter: retries with the fleet-wide budget by HTTP's rules, the same as
 * {@code RetryingHttpClient}, the OkHttp interceptor and the Vert.x {@code RetryingWebClient} (one
 * shared class, {@link HttpClientRules}): network errors (the policy's {@code retryOn} also sees the
 * cause of a {@code WebClientRequestException}), timeouts, 5xx, 429 and 503 are retried,
 * other 4xx never; {@code X-Retry-Pushback-Ms} (negative: do not retry) and {@code Retry-After}
 * (seconds or an HTTP-date) are obeyed; every attempt carries {@code X-Retry-Attempt} (and {@code
 * X-Request-Deadline-Ms} when the policy bounds it: a deadline or an attempt timeout); POST and PATCH
 * carry an {@code Idempotency-Key} (the request's own, else one made for the call), the same on
 * every attempt. When retries run out the last response is the answer; a retried response's body
 * is released before the next attempt. Runs each request as a {@link BudgetRetry#call}: the first
 * attempt counted once, the budget asked before every retry, a refusal ending the exchange at once
 * with {@code RetryBudgetExhaustedException}; cancelling the subscription cancels the exchange in
 * flight and the backoff timer.
 *
 * <pre>{@code
 * WebClient web = WebClient.builder().baseUrl("http://payments:8080")
 *     .filter(BudgetRetryFilter.builder().policy(policy).budget(payments).build())
 *     .build();
 * }</pre>
 *
 * <p>Every attempt sends the request again, body included: a {@code bodyValue(...)} body is sent
 * again as is; a body from a {@code Publisher} is subscribed again, so it must be one that can be.
 */
public final class BudgetRetryFilter implements ExchangeFilterFunction {
  private final BudgetRetry idempotent;
  private final BudgetRetry nonIdempotent;
  private final boolean makeKeys;

  private BudgetRetryFilter(Builder b) {
    this.makeKeys = b.makeKeys;
    HttpClientRules<ClientResponse> rules = HttpClientRules.of(ClientResponse.class, r -> r.statusCode().value(),
        r -> name -> r.headers().asHttpHeaders().getFirst(name), b.clock);
    RetryPolicy policy = b.policy.toBuilder().retryOn(failure -> retryable(b.policy, failure)).build();
    this.idempotent = retry(b, rules.apply(policy, true));
    this.nonIdempotent = retry(b, rules.apply(policy, false));
  }

  /**
   * The caller's rule on the failure, or on its cause when WebClient wrapped it: an exchange fails
   * with {@link WebClientRequestException} around the I/O error ({@code ConnectException},
   * Reactor Netty's {@code PrematureCloseException}), which the default rule retries.
   */
  private static boolean retryable(RetryPolicy policy, Throwable failure) {
    if (policy.shouldRetry(failure)) {
      return true;
    }
    return failure instanceof WebClientRequestException && failure.getCause() != null
        && policy.shouldRetry(failure.getCause());
  }

  private static BudgetRetry retry(Builder b, RetryPolicy policy) {
    BudgetRetry.Builder r = BudgetRetry.builder(policy).discard(BudgetRetryFilter::release);
    b.listeners.forEach(r::listener);
    if (b.budget != null) {
      r.budget(b.budget);
    }
    if (b.scheduler != null) {
      r.scheduler(b.scheduler);
    }
    if (b.nanoClock != null) {
      r.nanoClock(b.nanoClock);
    }
    if (b.random != null) {
      r.random(b.random);
    }
    return r.build();
  }

  /** A retried (or refused) response's body is released, so its connection goes back to the pool. */
  private static void release(Object value) {
    if (value instanceof ClientResponse response) {
      response.releaseBody().subscribe(null, ignored -> { });
    }
  }

  public static Builder builder() {
    return new Builder();
  }

  @Override
  public Mono<ClientResponse> filter(ClientRequest request, ExchangeFunction next) {
    String method = request.method().name();
    String ownKey = request.headers().getFirst(HttpRetryRules.IDEMPOTENCY_KEY_HEADER);
    BudgetRetry retry = HttpRetryRules.isIdempotentMethod(method) ? idempotent : nonIdempotent;
    boolean sendKey = HttpClientRules.sendsIdempotencyKey(method, ownKey, makeKeys, retry.policy());
    return retry.call(ownKey, attempt -> next.exchange(ClientRequest.from(request).headers(h -> {
      h.set(HttpRetryRules.RETRY_ATTEMPT_HEADER, Integer.toString(attempt.attempt()));
      if (attempt.hasDeadline()) {
        h.set(HttpRetryRules.DEADLINE_HEADER, Long.toString(attempt.remainingMillis()));
      }
      if (sendKey) {
        h.set(HttpRetryRules.IDEMPOTENCY_KEY_HEADER, attempt.idempotencyKey());
      }
    }).build()));
  }

  /** Validates every value as it is set. */
  public static final class Builder {
    private RetryPolicy policy = RetryPolicy.builder().build();
    private RetryBudget budget;
    private final List<RetryListener> listeners = new ArrayList<>(1);
    private Clock clock = Clock.systemUTC();
    private boolean makeKeys = true;
    private Scheduler scheduler;
    private LongSupplier nanoClock;
    private DoubleSupplier random;

    private Builder() {}

    /** Attempts, backoff, deadline, attempt timeout, which failures; status and idempotency rules are HTTP's. */
    public Builder policy(RetryPolicy policy) {
      this.policy = Objects.requireNonNull(policy, "policy must not be null");
      return this;
    }

    public Builder budget(RetryBudget budget) {
      this.budget = Objects.requireNonNull(budget, "budget must not be null");
      return this;
    }

    /** Adds a listener (repeatable; see {@link BudgetRetry.Builder#listener}). */
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

    /** See {@link BudgetRetry.Builder#scheduler}. */
    public Builder scheduler(Scheduler scheduler) {
      this.scheduler = Objects.requireNonNull(scheduler, "scheduler must not be null");
      return this;
    }

    /** See {@link BudgetRetry.Builder#nanoClock}. */
    public Builder nanoClock(LongSupplier nanoClock) {
      this.nanoClock = Objects.requireNonNull(nanoClock, "nanoClock must not be null");
      return this;
    }

    /** See {@link BudgetRetry.Builder#random}. */
    public Builder random(DoubleSupplier random) {
      this.random = Objects.requireNonNull(random, "random must not be null");
      return this;
    }

    public BudgetRetryFilter build() {
      return new BudgetRetryFilter(this);
    }
  }
}
