package io.retrybudget.retry;

import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.budget.RetryBudget;
import java.util.Objects;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.DoubleSupplier;
import java.util.function.Function;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * Runs calls with the retries of a {@link RetryPolicy}, asking a {@link RetryBudget} (when given)
 * before every retry: a denial ends the call at once with {@link RetryBudgetExhaustedException}.
 *
 * <p>{@link #callAsync} runs on a shared scheduler (no thread per retry): the deadline bounds the
 * whole call, the per-attempt timeout cancels the attempt in flight, and cancelling the returned
 * future stops the sleep and the attempt. {@link #call} runs every attempt on the caller's thread
 * and sleeps there; it honours the deadline and interruption, but cannot cut a blocking attempt
 * short (use {@code callAsync} for per-attempt timeouts).
 */
public final class RetryExecutor implements AutoCloseable {
  private final RetryPolicy policy;
  private final RetryPlanner planner;
  private final RetryBudget budget;
  private final RetryScheduler scheduler;
  private final ScheduledExecutorService ownedExecutor;
  private final LongSupplier nanoClock;
  private final Sleeper sleeper;
  private final DoubleSupplier random;
  private final RetryListener listener;

  /** Sleeps on the caller's thread in {@link #call}; tests pass one that advances a fake clock. */
  @FunctionalInterface
  public interface Sleeper {
    void sleepNanos(long nanos) throws InterruptedException;
  }

  private RetryExecutor(Builder b) {
    this.policy = b.policy;
    this.planner = new RetryPlanner(b.policy);
    this.budget = b.budget;
    if (b.scheduler == null) {
      this.ownedExecutor = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "retry-executor");
        t.setDaemon(true);
        return t;
      });
      this.scheduler = RetryScheduler.of(ownedExecutor);
    } else {
      this.ownedExecutor = null;
      this.scheduler = b.scheduler;
    }
    this.nanoClock = b.nanoClock;
    this.sleeper = b.sleeper;
    this.random = b.random;
    this.listener = b.listener;
  }

  public static Builder builder(RetryPolicy policy) {
    return new Builder(policy);
  }

  public RetryPolicy policy() {
    return policy;
  }

  /** Runs {@code callable} with retries on this thread; returns its result or throws its last failure. */
  public <T> T call(Callable<T> callable) throws Exception {
    Objects.requireNonNull(callable, "callable must not be null");
    return call(null, context -> callable.call());
  }

  /** As {@link #call(Callable)}, telling each attempt its number and the call's idempotency key. */
  public <T> T call(AttemptFunction<T> attempt) throws Exception {
    return call(null, attempt);
  }

  /**
   * As {@link #call(AttemptFunction)} with the caller's own idempotency key (null: made when an
   * attempt first asks for one).
   */
  public <T> T call(String idempotencyKey, AttemptFunction<T> function) throws Exception {
    Objects.requireNonNull(function, "attempt must not be null");
    AttemptContext context = new AttemptContext(idempotencyKey);
    long start = nanoClock.getAsLong();
    long previousDelay = 0;
    for (int attempt = 1; ; attempt++) {
      if (attempt == 1 && budget != null) {
        budget.recordFirstAttempt();
      }
      context.startAttempt(attempt);
      listener.onAttempt(attempt);
      T value = null;
      Throwable failure = null;
      try {
        value = function.apply(context);
      } catch (Throwable t) {
        failure = t;
      }
      RetryPlanner.Plan plan = planner.next(attempt, previousDelay, nanoClock.getAsLong() - start, value, failure,
          context.hasIdempotencyKey(), random.getAsDouble());
      if (!plan.retry()) {
        listener.onOutcome(plan.stop(), attempt);
        if (failure != null) {
          throw asException(failure);
        }
        return value;
      }
      if (budget != null) {
        BudgetDecision decision = budget.tryAcquire();
        if (!decision.granted()) {
          listener.onBudgetDenied(decision);
          throw new RetryBudgetExhaustedException(budget.name(), decision, failure, value);
        }
      }
      listener.onRetryScheduled(attempt + 1, plan.delayNanos(), failure);
      sleeper.sleepNanos(plan.delayNanos());
      previousDelay = plan.delayNanos();
    }
  }

  /**
   * Runs the attempts {@code attempt} supplies, with retries, without blocking. Cancel the returned
   * future to stop the call: the pending sleep is called off and the attempt in flight cancelled.
   */
  public <T> CompletableFuture<T> callAsync(Supplier<? extends CompletionStage<T>> attempt) {
    Objects.requireNonNull(attempt, "attempt must not be null");
    return callAsync(null, context -> attempt.get());
  }

  /** As {@link #callAsync(Supplier)}, telling each attempt its number and the call's idempotency key. */
  public <T> CompletableFuture<T> callAsync(Function<AttemptContext, ? extends CompletionStage<T>> attempt) {
    return callAsync(null, attempt);
  }

  /** As {@link #callAsync(Function)} with the caller's own idempotency key (null: made on demand). */
  public <T> CompletableFuture<T> callAsync(String idempotencyKey,
      Function<AttemptContext, ? extends CompletionStage<T>> attempt) {
    AsyncCall<T> call = new AsyncCall<>(Objects.requireNonNull(attempt, "attempt must not be null"),
        new AttemptContext(idempotencyKey));
    call.startAttempt();
    return call.result;
  }

  private final class AsyncCall<T> {
    final Function<AttemptContext, ? extends CompletionStage<T>> supplier;
    final AttemptContext context;
    final long start = nanoClock.getAsLong();
    final CompletableFuture<T> result = new CompletableFuture<>() {
      @Override
      public boolean cancel(boolean mayInterruptIfRunning) {
        boolean cancelled = super.cancel(mayInterruptIfRunning);
        if (cancelled) {
          stopEverything();
        }
        return cancelled;
      }
    };
    volatile int attempts;
    volatile long previousDelay;
    volatile RetryScheduler.Cancellable timer;
    volatile CompletableFuture<T> inFlight;

    AsyncCall(Function<AttemptContext, ? extends CompletionStage<T>> supplier, AttemptContext context) {
      this.supplier = supplier;
      this.context = context;
    }

    void startAttempt() {
      if (result.isDone()) {
        return;
      }
      int number = ++attempts;
      if (number == 1 && budget != null) {
        budget.recordFirstAttempt();
      }
      context.startAttempt(number);
      listener.onAttempt(number);
      long allowed = planner.attemptBudgetNanos(nanoClock.getAsLong() - start);
      CompletableFuture<T> attemptFuture;
      try {
        attemptFuture = supplier.apply(context).toCompletableFuture();
      } catch (Throwable t) {
        attemptFuture = CompletableFuture.failedFuture(t);
      }
      CompletableFuture<T> current = attemptFuture;
      inFlight = current;
      AtomicBoolean settled = new AtomicBoolean();
      if (allowed != Long.MAX_VALUE) {
        timer = scheduler.schedule(() -> {
          if (settled.compareAndSet(false, true)) {
            current.cancel(true);
            onAttemptDone(number, null, new AttemptTimeoutException(java.time.Duration.ofNanos(allowed)));
          }
        }, allowed);
      }
      current.whenComplete((value, error) -> {
        if (settled.compareAndSet(false, true)) {
          RetryScheduler.Cancellable t = timer;
          if (t != null) {
            t.cancel();
          }
          onAttemptDone(number, value, unwrap(error));
        }
      });
      if (result.isDone()) {
        current.cancel(true); // cancelled while the attempt was being started
      }
    }

    void onAttemptDone(int number, T value, Throwable failure) {
      if (result.isDone()) {
        return;
      }
      RetryPlanner.Plan plan = planner.next(number, previousDelay, nanoClock.getAsLong() - start, value, failure,
          context.hasIdempotencyKey(), random.getAsDouble());
      if (!plan.retry()) {
        listener.onOutcome(plan.stop(), number);
        if (failure != null) {
          result.completeExceptionally(failure);
        } else {
          result.complete(value);
        }
        return;
      }
      if (budget == null) {
        scheduleRetry(number, plan.delayNanos(), failure);
        return;
      }
      budget.acquire().whenComplete((decision, error) -> {
        if (error != null || !decision.granted()) {
          BudgetDecision d = decision != null ? decision : BudgetDecision.DENIED_FALLBACK;
          listener.onBudgetDenied(d);
          result.completeExceptionally(new RetryBudgetExhaustedException(budget.name(), d, failure, value));
        } else {
          scheduleRetry(number, plan.delayNanos(), failure);
        }
      });
    }

    void scheduleRetry(int number, long delayNanos, Throwable failure) {
      if (result.isDone()) {
        return;
      }
      listener.onRetryScheduled(number + 1, delayNanos, failure);
      previousDelay = delayNanos;
      timer = scheduler.schedule(this::startAttempt, delayNanos);
      if (result.isDone()) {
        stopEverything();
      }
    }

    void stopEverything() {
      RetryScheduler.Cancellable t = timer;
      if (t != null) {
        t.cancel();
      }
      CompletableFuture<T> f = inFlight;
      if (f != null) {
        f.cancel(true);
      }
    }
  }

  private static Throwable unwrap(Throwable error) {
    while ((error instanceof CompletionException || error instanceof ExecutionException) && error.getCause() != null) {
      error = error.getCause();
    }
    return error;
  }

  private static Exception asException(Throwable failure) {
    if (failure instanceof Exception e) {
      return e;
    }
    if (failure instanceof Error e) {
      throw e;
    }
    return new RuntimeException(failure);
  }

  /** Stops the executor's own scheduler thread, if it made one. Calls in flight are not waited for. */
  @Override
  public void close() {
    if (ownedExecutor != null) {
      ownedExecutor.shutdownNow();
    }
  }

  /** Validates every value as it is set. */
  public static final class Builder {
    private final RetryPolicy policy;
    private RetryBudget budget;
    private RetryScheduler scheduler;
    private LongSupplier nanoClock = System::nanoTime;
    private Sleeper sleeper = nanos -> TimeUnit.NANOSECONDS.sleep(nanos);
    private DoubleSupplier random = () -> ThreadLocalRandom.current().nextDouble();
    private RetryListener listener = RetryListener.NONE;

    private Builder(RetryPolicy policy) {
      this.policy = Objects.requireNonNull(policy, "policy must not be null");
    }

    /** The fleet-wide (or local) budget asked before every retry; none by default. */
    public Builder budget(RetryBudget budget) {
      this.budget = Objects.requireNonNull(budget, "budget must not be null");
      return this;
    }

    /** A shared scheduler for async calls; by default the executor owns one daemon thread. */
    public Builder scheduler(RetryScheduler scheduler) {
      this.scheduler = Objects.requireNonNull(scheduler, "scheduler must not be null");
      return this;
    }

    public Builder nanoClock(LongSupplier clock) {
      this.nanoClock = Objects.requireNonNull(clock, "nanoClock must not be null");
      return this;
    }

    public Builder sleeper(Sleeper sleeper) {
      this.sleeper = Objects.requireNonNull(sleeper, "sleeper must not be null");
      return this;
    }

    /** Uniform random numbers in [0, 1) for the jitter. */
    public Builder random(DoubleSupplier random) {
      this.random = Objects.requireNonNull(random, "random must not be null");
      return this;
    }

    public Builder listener(RetryListener listener) {
      this.listener = Objects.requireNonNull(listener, "listener must not be null");
      return this;
    }

    public RetryExecutor build() {
      return new RetryExecutor(this);
    }
  }
}
