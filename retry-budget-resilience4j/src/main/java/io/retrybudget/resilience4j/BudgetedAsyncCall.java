package io.retrybudget.resilience4j;

import io.github.resilience4j.retry.Retry;
import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.retry.RetryBudgetExhaustedException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * One call of {@link BudgetedRetry#executeCompletionStage}: Resilience4j's own async loop (its
 * {@code AsyncRetryBlock}), with the budget's answer awaited without blocking when it is not at
 * hand. Resilience4j's {@link Retry.AsyncContext} decides and counts, as in its own loop.
 *
 * <p>State: at most one of {an attempt in flight, a budget answer awaited, a scheduled attempt} at a
 * time, until {@link #promise} completes; once it has (cancelled included) nothing more starts.
 */
final class BudgetedAsyncCall<T> implements Runnable {
  private final BudgetedRetry retry;
  private final Retry.AsyncContext<T> context;
  private final ScheduledExecutorService scheduler;
  private final Supplier<CompletionStage<T>> supplier;
  private final CompletableFuture<T> promise = new CompletableFuture<>();
  // set by the gate, on this call's thread, while Resilience4j decides: the budget's pending answer
  private CompletableFuture<BudgetDecision> pendingAnswer;
  private volatile Future<?> scheduled;

  BudgetedAsyncCall(BudgetedRetry retry, Retry.AsyncContext<T> context, ScheduledExecutorService scheduler,
      Supplier<CompletionStage<T>> supplier) {
    this.retry = retry;
    this.context = context;
    this.scheduler = scheduler;
    this.supplier = supplier;
    promise.whenComplete((result, failure) -> {
      Future<?> next = scheduled;
      if (next != null && promise.isCancelled()) {
        next.cancel(false);
      }
    });
  }

  CompletableFuture<T> promise() {
    return promise;
  }

  /** One attempt. */
  @Override
  public void run() {
    if (promise.isDone()) {
      return;
    }
    CompletionStage<T> stage;
    try {
      stage = supplier.get();
      if (stage == null) {
        stage = CompletableFuture.failedFuture(new NullPointerException("the supplier returned no CompletionStage"));
      }
    } catch (RuntimeException e) {
      stage = CompletableFuture.failedFuture(e); // like an attempt that failed
    }
    stage.whenComplete(this::onAttempt);
  }

  private void onAttempt(T result, Throwable failure) {
    if (promise.isDone()) {
      return;
    }
    try {
      if (failure != null) {
        if (!(failure instanceof Exception)) {
          promise.completeExceptionally(failure); // an Error: not Resilience4j's to retry
          return;
        }
        long delay = retry.gate().decideFor(this, () -> context.onError(failure));
        if (delay < 0) {
          promise.completeExceptionally(failure);
          return;
        }
        next(delay, failure, null);
      } else {
        long delay = retry.gate().decideFor(this, () -> context.onResult(result));
        if (delay < 0) {
          context.onComplete();
          promise.complete(result);
          return;
        }
        next(delay, null, result);
      }
    } catch (Throwable e) {
      // a refusal answered at once, or Resilience4j's MaxRetriesExceededException
      promise.completeExceptionally(e);
    }
  }

  /** Called by the gate while Resilience4j decides: the budget has not answered yet. */
  void awaitBudget(CompletableFuture<BudgetDecision> answer) {
    pendingAnswer = answer;
  }

  private void next(long delay, Throwable failure, T result) {
    CompletableFuture<BudgetDecision> answer = pendingAnswer;
    pendingAnswer = null;
    if (answer == null) {
      schedule(delay); // granted at once
      return;
    }
    // completes on the budget's I/O or timer thread: only scheduling happens there
    answer.whenComplete((decision, error) -> {
      if (error == null && decision.granted()) {
        schedule(delay);
      } else if (error == null) {
        completeOnScheduler(new RetryBudgetExhaustedException(retry.budget().name(), decision, cause(failure), result));
      } else {
        completeOnScheduler(error);
      }
    });
  }

  private void schedule(long delayMillis) {
    if (promise.isDone()) {
      return;
    }
    try {
      scheduled = scheduler.schedule(this, delayMillis, TimeUnit.MILLISECONDS);
    } catch (RejectedExecutionException e) {
      promise.completeExceptionally(e);
    }
  }

  private void completeOnScheduler(Throwable failure) {
    try {
      scheduler.execute(() -> promise.completeExceptionally(failure));
    } catch (RejectedExecutionException e) {
      promise.completeExceptionally(failure);
    }
  }

  /** The failure as Resilience4j's predicates saw it. */
  private static Throwable cause(Throwable failure) {
    if ((failure instanceof CompletionException || failure instanceof ExecutionException) && failure.getCause() != null) {
      return failure.getCause();
    }
    return failure;
  }
}
