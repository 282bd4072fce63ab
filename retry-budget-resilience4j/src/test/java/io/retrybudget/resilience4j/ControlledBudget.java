package io.retrybudget.resilience4j;

import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.budget.RetryBudget;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A budget whose answers the test gives, later: {@link #acquire()} returns a stage that stays
 * pending until the test completes it. {@link #acquireBlocking()} fails the test: the asynchronous path
 * must never ask the blocking way.
 */
final class ControlledBudget implements RetryBudget {
  final AtomicInteger firstAttempts = new AtomicInteger();
  private final List<CompletableFuture<BudgetDecision>> asked = new ArrayList<>();

  @Override
  public String name() {
    return "controlled";
  }

  @Override
  public void recordFirstAttempt() {
    firstAttempts.incrementAndGet();
  }

  @Override
  public BudgetDecision acquireBlocking() {
    throw new AssertionError("the blocking acquireBlocking() was called");
  }

  @Override
  public synchronized CompletionStage<BudgetDecision> acquire() {
    CompletableFuture<BudgetDecision> answer = new CompletableFuture<>();
    asked.add(answer);
    return answer;
  }

  synchronized int askedCount() {
    return asked.size();
  }

  /** Answers the n-th request (0-based). */
  void answer(int n, BudgetDecision decision) {
    CompletableFuture<BudgetDecision> answer;
    synchronized (this) {
      answer = asked.get(n);
    }
    answer.complete(decision);
  }

  @Override
  public void close() {}
}
