package io.retrybudget.retry;

import io.retrybudget.budget.RetryBudget;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.DoubleSupplier;
import java.util.function.Function;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * Runs calls with the retries of a {@link RetryPolicy}, asking a {@link RetryBudget} (when given)
 * before every retry and hedge: a denial ends the call at once with {@link RetryBudgetExhaustedException}.
 *
 * <p>With a budget attached, the executor counts every call's first attempt in it, exactly once,
 * on both paths: do not call {@link RetryBudget#recordFirstAttempt()} yourself for calls you run
 * through an executor (or a {@code RetryingHttpClient}), or the fleet counts them twice.
 *
 * <p>{@link #call} runs every attempt on the caller's thread and sleeps there; it honours the
 * deadline (re-reading the clock after every sleep) and interruption, but cannot cut a blocking
 * attempt short. {@link #callAsync} runs on a shared scheduler (no thread per retry): the deadline
 * bounds the whole call, the per-attempt timeout cancels the attempt in flight, and completing the
 * returned future in any way (cancel, complete, orTimeout ...) stops the sleep and the attempts.
 * Both paths take their decisions from one {@link RetryPlanner}: the synchronous one is the loop of
 * {@code SyncCall}, the asynchronous one the state machine of {@code CallState} (state and
 * transitions) run by {@code AsyncCall} (the lock, and the actions outside it).
 */
public final class RetryExecutor implements AutoCloseable {
  final RetryPolicy policy;
  final RetryPlanner planner;
  final RetryBudget budget;
  final RetryScheduler scheduler;
  final LongSupplier nanoClock;
  final Sleeper sleeper;
  final DoubleSupplier random;
  final Listeners listeners;
  final HedgePolicy hedging;
  final Set<AsyncCall<?>> liveCalls; // the async calls still running, for close()
  private final ScheduledExecutorService ownedExecutor;
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
    this.listeners = new Listeners(b.listeners);
    this.hedging = b.hedging;
    this.liveCalls = b.liveCalls != null ? b.liveCalls : ConcurrentHashMap.newKeySet();
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
    return SyncCall.run(this, policy, planner, null, null, callable); // no adapter: the success path allocates nothing
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
    return SyncCall.run(this, policy, planner, idempotencyKey, function, null);
  }

  /**
   * As {@link #call(String, AttemptFunction)}, with the whole call bounded by {@code deadline}
   * from now as well as by the policy's own deadline, whichever is earlier (see
   * {@link #callAsync(String, java.time.Duration, Function)}). A deadline that is zero or
   * negative throws {@link AttemptTimeoutException} at once, no attempt started; null is the
   * policy's deadline alone.
   */
  public <T> T call(String idempotencyKey, java.time.Duration deadline, AttemptFunction<T> function) throws Exception {
    Objects.requireNonNull(function, "attempt must not be null");
    if (deadline == null) {
      return call(idempotencyKey, function);
    }
    if (deadline.isNegative() || deadline.isZero()) {
      listeners.forCall().onOutcome(RetryOutcome.DEADLINE, 0);
      throw new AttemptTimeoutException(deadline);
    }
    RetryPolicy capped = policy.withDeadlineAtMost(deadline);
    return SyncCall.run(this, capped, capped == policy ? planner : new RetryPlanner(capped), idempotencyKey, function, null);
  }

  /**
   * Runs the attempts {@code attempt} supplies, with retries, without blocking. The first attempt
   * starts on this thread; one whose stage is already complete with a result the policy accepts is
   * answered at once, as the synchronous path answers it. Complete the returned future in any way
   * (cancel, complete, orTimeout ...) to stop the call.
   */
  public <T> CompletableFuture<T> callAsync(Supplier<? extends CompletionStage<T>> attempt) {
    Objects.requireNonNull(attempt, "attempt must not be null");
    return begin(policy, planner, null, attempt, null);
  }

  /** As {@link #callAsync(Supplier)}, telling each attempt its number and the call's idempotency key. */
  public <T> CompletableFuture<T> callAsync(Function<AttemptContext, ? extends CompletionStage<T>> attempt) {
    return callAsync(null, attempt);
  }

  /** As {@link #callAsync(Function)} with the caller's own idempotency key (null: made on demand). */
  public <T> CompletableFuture<T> callAsync(String idempotencyKey,
      Function<AttemptContext, ? extends CompletionStage<T>> attempt) {
    Objects.requireNonNull(attempt, "attempt must not be null");
    return begin(policy, planner, new AttemptContext(idempotencyKey, nanoClock), null, attempt);
  }

  /**
   * As {@link #callAsync(String, Function)}, with the whole call bounded by {@code deadline} from
   * now as well as by the policy's own deadline, whichever is earlier (the attempt timeout is cut
   * to it too). For a server that propagates its caller's deadline to its own dependencies (what
   * is left of an inbound {@code X-Request-Deadline-Ms}): no attempt starts that the time left
   * cannot hold, and each attempt tells its server how long it is waited for. A deadline that is
   * zero or negative ends the call at once with {@link AttemptTimeoutException}, outcome
   * {@code DEADLINE}, no attempt started; null is the policy's deadline alone.
   */
  public <T> CompletableFuture<T> callAsync(String idempotencyKey, java.time.Duration deadline,
      Function<AttemptContext, ? extends CompletionStage<T>> attempt) {
    Objects.requireNonNull(attempt, "attempt must not be null");
    if (deadline == null) {
      return callAsync(idempotencyKey, attempt);
    }
    if (deadline.isNegative() || deadline.isZero()) {
      listeners.forCall().onOutcome(RetryOutcome.DEADLINE, 0);
      return CompletableFuture.failedFuture(new AttemptTimeoutException(deadline));
    }
    RetryPolicy capped = policy.withDeadlineAtMost(deadline);
    return begin(capped, capped == policy ? planner : new RetryPlanner(capped),
        new AttemptContext(idempotencyKey, nanoClock), null, attempt);
  }

  /**
   * Sends the first attempt; hands the call to the state machine ({@code AsyncCall}) unless it has
   * already succeeded. Nothing is allocated for a first attempt that succeeded at once beyond the
   * completed future returned.
   */
  private <T> CompletableFuture<T> begin(RetryPolicy policy, RetryPlanner planner, AttemptContext context,
      Supplier<? extends CompletionStage<T>> supplier, Function<AttemptContext, ? extends CompletionStage<T>> function) {
    if (closed) {
      return CompletableFuture.failedFuture(new IllegalStateException("RetryExecutor is closed"));
    }
    // the clock is read only where a timer or an adaptive hedge needs the start
    boolean timed = policy.deadline() != null || policy.attemptTimeout() != null || hedging != null;
    long start = timed ? nanoClock.getAsLong() : 0;
    boolean bounded = policy.deadline() != null || policy.attemptTimeout() != null;
    if (budget != null) {
      budget.recordFirstAttempt(); // the executor is the only place that counts a call's first attempt
    }
    Listeners listeners = this.listeners.forCall(); // the executor's own unless one keeps state per call
    listeners.onAttempt(1);
    CompletableFuture<T> first;
    try {
      if (context != null) {
        context.startAttempt(1, bounded ? AttemptContext.answerBy(start, planner.attemptBudgetNanos(0)) : AttemptContext.UNBOUNDED);
      }
      first = (context != null ? function.apply(context) : supplier.get()).toCompletableFuture();
    } catch (Throwable t) {
      first = CompletableFuture.failedFuture(t);
    }
    listeners.onAttemptSent(1);
    T value = null;
    RetryPlanner.Verdict verdict = null;
    double draw = 0;
    if (first.isDone() && !first.isCompletedExceptionally()) {
      value = first.join();
      listeners.onAttemptEnded(1, value, null);
      try {
        verdict = planner.judge(value, null);
        draw = verdict.retryable() ? random.getAsDouble() : 0;
      } catch (Throwable t) {
        listeners.onOutcome(RetryOutcome.ERROR, 1);
        return CompletableFuture.failedFuture(t);
      }
      if (verdict == RetryPlanner.Verdict.ACCEPTED) {
        listeners.onOutcome(RetryOutcome.SUCCESS, 1);
        return CompletableFuture.completedFuture(value);
      }
    }
    AsyncCall<T> call = new AsyncCall<>(this, listeners, policy, planner, supplier, function, context,
        timed ? start : nanoClock.getAsLong(), first);
    liveCalls.add(call);
    call.start(value, verdict, draw);
    if (closed) {
      call.close(); // checked after the add: a close() running meanwhile either saw this call or is seen here
    }
    return call.result;
  }

  /**
   * Ends the asynchronous calls still running (their futures fail with IllegalStateException, their
   * attempts are cancelled) and stops the executor's own scheduler thread, if it made one. Calls
   * made after it fail the same way.
   */
  @Override
  public void close() {
    closed = true;
    for (AsyncCall<?> call : liveCalls.toArray(new AsyncCall<?>[0])) {
      call.close();
    }
    if (ownedExecutor != null) {
      ownedExecutor.shutdownNow();
    }
  }

  /** Validates every value as it is set; {@link #build()} copies it, so a built executor never changes. */
  public static final class Builder {
    private final RetryPolicy policy;
    private RetryBudget budget;
    private RetryScheduler scheduler;
    private LongSupplier nanoClock = System::nanoTime;
    private Sleeper sleeper = nanos -> TimeUnit.NANOSECONDS.sleep(nanos);
    private DoubleSupplier random = () -> ThreadLocalRandom.current().nextDouble();
    private final List<RetryListener> listeners = new ArrayList<>(1);
    private HedgePolicy hedging;
    private Set<AsyncCall<?>> liveCalls;

    private Builder(RetryPolicy policy) {
      this.policy = Objects.requireNonNull(policy, "policy must not be null");
    }

    /**
     * The fleet-wide (or local) budget asked before every retry and hedge; none by default. The
     * executor counts each call's first attempt in it: do not count them yourself.
     */
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

    /**
     * Adds a listener; call it again to add more. Each is isolated: an exception it throws is logged
     * once for that listener and never changes the call's outcome.
     */
    public Builder listener(RetryListener listener) {
      Objects.requireNonNull(listener, "listener must not be null");
      if (listener != RetryListener.NONE) {
        listeners.add(listener);
      }
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

    /**
     * The set the executor registers its running async calls in (a concurrent one, used by this
     * executor alone); by default a new {@code ConcurrentHashMap} key set. Package-private: a seam
     * for tests that act at the moment a call is registered (a {@code close()} racing
     * {@code callAsync}).
     */
    Builder liveCalls(Set<AsyncCall<?>> liveCalls) {
      this.liveCalls = Objects.requireNonNull(liveCalls, "liveCalls must not be null");
      return this;
    }

    public RetryExecutor build() {
      return new RetryExecutor(this);
    }
  }
}
