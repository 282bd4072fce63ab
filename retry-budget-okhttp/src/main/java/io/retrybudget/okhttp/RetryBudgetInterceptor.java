package io.retrybudget.okhttp;

import io.retrybudget.budget.RetryBudget;
import io.retrybudget.retry.AttemptContext;
import io.retrybudget.retry.AttemptFunction;
import io.retrybudget.retry.AttemptTimeoutException;
import io.retrybudget.retry.HedgePolicy;
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
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.IntUnaryOperator;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.Dispatcher;
import okhttp3.OkHttpClient;
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
 * HTTP-date) are obeyed; every attempt carries {@code X-Retry-Attempt} (and {@code
 * X-Request-Deadline-Ms} when the policy bounds it: deadline or attempt timeout); POST and PATCH are retried
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
 * <p>Hedging ({@link Builder#hedging}): the call's attempts and hedges then run as calls of their
 * own through the client given for them, started and raced by the SDK executor's asynchronous
 * path with the {@link HedgePolicy} (every hedge asks the budget as a retry does; a refused hedge
 * is not sent), each to the next replica; the first good response is the call's answer, every
 * other attempt still running is cancelled, and the body of every other response that arrived is
 * closed. {@code Call.cancel()} of the caller's call cancels them all. The caller's thread waits
 * for the answer; the attempts run on the hedging client's dispatcher. Do not combine with OkHttp's own
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
  private final OkHttpClient hedgeClient;
  private final IntUnaryOperator firstReplica;
  private final RetryExecutor hedgedIdempotent;
  private final RetryExecutor hedgedNonIdempotent;

  /** Tags every attempt of a hedged call: it passes through this interceptor (its client may hold it). */
  private static final class HedgeAttempt {
    static final HedgeAttempt TAG = new HedgeAttempt();
  }

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
    // the attempts get a dispatcher of their own: an enqueued call waiting in this interceptor holds a
    // slot of its client's dispatcher, so attempts queued behind it on the same one could wait forever
    this.hedgeClient = b.hedgeClient == null ? null : b.hedgeClient.newBuilder().dispatcher(attemptDispatcher(b)).build();
    this.firstReplica = b.firstReplica;
    if (b.hedging != null) {
      // attempts run as calls of their own: cancelling the executor's future cancels them
      this.hedgedIdempotent = executor(b, rules.apply(b.policy, true), b.hedging);
      this.hedgedNonIdempotent = executor(b, rules.apply(b.policy, false), b.hedging);
    } else {
      this.hedgedIdempotent = null;
      this.hedgedNonIdempotent = null;
    }
  }

  private RetryExecutor executor(Builder b, RetryPolicy p) {
    return executor(b, p, null);
  }

  private static Dispatcher attemptDispatcher(Builder b) {
    Dispatcher d = new Dispatcher();
    d.setMaxRequests(b.maxConcurrentAttempts);
    d.setMaxRequestsPerHost(b.maxConcurrentAttempts); // OkHttp's default of 5 per host would queue hedged calls
    return d;
  }

  private RetryExecutor executor(Builder b, RetryPolicy p, HedgePolicy hedging) {
    RetryExecutor.Builder e = RetryExecutor.builder(p).scheduler(RetryScheduler.of(timers));
    if (hedging != null) {
      e.hedging(hedging);
    }
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
    if (request.tag(HedgeAttempt.class) != null) {
      return chain.proceed(request); // one attempt of a hedged call, sent through a client that has this interceptor
    }
    String ownKey = request.header(HttpRetryRules.IDEMPOTENCY_KEY_HEADER);
    RequestBody body = request.body();
    boolean oneShot = body != null && (body.isOneShot() || body.isDuplex());
    boolean safe = HttpRetryRules.isIdempotentMethod(request.method());
    RetryExecutor executor = oneShot ? single : safe ? idempotent : nonIdempotent;
    boolean sendKey = HttpClientRules.sendsIdempotencyKey(request.method(), ownKey, makeKeys, executor.policy());
    int offset = replicas.size() > 1 ? firstReplica.applyAsInt(replicas.size()) : 0;
    if (hedgeClient != null && !oneShot) {
      return hedged(chain, request, safe ? hedgedIdempotent : hedgedNonIdempotent, ownKey, sendKey, offset);
    }
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

  /** Attempt n of a call: its X-Retry-Attempt, the call's key, the n-th replica from the call's first. */
  private Request.Builder attemptRequest(Request request, AttemptContext context, boolean sendKey, int offset) {
    Request.Builder b = request.newBuilder()
        .header(HttpRetryRules.RETRY_ATTEMPT_HEADER, Integer.toString(context.attempt()));
    String deadline = HttpRetryRules.deadlineHeaderValue(context);
    if (deadline != null) {
      b.header(HttpRetryRules.DEADLINE_HEADER, deadline);
    }
    if (sendKey) {
      b.header(HttpRetryRules.IDEMPOTENCY_KEY_HEADER, context.idempotencyKey());
    }
    if (!replicas.isEmpty()) {
      HttpUrl replica = replicas.get((offset + context.attempt() - 1) % replicas.size()); // every attempt and hedge numbered
      b.url(request.url().newBuilder().scheme(replica.scheme()).host(replica.host()).port(replica.port()).build());
    }
    return b;
  }

  /**
   * A hedged call: the executor's asynchronous path sends, races and cancels the attempts, each a
   * call of the hedging client; this thread waits for the answer, and the caller's cancel cancels
   * the executor's future, which cancels every attempt still running.
   */
  private Response hedged(Chain chain, Request request, RetryExecutor executor, String ownKey, boolean sendKey,
      int offset) throws IOException {
    DiscardedResponses discarded = new DiscardedResponses();
    CompletableFuture<Response> call = executor.callAsync(ownKey, (AttemptContext context) -> {
      Call attempt = hedgeClient.newCall(
          attemptRequest(request, context, sendKey, offset).tag(HedgeAttempt.class, HedgeAttempt.TAG).build());
      CompletableFuture<Response> sent = new CompletableFuture<>();
      sent.whenComplete((response, failure) -> {
        if (failure != null) {
          attempt.cancel(); // cancelled by the executor (a loser, a timeout, the call's end); no-op once failed
        }
      });
      attempt.enqueue(new Callback() {
        @Override
        public void onFailure(Call c, IOException e) {
          sent.completeExceptionally(e);
        }

        @Override
        public void onResponse(Call c, Response response) {
          discarded.arrived(response); // first: a response that is not the answer is closed
          sent.complete(response);
        }
      });
      return sent; // itself: the executor's cancel reaches the attempt
    });
    call.whenComplete((answer, failure) -> discarded.callEnded(answer));
    chain.call().addEventListener(new EventListener() {
      @Override
      public void canceled(Call c) {
        call.cancel(true);
      }
    });
    if (chain.call().isCanceled()) {
      call.cancel(true);
    }
    try {
      return call.get();
    } catch (InterruptedException e) {
      call.cancel(true);
      Thread.currentThread().interrupt();
      throw new InterruptedIOException("interrupted");
    } catch (CancellationException e) {
      throw new IOException("Canceled", e);
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      if (cause instanceof RetryBudgetExhaustedException refused) {
        throw new RetryBudgetExhaustedIOException(refused);
      }
      if (cause instanceof IOException io) {
        throw io;
      }
      if (cause instanceof AttemptTimeoutException timeout) {
        InterruptedIOException io = new InterruptedIOException("attempt timed out");
        io.initCause(timeout);
        throw io;
      }
      if (cause instanceof RuntimeException runtime) {
        throw runtime;
      }
      if (cause instanceof Error error) {
        throw error;
      }
      throw new IOException(cause);
    }
  }

  /**
   * The responses of a hedged call that are not its answer (retried ones, hedges that lost, ones
   * that arrived after the end): their bodies are closed, which gives their connections back.
   */
  private static final class DiscardedResponses {
    private final List<Response> pending = new ArrayList<>(2);
    private boolean ended;
    private Response answer;

    void arrived(Response response) {
      synchronized (this) {
        if (!ended) {
          pending.add(response);
          return;
        }
      }
      if (response != answer) {
        response.close(); // arrived after the call was answered or cancelled: a loser
      }
    }

    void callEnded(Response answer) {
      List<Response> all;
      synchronized (this) {
        ended = true;
        this.answer = answer;
        all = new ArrayList<>(pending);
        pending.clear();
      }
      for (Response r : all) {
        if (r != answer) {
          r.close();
        }
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

  /** Attempts of hedged calls running now (a seam for tests). */
  int attemptsRunning() {
    return hedgeClient == null ? 0 : hedgeClient.dispatcher().runningCallsCount();
  }

  /** Stops the interceptor's timer thread and its executors; calls made after it fail. */
  @Override
  public void close() {
    idempotent.close();
    nonIdempotent.close();
    single.close();
    if (hedgedIdempotent != null) {
      hedgedIdempotent.close();
      hedgedNonIdempotent.close();
      hedgeClient.dispatcher().cancelAll();
      hedgeClient.dispatcher().executorService().shutdown();
    }
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
      Request.Builder b = attemptRequest(request, context, sendKey, offset);
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
    private HedgePolicy hedging;
    private OkHttpClient hedgeClient;
    private IntUnaryOperator firstReplica = n -> ThreadLocalRandom.current().nextInt(n);
    private int maxConcurrentAttempts = 256;

    private Builder() {}

    /** Which replica a call starts on, given their number (random by default); a seam for tests. */
    Builder firstReplica(IntUnaryOperator firstReplica) {
      this.firstReplica = Objects.requireNonNull(firstReplica, "firstReplica must not be null");
      return this;
    }

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

    /**
     * Hedged requests: every call's attempts and hedges run as calls of {@code client} (typically
     * the client this interceptor is added to, or the one it was built from; attempts carry a tag
     * and pass through this interceptor), raced per {@code hedging}, each hedge asking the budget,
     * each going to the next replica. A call with a one-shot or duplex body is not hedged.
     */
    public Builder hedging(HedgePolicy hedging, OkHttpClient client) {
      this.hedging = Objects.requireNonNull(hedging, "hedging must not be null");
      this.hedgeClient = Objects.requireNonNull(client, "client must not be null");
      return this;
    }

    /**
     * How many attempts of hedged calls may run at once, in all and per host (default 256; beyond
     * it they wait in their own dispatcher's queue): the bound of the dispatcher the attempts get.
     */
    public Builder maxConcurrentAttempts(int max) {
      if (max < 1) {
        throw new IllegalArgumentException("maxConcurrentAttempts must be at least 1, was " + max);
      }
      this.maxConcurrentAttempts = max;
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
