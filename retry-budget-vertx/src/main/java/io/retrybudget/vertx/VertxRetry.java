package io.retrybudget.vertx;

import io.retrybudget.budget.RetryBudget;
import io.retrybudget.retry.AttemptContext;
import io.retrybudget.retry.HedgePolicy;
import io.retrybudget.retry.RetryExecutor;
import io.retrybudget.retry.RetryListener;
import io.retrybudget.retry.RetryPolicy;
import io.retrybudget.retry.RetryScheduler;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * Retries for Vert.x {@link Future}s with a {@link RetryPolicy} and the fleet-wide {@link
 * RetryBudget}, never blocking an event loop: backoff, deadline, attempt timeouts and hedge delays
 * are Vert.x timers ({@code vertx.setTimer}), the budget is asked through its asynchronous {@link
 * RetryBudget#acquire()}, and every attempt and the returned future run on the caller's context
 * (the context {@code execute} was called on; a new event-loop context when called off Vert.x).
 *
 * <pre>{@code
 * VertxRetry retry = VertxRetry.builder(vertx, policy).budget(payments).build();
 * Future<Buffer> body = retry.execute(() -> client.get(8080, "payments", "/x").send().map(HttpResponse::body));
 * }</pre>
 *
 * <p>It runs calls through the SDK's {@link RetryExecutor} (its asynchronous state machine), so
 * every decision is the SDK's: the first attempt is counted in the budget once, a refusal ends the
 * call at once with {@code RetryBudgetExhaustedException} (no sleep), the deadline is never slept
 * past. Vert.x futures cannot be cancelled: a call is stopped through the {@code cancellation}
 * argument: its timers are cancelled (backoff, hedge delay, attempt timeout, deadline), it asks the
 * budget nothing more, and its future fails with {@link CancellationException}. An attempt in flight
 * is stopped when it was started through {@link #executeCancellable}: its {@code abandoned} future
 * completes whenever the call no longer wants it (the call was cancelled or ended, the attempt lost
 * to a hedge or ran past its attempt timeout), e.g. to {@code HttpClientRequest.reset()} it; an
 * attempt of the other {@code execute} methods runs on and its answer is dropped.
 */
public final class VertxRetry implements AutoCloseable {
  private final Vertx vertx;
  private final RetryExecutor executor;

  /**
   * An attempt that is told when the call no longer wants it: {@code abandoned} completes (on the
   * caller's context) when the call is cancelled or has ended while this attempt runs, when it lost
   * to a hedge, or when it ran past the policy's attempt timeout. Stop its I/O then.
   */
  @FunctionalInterface
  public interface CancellableAttempt<T> {
    Future<T> start(AttemptContext context, Future<Void> abandoned);
  }

  private VertxRetry(Builder b) {
    this.vertx = b.vertx;
    RetryExecutor.Builder e = RetryExecutor.builder(b.policy);
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
    this.executor = e.scheduler(timers(b.vertx)).build(); // last: the timers are always Vert.x's
  }

  /** The executor's only source of time: Vert.x timers (no thread of ours, nothing blocking). */
  static RetryScheduler timers(Vertx vertx) {
    return (task, delayNanos) -> {
      if (delayNanos <= 0) { // a hand-off (a budget answer from Redis's thread): no timer, next turn of a loop
        java.util.concurrent.atomic.AtomicBoolean off = new java.util.concurrent.atomic.AtomicBoolean();
        vertx.getOrCreateContext().runOnContext(v -> {
          if (!off.get()) {
            task.run();
          }
        });
        return () -> off.set(true);
      }
      long ms = Math.max(1, TimeUnit.NANOSECONDS.toMillis(delayNanos + 999_999)); // never early
      long id = vertx.setTimer(ms, t -> task.run());
      return () -> vertx.cancelTimer(id);
    };
  }

  public static Builder builder(Vertx vertx, RetryPolicy policy) {
    return new Builder(vertx, policy);
  }

  public RetryPolicy policy() {
    return executor.policy();
  }

  /** Runs the attempts {@code attempt} supplies, with retries; the result completes on the caller's context. */
  public <T> Future<T> execute(Supplier<Future<T>> attempt) {
    Objects.requireNonNull(attempt, "attempt must not be null");
    return execute(null, context -> attempt.get(), null);
  }

  /** As {@link #execute(Supplier)}, stopped when {@code cancellation} completes (either way). */
  public <T> Future<T> execute(Supplier<Future<T>> attempt, Future<?> cancellation) {
    Objects.requireNonNull(attempt, "attempt must not be null");
    Objects.requireNonNull(cancellation, "cancellation must not be null");
    return execute(null, context -> attempt.get(), cancellation);
  }

  /**
   * Each attempt told its number, replica and the call's idempotency key ({@code ownKey}, or one
   * made when an attempt first asks for it); stopped when {@code cancellation} (may be null) completes.
   */
  public <T> Future<T> execute(String ownKey, Function<AttemptContext, Future<T>> attempt, Future<?> cancellation) {
    Objects.requireNonNull(attempt, "attempt must not be null");
    Context caller = vertx.getOrCreateContext();
    return onCaller(caller, executor.callAsync(ownKey, context -> onContext(caller, attempt, context)), cancellation);
  }

  /**
   * As {@link #execute(String, Function, Future)}, each attempt also told, through its
   * {@code abandoned} future, when to stop: a call cancelled through {@code cancellation} (may be
   * null) then also ends the attempt in flight.
   *
   * <pre>{@code
   * Promise<Void> cancel = Promise.promise();
   * Future<Buffer> body = retry.executeCancellable(null, (ctx, abandoned) ->
   *     http.request(HttpMethod.GET, 8080, "payments", "/x").compose(req -> {
   *       abandoned.onComplete(v -> req.reset());           // the attempt's stream ends at once
   *       return req.send().compose(HttpClientResponse::body);
   *     }), cancel.future());
   * cancel.complete();                                       // stops timers, the attempt in flight, the call
   * }</pre>
   */
  public <T> Future<T> executeCancellable(String ownKey, CancellableAttempt<T> attempt, Future<?> cancellation) {
    Objects.requireNonNull(attempt, "attempt must not be null");
    Context caller = vertx.getOrCreateContext();
    return onCaller(caller, executor.callAsync(ownKey, context -> onContext(caller, attempt, context)), cancellation);
  }

  /**
   * The call's outcome as a future of the caller's context: its handlers run there, whichever thread
   * completes it and whenever they are added (even after completion, from a thread outside Vert.x);
   * {@code cancellation} (may be null) cancels the call.
   */
  private static <T> Future<T> onCaller(Context caller, CompletableFuture<T> call, Future<?> cancellation) {
    Promise<T> result = ((io.vertx.core.internal.ContextInternal) caller).promise();
    call.whenComplete((value, failure) -> complete(result, value, failure));
    if (cancellation != null) {
      cancellation.onComplete(ignored -> call.cancel(false));
    }
    return result.future();
  }

  /**
   * Starts a cancellable attempt on the caller's context (at once when already there). The stage
   * returned is the executor's handle on it: cancelled (a lost hedge, a timed-out attempt, the
   * call's end or cancel), it completes the attempt's {@code abandoned}.
   */
  private static <T> CompletionStage<T> onContext(Context caller, CancellableAttempt<T> attempt,
      AttemptContext context) {
    CompletableFuture<T> started = new CompletableFuture<>();
    Promise<Void> abandoned = ((io.vertx.core.internal.ContextInternal) caller).promise();
    started.whenComplete((value, failure) -> {
      if (failure instanceof CancellationException) {
        abandoned.tryComplete();
      }
    });
    if (Vertx.currentContext() == caller) {
      start(started, attempt, context, abandoned);
    } else {
      caller.runOnContext(v -> start(started, attempt, context, abandoned));
    }
    return started;
  }

  private static <T> void start(CompletableFuture<T> started, CancellableAttempt<T> attempt, AttemptContext context,
      Promise<Void> abandoned) {
    if (started.isDone()) {
      return; // cancelled (a lost hedge, the call ended) before it could start
    }
    Future<T> f;
    try {
      f = attempt.start(context, abandoned.future());
    } catch (Throwable t) {
      started.completeExceptionally(t);
      return;
    }
    f.onComplete(ar -> {
      if (ar.succeeded()) {
        started.complete(ar.result());
      } else {
        started.completeExceptionally(ar.cause());
      }
    });
  }

  /** Starts an attempt on the caller's context (at once when already there). */
  private static <T> CompletionStage<T> onContext(Context caller, Function<AttemptContext, Future<T>> attempt,
      AttemptContext context) {
    if (Vertx.currentContext() == caller) {
      return attempt.apply(context).toCompletionStage();
    }
    CompletableFuture<T> started = new CompletableFuture<>();
    caller.runOnContext(v -> {
      if (started.isDone()) {
        return; // cancelled (a lost hedge, the call ended) before it could start
      }
      Future<T> f;
      try {
        f = attempt.apply(context);
      } catch (Throwable t) {
        started.completeExceptionally(t);
        return;
      }
      f.onComplete(ar -> {
        if (ar.succeeded()) {
          started.complete(ar.result());
        } else {
          started.completeExceptionally(ar.cause());
        }
      });
    });
    return started;
  }

  private static <T> void complete(Promise<T> result, T value, Throwable failure) {
    if (failure == null) {
      result.complete(value);
    } else {
      Throwable cause = failure instanceof java.util.concurrent.CompletionException && failure.getCause() != null
          ? failure.getCause() : failure;
      result.fail(cause instanceof CancellationException ? new CancellationException("retry call cancelled") : cause);
    }
  }

  /** Ends the calls still running (their futures fail) and refuses new ones; Vert.x itself is the caller's. */
  @Override
  public void close() {
    executor.close();
  }

  /** Validates every value as it is set. */
  public static final class Builder {
    private final Vertx vertx;
    private final RetryPolicy policy;
    private RetryBudget budget;
    private HedgePolicy hedging;
    private final List<RetryListener> listeners = new ArrayList<>(1);
    private Consumer<RetryExecutor.Builder> customizer;

    private Builder(Vertx vertx, RetryPolicy policy) {
      this.vertx = Objects.requireNonNull(vertx, "vertx must not be null");
      this.policy = Objects.requireNonNull(policy, "policy must not be null");
    }

    /** Counts each call's first attempt and is asked (asynchronously) before every retry and hedge. */
    public Builder budget(RetryBudget budget) {
      this.budget = Objects.requireNonNull(budget, "budget must not be null");
      return this;
    }

    /** Hedged attempts after a delay (see {@link HedgePolicy}); they draw on the same budget. */
    public Builder hedging(HedgePolicy hedging) {
      this.hedging = Objects.requireNonNull(hedging, "hedging must not be null");
      return this;
    }

    /** Adds a listener (repeatable); it runs on Vert.x threads, so it must not block. */
    public Builder listener(RetryListener listener) {
      this.listeners.add(Objects.requireNonNull(listener, "listener must not be null"));
      return this;
    }

    /** Adjusts the executor (clock, random source), e.g. in tests; the timers stay Vert.x's. */
    public Builder executor(Consumer<RetryExecutor.Builder> customizer) {
      this.customizer = Objects.requireNonNull(customizer, "customizer must not be null");
      return this;
    }

    public VertxRetry build() {
      return new VertxRetry(this);
    }
  }
}
