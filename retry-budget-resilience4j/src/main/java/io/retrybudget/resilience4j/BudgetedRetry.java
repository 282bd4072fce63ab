package io.retrybudget.resilience4j;

import io.github.resilience4j.core.functions.CheckedSupplier;
import io.github.resilience4j.retry.Retry;
import io.github.resilience4j.retry.RetryConfig;
import io.github.resilience4j.retry.RetryRegistry;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.retry.RetryBudgetExhaustedException;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.Predicate;
import java.util.function.Supplier;

/**
 * A Resilience4j {@link Retry} whose retries are paid for by a (fleet-wide) {@link RetryBudget}.
 *
 * <ul>
 *   <li>Every call counts one first attempt ({@link RetryBudget#recordFirstAttempt()}: no I/O, no
 *       allocation).
 *   <li>Every time Resilience4j has decided to retry (the failure or result is retryable and
 *       attempts are left), the budget is asked before Resilience4j waits. Granted: Resilience4j
 *       waits its own interval and retries. Denied: the call ends at once, without waiting, with a
 *       {@link RetryBudgetExhaustedException} whose cause is the last failure (or whose
 *       {@code lastResult()} is the last retryable result).
 *   <li>Resilience4j does the rest as configured: its interval function, predicates, events and
 *       metrics are those of the {@link Retry} inside, which this one delegates to.
 * </ul>
 *
 * <p>Every way Resilience4j runs a {@link Retry} works: {@code executeCallable},
 * {@code executeSupplier}, {@code Retry.decorateCallable(retry, ...)}, {@code decorateSupplier},
 * {@code decorateCheckedSupplier}, ... On those synchronous paths the budget is asked on the
 * caller's thread, which waits at most the budget's call timeout (20 ms by default for a Redis
 * budget). {@link #executeCompletionStage} and {@link #decorateCompletionStage(ScheduledExecutorService,
 * Supplier)} (which Resilience4j's Spring and Micronaut aspects call) ask with
 * {@link RetryBudget#acquire()} and never block a thread. Drivers that take {@link #asyncContext()}
 * themselves (the static {@code Retry.decorateCompletionStage}, {@code Decorators}, the Reactor and
 * RxJava operators) need an answer synchronously: there the budget is asked like on the synchronous
 * paths, with a wait bounded by its call timeout on the thread that completed the attempt.
 *
 * <pre>{@code
 * Retry retry = BudgetedRetry.of("payments", RetryConfig.custom().maxAttempts(3).build(), payments);
 * String body = retry.executeCallable(() -> client.fetch());
 * }</pre>
 */
public final class BudgetedRetry implements Retry {
  private final Retry delegate;
  private final RetryConfig config;
  private final RetryBudget budget;
  private final BudgetGate<Object> gate;

  private BudgetedRetry(String name, RetryConfig config, Map<String, String> tags, RetryBudget budget) {
    Objects.requireNonNull(name, "name must not be null");
    this.config = Objects.requireNonNull(config, "config must not be null");
    this.budget = Objects.requireNonNull(budget, "budget must not be null");
    Objects.requireNonNull(tags, "tags must not be null");
    this.gate = new BudgetGate<>(config.getIntervalBiFunction(), budget);
    // the same configuration, with the budget asked where Resilience4j computes the wait: the one
    // point between "this will be retried" and the wait, for exceptions and results alike
    NeverRetryRefusals exceptions = new NeverRetryRefusals(config.getExceptionPredicate());
    RetryConfig gated = RetryConfig.from(config)
        .retryOnException(exceptions)
        .retryExceptions()
        .ignoreExceptions()
        .intervalBiFunction(gate)
        .build();
    this.delegate = Retry.of(name, gated, tags);
  }

  /** A retry named {@code name} with Resilience4j's {@code config}, whose retries {@code budget} pays for. */
  public static BudgetedRetry of(String name, RetryConfig config, RetryBudget budget) {
    return new BudgetedRetry(name, config, Map.of(), budget);
  }

  /** The same with Resilience4j tags (as {@code Retry.of(name, config, tags)}). */
  public static BudgetedRetry of(String name, RetryConfig config, Map<String, String> tags, RetryBudget budget) {
    return new BudgetedRetry(name, config, tags, budget);
  }

  /**
   * A budgeted retry with the name, configuration and tags of {@code retry}. It is a new instance:
   * event consumers registered on {@code retry} do not see its calls; register them on this one.
   */
  public static BudgetedRetry attach(Retry retry, RetryBudget budget) {
    Objects.requireNonNull(retry, "retry must not be null");
    if (retry instanceof BudgetedRetry) {
      throw new IllegalArgumentException("retry '" + retry.getName() + "' already has a budget attached");
    }
    return new BudgetedRetry(retry.getName(), retry.getRetryConfig(), retry.getTags(), budget);
  }

  /**
   * The retry named {@code name} in {@code registry} (created from its configuration if missing),
   * with {@code budget} attached and put in its place in the registry, so that what reads the
   * registry (for instance Resilience4j's Micrometer {@code TaggedRetryMetrics}, which follows
   * replacements) sees the budgeted one.
   */
  public static BudgetedRetry attach(RetryRegistry registry, String name, RetryBudget budget) {
    Objects.requireNonNull(registry, "registry must not be null");
    BudgetedRetry budgeted = attach(registry.retry(name), budget);
    registry.replace(name, budgeted);
    return budgeted;
  }

  /** The budget that pays for this retry's retries. */
  public RetryBudget budget() {
    return budget;
  }

  @Override
  public String getName() {
    return delegate.getName();
  }

  @Override
  public <T> Context<T> context() {
    budget.recordFirstAttempt();
    return delegate.context();
  }

  // The execute... methods count here and run Resilience4j's own loop on the delegate (which uses
  // the delegate's context, so nothing is counted twice). Not through this.context(): that would
  // add the count to Resilience4j's decorated lambda, which then grows past the JIT's inlining limit
  // for already compiled code (InlineSmallCode) in some runs, and its context stops being
  // scalar-replaced (measured: +56 B per call in 2 of 4 forks).

  @Override
  public <T> T executeCallable(Callable<T> callable) throws Exception {
    budget.recordFirstAttempt();
    return delegate.executeCallable(callable);
  }

  @Override
  public <T> T executeSupplier(Supplier<T> supplier) {
    budget.recordFirstAttempt();
    return delegate.executeSupplier(supplier);
  }

  @Override
  public <T> T executeCheckedSupplier(CheckedSupplier<T> supplier) throws Throwable {
    budget.recordFirstAttempt();
    return delegate.executeCheckedSupplier(supplier);
  }

  @Override
  public void executeRunnable(Runnable runnable) {
    budget.recordFirstAttempt();
    delegate.executeRunnable(runnable);
  }

  /**
   * For drivers that run attempts themselves and need the decision synchronously: the budget is
   * asked with a wait bounded by its call timeout. {@link #executeCompletionStage} does not wait.
   */
  @Override
  public <T> AsyncContext<T> asyncContext() {
    budget.recordFirstAttempt();
    return delegate.asyncContext();
  }

  /** The configuration this retry was made with (the budget is not part of it). */
  @Override
  public RetryConfig getRetryConfig() {
    return config;
  }

  @Override
  public Map<String, String> getTags() {
    return delegate.getTags();
  }

  @Override
  public EventPublisher getEventPublisher() {
    return delegate.getEventPublisher();
  }

  @Override
  public Metrics getMetrics() {
    return delegate.getMetrics();
  }

  /**
   * Runs the stage with retries; the budget is asked with {@link RetryBudget#acquire()}, no thread
   * waits for it. Attempts after the first run on {@code scheduler}; the returned stage completes
   * on the thread that completed the last attempt or on {@code scheduler}, never on the budget's
   * I/O thread. Cancelling it stops further attempts.
   */
  @Override
  public <T> CompletionStage<T> executeCompletionStage(ScheduledExecutorService scheduler,
      Supplier<CompletionStage<T>> supplier) {
    Objects.requireNonNull(scheduler, "scheduler must not be null");
    Objects.requireNonNull(supplier, "supplier must not be null");
    budget.recordFirstAttempt();
    BudgetedAsyncCall<T> call = new BudgetedAsyncCall<>(this, delegate.asyncContext(), scheduler, supplier);
    call.run();
    return call.promise();
  }

  @Override
  public <T> Supplier<CompletionStage<T>> decorateCompletionStage(ScheduledExecutorService scheduler,
      Supplier<CompletionStage<T>> supplier) {
    return () -> executeCompletionStage(scheduler, supplier);
  }

  BudgetGate<Object> gate() {
    return gate;
  }

  @Override
  public String toString() {
    return "BudgetedRetry{name=" + getName() + ", budget=" + budget.name() + "}";
  }

  /**
   * Resilience4j's exception predicate, except that a budget refusal is never retried: one raised
   * while Resilience4j looks at a result reaches its error handling, and one raised by a nested
   * budgeted call deeper down is not retried at this layer either (retry at the edge only).
   */
  private static final class NeverRetryRefusals implements Predicate<Throwable> {
    private final Predicate<Throwable> retryable;

    NeverRetryRefusals(Predicate<Throwable> retryable) {
      this.retryable = retryable;
    }

    @Override
    public boolean test(Throwable failure) {
      return !(failure instanceof RetryBudgetExhaustedException) && retryable.test(failure);
    }
  }
}
