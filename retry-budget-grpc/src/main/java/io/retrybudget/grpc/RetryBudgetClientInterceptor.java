package io.retrybudget.grpc;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.Context;
import io.grpc.Deadline;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.retry.AttemptContext;
import io.retrybudget.retry.AttemptTimeoutException;
import io.retrybudget.retry.HedgePolicy;
import io.retrybudget.retry.RetryBudgetExhaustedException;
import io.retrybudget.retry.RetryExecutor;
import io.retrybudget.retry.RetryListener;
import io.retrybudget.retry.RetryPolicy;
import io.retrybudget.retry.RetryScheduler;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * A gRPC {@link ClientInterceptor} that retries <em>unary</em> calls with a {@link RetryPolicy} and
 * the fleet-wide {@link RetryBudget} instead of gRPC's per-channel token bucket: a call that closes
 * with one of the retryable status codes (default {@code UNAVAILABLE}, {@code RESOURCE_EXHAUSTED})
 * is sent again after the policy's backoff, once the budget grants it; a refusal ends the call at
 * once (no sleep) with the last status, its cause a {@code RetryBudgetExhaustedException}. Every
 * attempt is a new call on the next channel with the same message and headers, plus
 * {@code grpc-previous-rpc-attempts} on every attempt after the first. A {@code
 * grpc-retry-pushback-ms} trailer is obeyed: wait at least that long; negative or unreadable: do
 * not retry (gRFC A6). With {@link Builder#hedging} the call is hedged, each hedge asking the budget.
 *
 * <p>Each attempt is a gRPC call whose deadline is the earliest of the call's, the caller's
 * context's and the policy's attempt timeout (cut to the policy's deadline), so {@code grpc-timeout}
 * tells the server how long the attempt is waited for (the HTTP integrations send
 * {@code X-Request-Deadline-Ms} for the same).
 *
 * <p>The call's deadline ({@code withDeadline}/{@code withDeadlineAfter}) bounds every attempt and
 * the whole call (or the caller's {@code io.grpc.Context} deadline, whichever is first): the call
 * ends with {@code DEADLINE_EXCEEDED} at that instant, mid-attempt or mid-sleep. Every attempt runs
 * in the caller's gRPC context. Cancelling the call (the stub's, or the caller's cancelled {@code
 * io.grpc.Context}) cancels the attempt in flight and the sleep, and asks the budget nothing more.
 *
 * <p><b>Server-streaming calls</b> are retried as gRFC A6 allows: only before the first response
 * message (an attempt that closes with a retryable status before any message is sent again, the
 * budget asked first); the first message commits the call to its attempt, whose messages then flow
 * to the caller with the caller's flow control, and whose later failure ends the call unretried. The
 * policy's attempt timeout bounds the wait for the first message, not the stream; the call's
 * deadline bounds both. Streams are never hedged. Client-streaming and bidirectional calls pass
 * through untouched.
 *
 * <p><b>Turn gRPC's own retries off</b> on channels that use this interceptor, or the two multiply
 * (each of our attempts would itself be retried up to gRPC's {@code maxAttempts}, unseen by the
 * budget): {@code ManagedChannelBuilder.disableRetry()}, and no {@code retryPolicy} /
 * {@code retryThrottling} / {@code hedgingPolicy} in the service config.
 */
public final class RetryBudgetClientInterceptor implements ClientInterceptor, AutoCloseable {
  /** Sent on every attempt after the first: how many attempts of this call came before (gRFC A6). */
  public static final Metadata.Key<String> PREVIOUS_ATTEMPTS =
      Metadata.Key.of("grpc-previous-rpc-attempts", Metadata.ASCII_STRING_MARSHALLER);
  /** A server's pushback trailer: wait at least this many ms; negative or unreadable: do not retry. */
  public static final Metadata.Key<String> PUSHBACK =
      Metadata.Key.of("grpc-retry-pushback-ms", Metadata.ASCII_STRING_MARSHALLER);

  private final RetryExecutor executor;
  /** The same policy and budget for server-streaming calls, never hedged (a hedge would be a second stream). */
  private final RetryExecutor streams;
  private final ScheduledExecutorService timers;

  private RetryBudgetClientInterceptor(Builder b) {
    Set<Status.Code> codes = EnumSet.copyOf(b.codes);
    RetryPolicy policy = b.policy.toBuilder()
        .<Object>retryOnResult(r -> r instanceof Outcome o && codes.contains(o.status.getCode()))
        .serverDelay((result, failure) -> result instanceof Outcome o ? pushback(o.trailers) : null)
        .idempotent(true)
        .build();
    this.timers = io.retrybudget.internal.Schedulers.daemon("retry-grpc-timer");
    this.executor = executor(b, policy, b.hedging);
    this.streams = executor(b, policy, null);
  }

  private RetryExecutor executor(Builder b, RetryPolicy policy, HedgePolicy hedging) {
    RetryExecutor.Builder e = RetryExecutor.builder(policy);
    b.listeners.forEach(e::listener);
    if (b.budget != null) {
      e.budget(b.budget);
    }
    if (hedging != null) {
      e.hedging(hedging);
    }
    if (b.customizer != null) {
      b.customizer.accept(e);
    }
    return e.scheduler(RetryScheduler.of(timers)).build();
  }

  /** The pushback a server asked for: null for none, negative (do not retry) when negative or unreadable. */
  static Duration pushback(Metadata trailers) {
    String value = trailers == null ? null : trailers.get(PUSHBACK);
    if (value == null) {
      return null;
    }
    try {
      long ms = Long.parseLong(value.trim());
      return ms < 0 ? Duration.ofMillis(-1) : Duration.ofMillis(ms);
    } catch (NumberFormatException e) {
      return Duration.ofMillis(-1);
    }
  }

  public static Builder builder() {
    return new Builder();
  }

  @Override
  public <ReqT, RespT> ClientCall<ReqT, RespT> interceptCall(MethodDescriptor<ReqT, RespT> method,
      CallOptions callOptions, Channel next) {
    return switch (method.getType()) {
      case UNARY -> new RetryingCall<>(method, callOptions, next);
      case SERVER_STREAMING -> new RetryingStreamCall<>(method, callOptions, next, streams, timers);
      default -> next.newCall(method, callOptions); // the caller streams messages: nothing to send again
    };
  }

  /** Ends the calls still running and stops the timer thread. */
  @Override
  public void close() {
    executor.close();
    streams.close();
    timers.shutdownNow();
  }

  /** How one attempt closed: its status and what came with it. */
  static final class Outcome {
    final Status status;
    final Metadata headers;
    final Object message;
    final Metadata trailers;

    /**
     * How a call whose attempts ended in {@code failure} closes: the call's deadline, a cancel, the
     * budget's refusal (with the last attempt's status, headers and trailers), an attempt timeout.
     */
    static Outcome ofFailure(Throwable failure, boolean deadlineHit) {
      Throwable cause = failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
      if (deadlineHit) {
        return new Outcome(Status.DEADLINE_EXCEEDED.withDescription("call deadline passed during retries"), null, null,
            new Metadata());
      } else if (cause instanceof CancellationException) {
        return new Outcome(Status.CANCELLED.withDescription("call cancelled"), null, null, new Metadata());
      } else if (cause instanceof RetryBudgetExhaustedException refused) {
        Outcome last = refused.lastResult() instanceof Outcome o ? o : null;
        Status status = last != null ? last.status : Status.UNAVAILABLE;
        return new Outcome(status.withDescription(refused.getMessage()
            + (last != null && last.status.getDescription() != null ? ": " + last.status.getDescription() : ""))
            .withCause(refused), last != null ? last.headers : null, null, last != null ? last.trailers : new Metadata());
      } else if (cause instanceof AttemptTimeoutException) {
        return new Outcome(Status.DEADLINE_EXCEEDED.withDescription(cause.getMessage()).withCause(cause), null, null,
            new Metadata());
      }
      return new Outcome(Status.fromThrowable(cause), null, null, new Metadata());
    }

    Outcome(Status status, Metadata headers, Object message, Metadata trailers) {
      this.status = status;
      this.headers = headers;
      this.message = message;
      this.trailers = trailers;
    }
  }

  /** The call the stub sees: buffers the unary request, runs the attempts, answers the stub once. */
  private final class RetryingCall<ReqT, RespT> extends ClientCall<ReqT, RespT> {
    private final MethodDescriptor<ReqT, RespT> method;
    private final CallOptions options;
    private final Channel next;
    private Listener<RespT> listener;
    private Metadata headers;
    private ReqT message;
    private CompletableFuture<Outcome> call;
    private ScheduledFuture<?> deadlineTimer;
    private volatile boolean deadlineHit;
    private boolean answered;

    RetryingCall(MethodDescriptor<ReqT, RespT> method, CallOptions options, Channel next) {
      this.method = method;
      this.options = options;
      this.next = next;
    }

    @Override
    public void start(Listener<RespT> responseListener, Metadata headers) {
      this.listener = responseListener;
      this.headers = headers;
    }

    @Override
    public void request(int numMessages) {
      // a unary call has one answer: it is delivered when the call ends
    }

    @Override
    public void sendMessage(ReqT message) {
      this.message = message;
    }

    @Override
    public boolean isReady() {
      return true;
    }

    @Override
    public void halfClose() {
      synchronized (this) {
        if (answered) {
          return; // cancelled before it was sent
        }
      }
      // the caller's gRPC context: every attempt runs in it (its deadline, its values), and its
      // cancellation cancels the call, also while it sleeps between attempts on our timer thread
      Context context = Context.current();
      Deadline deadline = earliest(options.getDeadline(), context.getDeadline());
      if (deadline != null && deadline.isExpired()) {
        answer(new Outcome(Status.DEADLINE_EXCEEDED.withDescription("deadline passed before the call started"),
            null, null, new Metadata()));
        return;
      }
      CompletableFuture<Outcome> started = executor.callAsync(ctx -> {
        Context previous = context.attach();
        try {
          return attempt(ctx);
        } finally {
          context.detach(previous);
        }
      });
      boolean cancelledMeanwhile;
      synchronized (this) {
        call = started;
        cancelledMeanwhile = answered; // cancel() ran between the check above and now
      }
      if (cancelledMeanwhile) {
        started.cancel(false);
        return;
      }
      Context.CancellationListener onCancel = c -> {
        if (c.cancellationCause() instanceof java.util.concurrent.TimeoutException) {
          deadlineHit = true; // the context's deadline passed
        }
        started.cancel(false);
      };
      context.addListener(onCancel, Runnable::run); // nothing is kept for a context that cannot be cancelled
      started.whenComplete((o, e) -> context.removeListener(onCancel));
      if (deadline != null) {
        deadlineTimer = timers.schedule(() -> {
          deadlineHit = true;
          started.cancel(false); // cancels the attempt in flight and the sleep
        }, deadline.timeRemaining(TimeUnit.NANOSECONDS), TimeUnit.NANOSECONDS);
      }
      started.whenComplete(this::ended);
    }

    @Override
    public void cancel(String why, Throwable cause) {
      CompletableFuture<Outcome> running;
      synchronized (this) {
        running = call;
      }
      if (running != null) {
        running.cancel(false);
      } else if (listener != null) {
        answer(new Outcome(Status.CANCELLED.withDescription(why).withCause(cause), null, null, new Metadata()));
      }
    }

    private Deadline earliest(Deadline a, Deadline b) {
      return a == null ? b : b == null ? a : a.minimum(b);
    }

    /** One attempt: a new call of the method on the next channel, with the same message and headers. */
    private CompletableFuture<Outcome> attempt(AttemptContext context) {
      Metadata attemptHeaders = new Metadata();
      attemptHeaders.merge(headers);
      if (context.attempt() > 1) {
        attemptHeaders.put(PREVIOUS_ATTEMPTS, Integer.toString(context.attempt() - 1));
      }
      CallOptions attemptOptions = options;
      if (context.hasDeadline()) {
        // the attempt timeout cut to the call's deadline: grpc-timeout tells the server what is left
        Deadline answerBy = Deadline.after(context.remainingNanos(), TimeUnit.NANOSECONDS);
        attemptOptions = options.withDeadline(earliest(options.getDeadline(), answerBy));
      }
      ClientCall<ReqT, RespT> attempt = next.newCall(method, attemptOptions);
      CompletableFuture<Outcome> result = new CompletableFuture<>();
      attempt.start(new Listener<RespT>() {
        private Metadata responseHeaders;
        private RespT response;

        @Override
        public void onHeaders(Metadata h) {
          responseHeaders = h;
        }

        @Override
        public void onMessage(RespT m) {
          response = m;
        }

        @Override
        public void onClose(Status status, Metadata trailers) {
          result.complete(new Outcome(status, responseHeaders, response, trailers));
        }
      }, attemptHeaders);
      attempt.request(2); // one answer, and one more to see a server that wrongly sends two
      attempt.sendMessage(message);
      attempt.halfClose();
      result.whenComplete((o, e) -> {
        if (e != null) { // cancelled by the executor: a losing hedge, an attempt timeout, the call ended
          attempt.cancel("retry-budget: attempt cancelled", e);
        }
      });
      return result;
    }

    private void ended(Outcome outcome, Throwable failure) {
      if (deadlineTimer != null) {
        deadlineTimer.cancel(false);
      }
      if (failure == null) {
        answer(outcome);
        return;
      }
      answer(Outcome.ofFailure(failure, deadlineHit));
    }

    @SuppressWarnings("unchecked")
    private void answer(Outcome outcome) {
      synchronized (this) {
        if (answered) {
          return;
        }
        answered = true;
      }
      // through the call's executor when it has one: a blocking stub drains its own (ThreadlessExecutor)
      // and would not wake for an answer given on our timer thread
      java.util.concurrent.Executor callbacks = options.getExecutor();
      if (callbacks != null) {
        callbacks.execute(() -> deliver(outcome));
      } else {
        deliver(outcome);
      }
    }

    @SuppressWarnings("unchecked")
    private void deliver(Outcome outcome) {
      if (outcome.headers != null) {
        listener.onHeaders(outcome.headers);
      }
      if (outcome.status.isOk() && outcome.message != null) {
        listener.onMessage((RespT) outcome.message);
      }
      listener.onClose(outcome.status, outcome.trailers != null ? outcome.trailers : new Metadata());
    }
  }

  /** Validates every value as it is set. */
  public static final class Builder {
    private RetryPolicy policy = RetryPolicy.builder().build();
    private RetryBudget budget;
    private HedgePolicy hedging;
    private Set<Status.Code> codes = EnumSet.of(Status.Code.UNAVAILABLE, Status.Code.RESOURCE_EXHAUSTED);
    private final List<RetryListener> listeners = new ArrayList<>(1);
    private Consumer<RetryExecutor.Builder> customizer;

    private Builder() {}

    /** Attempts, backoff, deadline, attempt timeout; which statuses are retried is {@link #retryOn}. */
    public Builder policy(RetryPolicy policy) {
      this.policy = Objects.requireNonNull(policy, "policy must not be null");
      return this;
    }

    /** Counts each call's first attempt and is asked before every retry and hedge. */
    public Builder budget(RetryBudget budget) {
      this.budget = Objects.requireNonNull(budget, "budget must not be null");
      return this;
    }

    /**
     * The status codes worth another attempt (default UNAVAILABLE, RESOURCE_EXHAUSTED). Choose codes
     * that mean the server did not act on the call, or methods that are idempotent; never OK.
     */
    public Builder retryOn(Status.Code... codes) {
      if (codes.length == 0) {
        throw new IllegalArgumentException("retryOn needs at least one status code, was none");
      }
      Set<Status.Code> set = EnumSet.noneOf(Status.Code.class);
      for (Status.Code c : codes) {
        Objects.requireNonNull(c, "retryOn must not contain null");
        if (c == Status.Code.OK) {
          throw new IllegalArgumentException("retryOn must not contain OK, was " + java.util.Arrays.toString(codes));
        }
        set.add(c);
      }
      this.codes = set;
      return this;
    }

    /** Hedged attempts (see {@link HedgePolicy}); every hedge asks the budget like a retry. */
    public Builder hedging(HedgePolicy hedging) {
      this.hedging = Objects.requireNonNull(hedging, "hedging must not be null");
      return this;
    }

    public Builder listener(RetryListener listener) {
      this.listeners.add(Objects.requireNonNull(listener, "listener must not be null"));
      return this;
    }

    /** Adjusts the executor (clock, random source), e.g. in tests; its timers stay the interceptor's. */
    public Builder executor(Consumer<RetryExecutor.Builder> customizer) {
      this.customizer = Objects.requireNonNull(customizer, "customizer must not be null");
      return this;
    }

    public RetryBudgetClientInterceptor build() {
      return new RetryBudgetClientInterceptor(this);
    }
  }
}
