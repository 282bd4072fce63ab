package io.retrybudget.resilience4j;

import io.github.resilience4j.core.IntervalBiFunction;
import io.github.resilience4j.core.functions.Either;
import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.retry.RetryBudgetExhaustedException;
import java.util.concurrent.CompletableFuture;
import java.util.function.LongSupplier;

/**
 * Resilience4j's interval function with the budget in front of it. Resilience4j calls its interval
 * function exactly when it has decided to retry (retryable failure or result, attempts left) and
 * before it publishes the retry event and waits: the budget is asked there.
 *
 * <p>On the synchronous paths the answer is waited for (bounded by the budget's call timeout). A
 * {@link BudgetedAsyncCall} marks its own thread while it hands an outcome to Resilience4j: then an
 * answer at hand (a cached "exhausted", a local budget) is used at once and a pending one is handed
 * to the call, which waits for it without blocking.
 */
final class BudgetGate<T> implements IntervalBiFunction<T> {
  private final IntervalBiFunction<T> interval;
  private final RetryBudget budget;
  // the async call whose outcome Resilience4j is deciding on this thread, if any
  private final ThreadLocal<BudgetedAsyncCall<?>> asyncCall = new ThreadLocal<>();

  BudgetGate(IntervalBiFunction<T> interval, RetryBudget budget) {
    this.interval = interval;
    this.budget = budget;
  }

  @Override
  public Long apply(Integer attempt, Either<Throwable, T> outcome) {
    Long wait = interval.apply(attempt, outcome);
    if (wait == null || wait < 0) {
      return wait; // Resilience4j ends the call itself: no retry to pay for
    }
    BudgetedAsyncCall<?> call = asyncCall.get();
    BudgetDecision decision;
    if (call == null) {
      decision = decideBlocking();
    } else {
      asyncCall.remove(); // one decision per hand-over, whatever listeners run next
      CompletableFuture<BudgetDecision> answer = budget.acquire().toCompletableFuture();
      if (!answer.isDone() || answer.isCompletedExceptionally()) {
        call.awaitBudget(answer);
        return wait;
      }
      decision = answer.join();
    }
    if (decision.granted()) {
      return wait;
    }
    throw new RetryBudgetExhaustedException(budget.name(), decision,
        outcome.isLeft() ? outcome.getLeft() : null, outcome.isRight() ? outcome.get() : null);
  }

  /** The one place a blocking decision is asked for. */
  private BudgetDecision decideBlocking() {
    return budget.acquireBlocking();
  }

  /** Runs one of Resilience4j's async decisions for {@code call} on this thread. */
  long decideFor(BudgetedAsyncCall<?> call, LongSupplier decision) {
    asyncCall.set(call);
    try {
      return decision.getAsLong();
    } finally {
      asyncCall.remove();
    }
  }
}
