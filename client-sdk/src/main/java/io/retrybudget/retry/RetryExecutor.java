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
import java.util.function.BiConsumer;
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
  private final HedgePolicy hedging;
  private final java.util.Set<AsyncCall<?>> liveCalls = java.util.concurrent.ConcurrentHashMap.newKeySet();
  private volatile boolean closed;

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
      this.ownedExecutor = io.retrybudget.internal.Schedulers.daemon("retry-executor");
      this.scheduler = RetryScheduler.of(ownedExecutor);
    } else {
      this.ownedExecutor = null;
      this.scheduler = b.scheduler;
    }
    this.nanoClock = b.nanoClock;
    this.sleeper = b.sleeper;
    this.random = b.random;
    this.listener = b.listener;
    this.hedging = b.hedging;
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
    return run(null, null, callable); // no adapter: the success path allocates nothing
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
    return run(idempotencyKey, function, null);
  }

  /** The synchronous loop, for an attempt function (with a context) or a plain callable (without). */
  private <T> T run(String idempotencyKey, AttemptFunction<T> function, Callable<T> callable) throws Exception {
    AttemptContext context = function != null ? new AttemptContext(idempotencyKey) : null;
    // the clock is read only where a deadline needs it: a successful call pays for no clock read
    boolean timed = policy.deadline() != null;
    long start = timed ? nanoClock.getAsLong() : 0;
    long previousDelay = 0;
    for (int attempt = 1; ; attempt++) {
      if (attempt == 1 && budget != null) {
        budget.recordFirstAttempt();
      }
      if (context != null) {
        context.startAttempt(attempt);
      }
      listener.onAttempt(attempt);
      T value = null;
      Throwable failure = null;
      try {
        value = context != null ? function.apply(context) : callable.call();
      } catch (Throwable t) {
        failure = t;
      }
      if (failure == null && !policy.shouldRetryResult(value)) {
        listener.onOutcome(RetryPlanner.Stop.SUCCESS, attempt); // the common case: no clock, no random draw
        return value;
      }
      RetryPlanner.Plan plan = planner.next(attempt, previousDelay, timed ? nanoClock.getAsLong() - start : 0, value,
          failure, context != null && context.hasIdempotencyKey(), random.getAsDouble());
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
        if (timed && !planner.fitsDeadline(nanoClock.getAsLong() - start, plan.delayNanos())) {
          // the budget call took the time the sleep needed
          listener.onOutcome(RetryPlanner.Stop.DEADLINE, attempt);
          if (failure != null) {
            throw asException(failure);
          }
          return value;
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
    if (closed) {
      call.result.completeExceptionally(new IllegalStateException("RetryExecutor is closed"));
      return call.result;
    }
    liveCalls.add(call);
    call.result.whenComplete((v, e) -> liveCalls.remove(call));
    call.guard(call::startRound);
    return call.result;
  }

  /**
   * One asynchronous call: rounds of attempts. A round starts one attempt and, with hedging, up to
   * {@code maxHedges} more after the hedge delay while it runs. The first success wins and the rest
   * are cancelled; a fatal failure ends the call; when every attempt of a round has failed the
   * planner decides on a retry (backoff, budget, deadline), which starts the next round. All state
   * changes happen under the call's lock; user code and budget calls run outside it.
   */
  private final class AsyncCall<T> {
    final Function<AttemptContext, ? extends CompletionStage<T>> supplier;
    final AttemptContext first;
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
    // guarded by this
    int attempts;
    int round;
    int hedgesInRound;
    long previousDelay;
    final java.util.List<Attempt> running = new java.util.ArrayList<>(2);
    RetryScheduler.Cancellable backoffTimer;
    RetryScheduler.Cancellable hedgeTimer;
    boolean hedgeAsking;

    final class Attempt {
      final int number;
      final boolean hedge;
      final long startedNanos;
      CompletableFuture<T> future;
      RetryScheduler.Cancellable timeout;

      Attempt(int number, boolean hedge, long startedNanos) {
        this.number = number;
        this.hedge = hedge;
        this.startedNanos = startedNanos;
      }

      void cancel() {
        if (timeout != null) {
          timeout.cancel();
        }
        if (future != null) {
          future.cancel(true);
        }
      }
    }

    AsyncCall(Function<AttemptContext, ? extends CompletionStage<T>> supplier, AttemptContext first) {
      this.supplier = supplier;
      this.first = first;
    }

    /**
     * Runs what follows a budget answer: at once when the budget answered on this thread (a local
     * budget, a cached refusal), else on the scheduler, so neither our listeners, the attempts a
     * hedge launches, nor the caller's continuations run on Redis's I/O thread or a JDK timer thread.
     */
    void afterBudget(CompletionStage<BudgetDecision> answer, BiConsumer<BudgetDecision, Throwable> then) {
      Thread asking = Thread.currentThread();
      answer.whenComplete((decision, error) -> {
        if (Thread.currentThread() == asking) {
          then.accept(decision, error);
          return;
        }
        try {
          scheduler.schedule(() -> then.accept(decision, error), 0);
        } catch (RuntimeException rejected) {
          then.accept(decision, error); // the scheduler is shut down: finish here rather than never
        }
      });
    }

    /**
     * Runs a step of the call; whatever it throws (a user predicate or listener, a refused timer,
     * a failing budget) ends the call with that failure instead of leaving it pending forever.
     */
    void guard(Runnable step) {
      try {
        step.run();
      } catch (Throwable t) {
        if (result.completeExceptionally(t)) {
          stopEverything();
        }
      }
    }

    /** Ends the call because the executor closed. */
    void abandon() {
      if (result.completeExceptionally(new IllegalStateException("RetryExecutor closed while the call ran"))) {
        stopEverything();
      }
    }

    void startRound() {
      int thisRound;
      synchronized (this) {
        if (result.isDone()) {
          return;
        }
        thisRound = ++round;
        hedgesInRound = 0;
      }
      launch(false, thisRound);
      scheduleHedge(thisRound);
    }

    /** Starts one attempt of round {@code thisRound}; returns false when none may start. */
    boolean launch(boolean hedge, int thisRound) {
      Attempt attempt;
      long allowed;
      synchronized (this) {
        if (result.isDone() || thisRound != round || attempts >= policy.maxAttempts()) {
          return false;
        }
        long elapsed = nanoClock.getAsLong() - start;
        allowed = planner.attemptBudgetNanos(elapsed);
        if (allowed <= 0) {
          return false;
        }
        attempt = new Attempt(++attempts, hedge, start + elapsed);
        running.add(attempt);
        if (hedge) {
          hedgesInRound++;
        }
      }
      if (attempt.number == 1 && budget != null) {
        budget.recordFirstAttempt();
      }
      if (hedge) {
        listener.onHedge(attempt.number);
      } else {
        listener.onAttempt(attempt.number);
      }
      AttemptContext context;
      if (attempt.number == 1) {
        first.startAttempt(1);
        context = first;
      } else {
        context = first.next(attempt.number, hedge, attempt.number - 1);
      }
      CompletableFuture<T> future;
      try {
        future = supplier.apply(context).toCompletableFuture();
      } catch (Throwable t) {
        future = CompletableFuture.failedFuture(t);
      }
      AtomicBoolean settled = new AtomicBoolean();
      CompletableFuture<T> f = future;
      synchronized (this) {
        attempt.future = f;
        if (allowed != Long.MAX_VALUE) {
          attempt.timeout = scheduler.schedule(() -> guard(() -> {
            if (settled.compareAndSet(false, true)) {
              f.cancel(true);
              onAttemptDone(attempt, null, new AttemptTimeoutException(java.time.Duration.ofNanos(allowed)));
            }
          }), allowed);
        }
      }
      f.whenComplete((value, error) -> guard(() -> {
        if (settled.compareAndSet(false, true)) {
          onAttemptDone(attempt, value, unwrap(error));
        }
      }));
      if (result.isDone()) {
        f.cancel(true); // the call ended while this attempt was being started
      }
      return true;
    }

    void scheduleHedge(int thisRound) {
      if (hedging == null) {
        return;
      }
      synchronized (this) {
        if (result.isDone() || thisRound != round || hedgesInRound >= hedging.maxHedges()
            || attempts >= policy.maxAttempts() || running.isEmpty()
            || (!policy.idempotent() && !first.hasIdempotencyKey())) {
          return;
        }
        hedgeTimer = scheduler.schedule(() -> guard(() -> hedgeDue(thisRound)), hedging.delayNanos());
      }
    }

    void hedgeDue(int thisRound) {
      synchronized (this) {
        if (result.isDone() || thisRound != round || running.isEmpty() || hedgeAsking) {
          return;
        }
        hedgeAsking = true;
      }
      if (budget == null) {
        hedgeGranted(thisRound);
        return;
      }
      afterBudget(budget.acquire(), (decision, error) -> guard(() -> {
        synchronized (this) {
          hedgeAsking = false;
        }
        if (error == null && decision.granted()) {
          hedgeGranted(thisRound);
        } else {
          // no hedge: the attempts already running keep going
          listener.onHedgeDenied(decision != null ? decision : BudgetDecision.DENIED_FALLBACK);
        }
      }));
    }

    void hedgeGranted(int thisRound) {
      synchronized (this) {
        hedgeAsking = false;
      }
      if (launch(true, thisRound)) {
        scheduleHedge(thisRound);
      }
    }

    void onAttemptDone(Attempt attempt, T value, Throwable failure) {
      RetryPlanner.Plan plan;
      java.util.List<Attempt> losers;
      boolean roundOver;
      synchronized (this) {
        if (attempt.timeout != null) {
          attempt.timeout.cancel();
        }
        if (!running.remove(attempt) || result.isDone()) {
          return; // cancelled as a loser, or the call is over
        }
        long now = nanoClock.getAsLong();
        plan = planner.next(attempts, previousDelay, now - start, value, failure, first.hasIdempotencyKey(),
            random.getAsDouble());
        boolean fatal = !plan.retry() && plan.stop() != RetryPlanner.Stop.MAX_ATTEMPTS
            && plan.stop() != RetryPlanner.Stop.DEADLINE && plan.stop() != RetryPlanner.Stop.SERVER_DELAY_TOO_LONG;
        if (!fatal && !running.isEmpty()) {
          return; // a non-fatal failure waits for the attempts still running
        }
        if (plan.stop() == RetryPlanner.Stop.SUCCESS && hedging != null) {
          hedging.recordLatency(now - attempt.startedNanos);
          // the attempts it beat took at least this long: without them the estimate forgets the
          // slow tail that hedging cuts off, and hedges ever earlier
          for (Attempt loser : running) {
            hedging.recordLatency(now - loser.startedNanos);
          }
        }
        roundOver = true;
        losers = new java.util.ArrayList<>(running);
        running.clear();
        if (hedgeTimer != null) {
          hedgeTimer.cancel();
        }
      }
      if (plan.stop() == RetryPlanner.Stop.SUCCESS && attempt.hedge) {
        listener.onHedgeWon(attempt.number);
      }
      if (!plan.retry()) {
        listener.onOutcome(plan.stop(), attempt.number);
        if (failure != null) {
          result.completeExceptionally(failure);
        } else {
          result.complete(value);
        }
        losers.forEach(Attempt::cancel); // after the answer is out: their cancellation changes nothing
        return;
      }
      losers.forEach(Attempt::cancel);
      if (budget == null) {
        scheduleRetry(attempt.number, plan.delayNanos(), failure);
        return;
      }
      afterBudget(budget.acquire(), (decision, error) -> guard(() -> {
        if (error != null || !decision.granted()) {
          BudgetDecision d = decision != null ? decision : BudgetDecision.DENIED_FALLBACK;
          listener.onBudgetDenied(d);
          result.completeExceptionally(new RetryBudgetExhaustedException(budget.name(), d, failure, value));
        } else if (!planner.fitsDeadline(nanoClock.getAsLong() - start, plan.delayNanos())) {
          // the budget call took the time the sleep needed
          listener.onOutcome(RetryPlanner.Stop.DEADLINE, attempt.number);
          if (failure != null) {
            result.completeExceptionally(failure);
          } else {
            result.complete(value);
          }
        } else {
          scheduleRetry(attempt.number, plan.delayNanos(), failure);
        }
      }));
    }

    void scheduleRetry(int number, long delayNanos, Throwable failure) {
      synchronized (this) {
        if (result.isDone()) {
          return;
        }
        previousDelay = delayNanos;
      }
      listener.onRetryScheduled(number + 1, delayNanos, failure);
      RetryScheduler.Cancellable timer = scheduler.schedule(() -> guard(this::startRound), delayNanos);
      synchronized (this) {
        backoffTimer = timer;
      }
      if (result.isDone()) {
        timer.cancel();
      }
    }

    void stopEverything() {
      java.util.List<Attempt> all;
      synchronized (this) {
        if (backoffTimer != null) {
          backoffTimer.cancel();
        }
        if (hedgeTimer != null) {
          hedgeTimer.cancel();
        }
        all = new java.util.ArrayList<>(running);
        running.clear();
      }
      all.forEach(Attempt::cancel);
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

  /**
   * Ends the asynchronous calls still running (their futures fail with IllegalStateException, their
   * attempts are cancelled) and stops the executor's own scheduler thread, if it made one.
   */
  @Override
  public void close() {
    closed = true;
    for (AsyncCall<?> call : liveCalls.toArray(new AsyncCall<?>[0])) {
      call.abandon();
    }
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
    private HedgePolicy hedging;

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

    /**
     * Hedged requests for {@link RetryExecutor#callAsync} calls (synchronous calls run one attempt
     * at a time and never hedge). A non-idempotent call is hedged only when it carries a key.
     */
    public Builder hedging(HedgePolicy hedging) {
      this.hedging = Objects.requireNonNull(hedging, "hedging must not be null");
      return this;
    }

    public RetryExecutor build() {
      return new RetryExecutor(this);
    }
  }
}
