package io.retrybudget.okhttp;

import io.retrybudget.budget.RetryBudget;
import io.retrybudget.retry.AttemptContext;
import io.retrybudget.retry.AttemptFunction;
import io.retrybudget.retry.RetryBudgetExhaustedException;
import io.retrybudget.retry.RetryExecutor;
import io.retrybudget.retry.RetryListener;
import io.retrybudget.retry.RetryPolicy;
import io.retrybudget.retry.RetryScheduler;
import io.retrybudget.retry.http.HttpClientRules;
import io.retrybudget.retry.http.HttpRetryRules;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import okhttp3.Call;
import okhttp3.EventListener;
import okhttp3.HttpUrl;
import okhttp3.Interceptor;
import okhttp3.Request;
import okhttp3.RequestBody;
import okhttp3.Response;

/**
 * An OkHttp <em>application</em> interceptor ({@code OkHttpClient.Builder.addInterceptor}) that runs
 * every call with the retries of a {@link RetryPolicy}, asks the fleet-wide {@link RetryBudget}
 * before every retry, and applies HTTP's retry rules, the same as {@code RetryingHttpClient}
 * ({@link HttpClientRules}): network errors, timeouts, 5xx, 429 and 503 are retried, other 4xx
 * never; {@code X-Retry-Pushback-Ms} (negative: do not retry) and {@code Retry-After} (seconds or
 * HTTP-date) are obeyed; every attempt carries {@code X-Retry-Attempt}; POST and PATCH are retried
 * only with an {@code Idempotency-Key}, the request's own or one made for the call, the same on
 * every attempt. A one-shot or duplex request body is never sent twice: such a call gets one
 * attempt. The body of every response that is not the call's answer is closed before the backoff
 * sleep, so its connection goes back to the pool. When retries run out, the last response is
 * returned as the server gave it.
 *
 * <p>Attempts run on the call's thread (the caller's for {@code execute()}, the dispatcher's for
 * {@code enqueue}). {@code Call.cancel()} (and OkHttp's {@code callTimeout}, which cancels) ends
 * the attempt in flight and wakes the backoff sleep at once; a cancelled call is never retried
 * and asks the budget nothing. The policy's deadline bounds the whole call: no sleep past it, no
 * attempt it leaves no time for, and an attempt still running at the deadline is cancelled (the
 * call fails with {@link InterruptedIOException}). The policy's attempt timeout bounds each I/O
 * step of an attempt (OkHttp's connect, read and write timeouts for that attempt), since OkHttp
 * can cancel only a whole call. A refusal by the budget fails the call with {@link
 * RetryBudgetExhaustedIOException}.
 *
 * <p>Hedging is not offered here: one OkHttp {@code Call} runs one exchange at a time (the chain
 * refuses a new exchange while a response body is open), so a hedge would need a second {@code
 * Call} outside the interceptor chain; use {@code RetryingHttpClient} or the executor's {@code
 * callAsync} with {@code Call.enqueue} for hedged requests. Do not combine with OkHttp's own
 * {@code retryOnConnectionFailure} if you want the budget to see every retry (it retries silently
 * below application interceptors; turn it off).
 */
public final class RetryBudgetInterceptor implements Interceptor, AutoCloseable {
  private final RetryExecutor idempotent;
  private final RetryExecutor nonIdempotent;
  private final RetryExecutor single;
  private final boolean makeKeys;
  private final List<HttpUrl> replicas;
  private final RetryPolicy policy;
  private final ScheduledExecutorService timers;
  private final ThreadLocal<CallScope> current = new ThreadLocal<>();

  private RetryBudgetInterceptor(Builder b) {
    this.policy = b.policy;
    this.makeKeys = b.makeKeys;
    this.replicas = List.copyOf(b.replicas);
    this.timers = io.retrybudget.internal.Schedulers.daemon("retry-okhttp-timer");
    HttpClientRules<Response> rules = HttpClientRules.of(Response.class, Response::code, r -> r::header, b.clock);
    // a call that was cancelled (by its caller, OkHttp's callTimeout or our deadline) is never retried
    RetryPolicy base = b.policy.toBuilder().retryOn(f -> !stopped() && b.policy.shouldRetry(f)).build();
    this.idempotent = executor(b, rules.apply(base, true));
    this.nonIdempotent = executor(b, rules.apply(base, false));
    this.single = executor(b, rules.apply(base.toBuilder().maxAttempts(1).build(), true));
  }

  private RetryExecutor executor(Builder b, RetryPolicy p) {
    RetryExecutor.Builder e = RetryExecutor.builder(p).scheduler(RetryScheduler.of(timers));
    b.listeners.forEach(e::listener);
    if (b.budget != null) {
      e.budget(b.budget);
    }
    if (b.customizer != null) {
      b.customizer.accept(e);
    }
    return e.sleeper(this::sleep).build(); // last: the sleep must be the one Call.cancel() wakes
  }

  public static Builder builder() {
    return new Builder();
  }

  @Override
  public Response intercept(Chain chain) throws IOException {
    Request request = chain.request();
    String ownKey = request.header(HttpRetryRules.IDEMPOTENCY_KEY_HEADER);
    RequestBody body = request.body();
    RetryExecutor executor = body != null && (body.isOneShot() || body.isDuplex()) ? single
        : HttpRetryRules.isIdempotentMethod(request.method()) ? idempotent : nonIdempotent;
    boolean sendKey = HttpClientRules.sendsIdempotencyKey(request.method(), ownKey, makeKeys, executor.policy());
    int offset = replicas.size() > 1 ? ThreadLocalRandom.current().nextInt(replicas.size()) : 0;
    CallScope scope = new CallScope(chain, request, sendKey, offset);
    CallScope outer = current.get();
    current.set(scope);
    try {
      if (policy.deadline() != null) {
        scope.watchdog = timers.schedule(scope::deadlinePassed, policy.deadline().toNanos(), TimeUnit.NANOSECONDS);
      }
      return executor.call(ownKey, scope);
    } catch (RetryBudgetExhaustedException e) {
      scope.closeLast();
      throw new RetryBudgetExhaustedIOException(e);
    } catch (InterruptedException e) {
      scope.closeLast();
      if (!scope.stopped) {
        Thread.currentThread().interrupt(); // a real interrupt of this thread, not our wake-up
      }
      throw scope.failure(new InterruptedIOException(scope.deadlineHit ? "retry deadline passed" : "Canceled"), e);
    } catch (IOException e) {
      scope.closeLast();
      throw scope.deadlineHit ? scope.failure(new InterruptedIOException("retry deadline passed"), e) : e;
    } catch (RuntimeException | Error e) {
      scope.closeLast();
      throw e;
    } catch (Exception e) {
      scope.closeLast();
      throw new IOException(e);
    } finally {
      scope.end();
      if (outer == null) {
        current.remove();
      } else {
        current.set(outer);
      }
    }
  }

  private boolean stopped() {
    CallScope scope = current.get();
    return scope != null && (scope.stopped || scope.chain.call().isCanceled());
  }

  /** The executor's backoff sleep: gives back the retried response first, then waits for the delay or a cancel. */
  private void sleep(long nanos) throws InterruptedException {
    CallScope scope = current.get();
    if (scope == null) {
      TimeUnit.NANOSECONDS.sleep(nanos);
      return;
    }
    scope.sleep(nanos);
  }

  /** Stops the interceptor's timer thread and its executors; calls made after it fail. */
  @Override
  public void close() {
    idempotent.close();
    nonIdempotent.close();
    single.close();
    timers.shutdownNow();
  }

  /** One call through the interceptor: its chain, the response not yet given back, the sleep's monitor. */
  private final class CallScope implements AttemptFunction<Response> {
    final Chain chain;
    final Request request;
    final boolean sendKey;
    final int offset;
    Response last;
    volatile boolean stopped;
    volatile boolean deadlineHit;
    boolean listening;
    ScheduledFuture<?> watchdog;

    CallScope(Chain chain, Request request, boolean sendKey, int offset) {
      this.chain = chain;
      this.request = request;
      this.sendKey = sendKey;
      this.offset = offset;
    }

    @Override
    public Response apply(AttemptContext context) throws IOException {
      closeLast();
      Request.Builder b = request.newBuilder()
          .header(HttpRetryRules.RETRY_ATTEMPT_HEADER, Integer.toString(context.attempt()));
      if (sendKey) {
        b.header(HttpRetryRules.IDEMPOTENCY_KEY_HEADER, context.idempotencyKey());
      }
      if (!replicas.isEmpty()) {
        // attempts run one after another here (the executor's synchronous path): attempt n takes the n-th replica
        HttpUrl replica = replicas.get((offset + context.attempt() - 1) % replicas.size());
        b.url(request.url().newBuilder().scheme(replica.scheme()).host(replica.host()).port(replica.port()).build());
      }
      Chain c = chain;
      if (policy.attemptTimeout() != null) {
        int ms = (int) Math.max(1, Math.min(Integer.MAX_VALUE, policy.attemptTimeout().toMillis()));
        c = c.withConnectTimeout(ms, TimeUnit.MILLISECONDS).withReadTimeout(ms, TimeUnit.MILLISECONDS)
            .withWriteTimeout(ms, TimeUnit.MILLISECONDS);
      }
      Response response = c.proceed(b.build());
      last = response;
      return response;
    }

    void sleep(long nanos) throws InterruptedException {
      closeLast(); // the connection goes back to the pool during the backoff
      if (!listening) {
        listening = true;
        chain.call().addEventListener(new EventListener() {
          @Override
          public void canceled(Call call) {
            wake();
          }
        });
      }
      long end = System.nanoTime() + nanos;
      synchronized (this) {
        while (!stopped && !chain.call().isCanceled()) {
          long left = end - System.nanoTime();
          if (left <= 0) {
            return;
          }
          TimeUnit.NANOSECONDS.timedWait(this, left);
        }
      }
      stopped = true;
      throw new InterruptedException("call cancelled during the backoff sleep");
    }

    synchronized void wake() {
      stopped = true;
      notifyAll();
    }

    void deadlinePassed() {
      deadlineHit = true;
      wake();
      chain.call().cancel(); // cuts the attempt in flight; a cancelled call is not retried
    }

    <E extends IOException> E failure(E e, Throwable cause) {
      e.initCause(cause);
      return e;
    }

    void closeLast() {
      Response r = last;
      last = null;
      if (r != null) {
        r.close();
      }
    }

    void end() {
      if (watchdog != null) {
        watchdog.cancel(false);
      }
    }
  }

  /** Validates every value as it is set. */
  public static final class Builder {
    private RetryPolicy policy = RetryPolicy.builder().build();
    private RetryBudget budget;
    private final List<RetryListener> listeners = new ArrayList<>(1);
    private Clock clock = Clock.systemUTC();
    private boolean makeKeys = true;
    private Consumer<RetryExecutor.Builder> customizer;
    private List<HttpUrl> replicas = List.of();

    private Builder() {}

    /** Attempts, backoff, deadline, attempt timeout, which failures are retried; status rules are HTTP's. */
    public Builder policy(RetryPolicy policy) {
      this.policy = Objects.requireNonNull(policy, "policy must not be null");
      return this;
    }

    /** The fleet-wide budget: first attempts are counted in it, every retry asks it. */
    public Builder budget(RetryBudget budget) {
      this.budget = Objects.requireNonNull(budget, "budget must not be null");
      return this;
    }

    /** Adds a listener (repeatable; see {@link RetryExecutor.Builder#listener}). */
    public Builder listener(RetryListener listener) {
      this.listeners.add(Objects.requireNonNull(listener, "listener must not be null"));
      return this;
    }

    /** The wall clock Retry-After dates are read against. */
    public Builder clock(Clock clock) {
      this.clock = Objects.requireNonNull(clock, "clock must not be null");
      return this;
    }

    /**
     * Whether POST and PATCH get an Idempotency-Key made for the call (default true); when false they
     * are retried only if the request carries its own.
     */
    public Builder idempotencyKeys(boolean make) {
      this.makeKeys = make;
      return this;
    }

    /**
     * Replicas ({@code scheme://host:port}, path ignored): each call starts on a random one and every
     * retry goes to the next, keeping the request's encoded path and query.
     */
    public Builder replicas(List<HttpUrl> replicas) {
      Objects.requireNonNull(replicas, "replicas must not be null");
      for (HttpUrl r : replicas) {
        Objects.requireNonNull(r, "replicas must not contain null");
      }
      this.replicas = List.copyOf(replicas);
      return this;
    }

    /** Adjusts the executors (clock, random source), e.g. in tests; the sleeper stays the interceptor's. */
    public Builder executor(Consumer<RetryExecutor.Builder> customizer) {
      this.customizer = Objects.requireNonNull(customizer, "customizer must not be null");
      return this;
    }

    public RetryBudgetInterceptor build() {
      return new RetryBudgetInterceptor(this);
    }
  }
}
