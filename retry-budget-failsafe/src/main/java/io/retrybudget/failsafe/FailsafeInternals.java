package io.retrybudget.failsafe;

import dev.failsafe.ExecutionContext;
import dev.failsafe.RetryPolicy;
import dev.failsafe.RetryPolicyConfig;
import dev.failsafe.internal.RetryPolicyExecutor;
import dev.failsafe.internal.RetryPolicyImpl;
import dev.failsafe.spi.AsyncExecutionInternal;
import dev.failsafe.spi.ExecutionResult;
import dev.failsafe.spi.FailsafeFuture;
import dev.failsafe.spi.PolicyExecutor;
import dev.failsafe.spi.Scheduler;
import dev.failsafe.spi.SyncExecutionInternal;
import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.retry.RetryBudgetExhaustedException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * The one class that uses Failsafe's internal classes ({@code dev.failsafe.internal}): Failsafe 3.3
 * has no public hook between "the retry policy decided to retry" and "it waits", so the budgeted
 * policy is Failsafe's own {@link RetryPolicyImpl} whose executor, a {@link RetryPolicyExecutor},
 * pays for each retry it decided on. {@link #check()} runs before the first budgeted policy is built
 * and refuses a Failsafe whose internals are not the ones this was built against.
 */
final class FailsafeInternals {
  /** The Failsafe version this module is built and tested against. */
  static final String BUILT_FOR = "3.3.2";

  private static volatile String problem; // null: checked and fine
  private static volatile boolean checked;

  private FailsafeInternals() {}

  static <R> RetryPolicy<R> budgeted(RetryPolicy<R> policy, RetryBudget budget) {
    check();
    return new Budgeted<>(policy.getConfig(), budget);
  }

  static boolean isBudgeted(RetryPolicy<?> policy) {
    return policy instanceof Budgeted;
  }

  static RetryBudget budgetOf(RetryPolicy<?> policy) {
    return policy instanceof Budgeted ? ((Budgeted<?>) policy).budget : null;
  }

  /**
   * Checks, once, that the Failsafe on the class path has the internal methods the budgeted policy
   * overrides or calls, with the signatures it was compiled against.
   *
   * @throws IllegalStateException naming the version this was built for and what is missing
   */
  static void check() {
    if (!checked) {
      problem = findProblem();
      checked = true;
    }
    if (problem != null) {
      throw new IllegalStateException("retry-budget-failsafe is built for Failsafe " + BUILT_FOR
          + " and uses its retry policy's internals; the Failsafe on the class path ("
          + failsafeVersion() + ") " + problem);
    }
  }

  static String findProblem() {
    try {
      Class<?> executor = RetryPolicyExecutor.class;
      executor.getConstructor(RetryPolicyImpl.class, int.class);
      executor.getMethod("onFailure", ExecutionContext.class, ExecutionResult.class);
      executor.getMethod("onFailureAsync", ExecutionContext.class, ExecutionResult.class, Scheduler.class,
          FailsafeFuture.class);
      executor.getMethod("apply", Function.class, Scheduler.class);
      executor.getMethod("applyAsync", Function.class, Scheduler.class, FailsafeFuture.class);
      RetryPolicyImpl.class.getConstructor(RetryPolicyConfig.class);
      RetryPolicyImpl.class.getMethod("toExecutor", int.class);
      if (!(RetryPolicy.ofDefaults() instanceof RetryPolicyImpl)) {
        return "builds retry policies that are not RetryPolicyImpl";
      }
      return null;
    } catch (ReflectiveOperationException | LinkageError e) {
      return "lacks " + e.getMessage();
    }
  }

  private static String failsafeVersion() {
    String version = RetryPolicy.class.getPackage().getImplementationVersion();
    return version == null ? "version unknown" : version;
  }

  /** Failsafe's retry policy with the same configuration, whose executions pay from a budget. */
  static final class Budgeted<R> extends RetryPolicyImpl<R> {
    final RetryBudget budget;

    Budgeted(RetryPolicyConfig<R> config, RetryBudget budget) {
      super(config);
      this.budget = budget;
    }

    @Override
    public PolicyExecutor<R> toExecutor(int policyIndex) {
      return new Executor<>(this, policyIndex, budget);
    }

    @Override
    public String toString() {
      return "BudgetedRetryPolicy[" + budget.name() + "]";
    }
  }

  /**
   * Failsafe makes one executor per execution. It counts the execution's first attempt when the
   * execution starts, and asks the budget after Failsafe's own decision whenever that decision is
   * "retry after a delay".
   */
  static final class Executor<R> extends RetryPolicyExecutor<R> {
    private final RetryBudget budget;

    Executor(RetryPolicyImpl<R> policy, int policyIndex, RetryBudget budget) {
      super(policy, policyIndex);
      this.budget = budget;
    }

    @Override
    public Function<SyncExecutionInternal<R>, ExecutionResult<R>> apply(
        Function<SyncExecutionInternal<R>, ExecutionResult<R>> innerFn, Scheduler scheduler) {
      Function<SyncExecutionInternal<R>, ExecutionResult<R>> retrying = super.apply(innerFn, scheduler);
      return execution -> {
        budget.recordFirstAttempt();
        return retrying.apply(execution);
      };
    }

    @Override
    public Function<AsyncExecutionInternal<R>, CompletableFuture<ExecutionResult<R>>> applyAsync(
        Function<AsyncExecutionInternal<R>, CompletableFuture<ExecutionResult<R>>> innerFn, Scheduler scheduler,
        FailsafeFuture<R> future) {
      Function<AsyncExecutionInternal<R>, CompletableFuture<ExecutionResult<R>>> retrying =
          super.applyAsync(innerFn, scheduler, future);
      return execution -> {
        if (!execution.isRecorded()) {
          // an async execution's recorded outcome comes back through this function: not a new start
          budget.recordFirstAttempt();
        }
        return retrying.apply(execution);
      };
    }

    /** Synchronous executions: Failsafe's decision, then a blocking ask when it says "retry". */
    @Override
    public ExecutionResult<R> onFailure(ExecutionContext<R> context, ExecutionResult<R> result) {
      ExecutionResult<R> decided = super.onFailure(context, result);
      if (decided.isComplete()) {
        return decided;
      }
      BudgetDecision answer;
      try {
        answer = budget.acquireBlocking();
      } catch (RuntimeException e) {
        answer = null;
      }
      return pay(decided, answer);
    }

    /**
     * Asynchronous executions: Failsafe's decision as its own {@code onFailureAsync} makes it (its
     * synchronous {@code onFailure} on a result marked not complete), then an ask that blocks no
     * thread. An answer that came on another thread (Redis's I/O thread) is handed back through
     * Failsafe's scheduler, so the caller's continuations never run on it.
     */
    @Override
    public CompletableFuture<ExecutionResult<R>> onFailureAsync(ExecutionContext<R> context,
        ExecutionResult<R> result, Scheduler scheduler, FailsafeFuture<R> future) {
      ExecutionResult<R> decided;
      try {
        decided = super.onFailure(context, result.withNotComplete());
      } catch (Throwable t) {
        return CompletableFuture.failedFuture(t);
      }
      if (decided.isComplete()) {
        return CompletableFuture.completedFuture(decided);
      }
      CompletionStage<BudgetDecision> answer;
      try {
        answer = budget.acquire();
      } catch (RuntimeException e) {
        answer = CompletableFuture.completedFuture(null);
      }
      CompletableFuture<ExecutionResult<R>> paid = new CompletableFuture<>();
      Thread asking = Thread.currentThread();
      answer.whenComplete((decision, error) -> {
        ExecutionResult<R> outcome = pay(decided, error == null ? decision : null);
        if (Thread.currentThread() == asking) {
          paid.complete(outcome);
          return;
        }
        try {
          scheduler.schedule(() -> paid.complete(outcome), 0, TimeUnit.NANOSECONDS);
        } catch (RuntimeException rejected) {
          paid.complete(outcome); // the scheduler is shut down: finish here rather than never
        }
      });
      return paid;
    }

    /** A granted permit keeps Failsafe's "retry after the delay"; anything else ends the execution. */
    private ExecutionResult<R> pay(ExecutionResult<R> decided, BudgetDecision answer) {
      if (answer != null && answer.granted()) {
        return decided;
      }
      BudgetDecision why = answer != null ? answer : BudgetDecision.DENIED_FALLBACK; // no answer: a refusal
      return ExecutionResult.exception(new RetryBudgetExhaustedException(budget.name(), why,
          decided.getException(), decided.getResult()));
    }
  }
}
