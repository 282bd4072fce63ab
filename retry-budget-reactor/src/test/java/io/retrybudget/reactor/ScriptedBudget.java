package io.retrybudget.reactor;

import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.budget.RetryBudget;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A budget whose answers the test decides (granted unless told otherwise), counting what it is
 * asked: the virtual-time tests need answers at chosen moments, which a Redis cannot give.
 */
final class ScriptedBudget implements RetryBudget {
  final AtomicInteger firstAttempts = new AtomicInteger();
  final AtomicInteger acquires = new AtomicInteger();
  private final Deque<CompletableFuture<BudgetDecision>> answers = new ArrayDeque<>();

  /** The next permit request is answered by {@code answer} (completed or not yet). */
  synchronized ScriptedBudget then(CompletableFuture<BudgetDecision> answer) {
    answers.add(answer);
    return this;
  }

  synchronized ScriptedBudget then(BudgetDecision decision) {
    return then(CompletableFuture.completedFuture(decision));
  }

  @Override
  public String name() {
    return "scripted";
  }

  @Override
  public void recordFirstAttempt() {
    firstAttempts.incrementAndGet();
  }

  @Override
  public BudgetDecision acquireBlocking() {
    return acquire().toCompletableFuture().join();
  }

  @Override
  public synchronized CompletionStage<BudgetDecision> acquire() {
    acquires.incrementAndGet();
    CompletableFuture<BudgetDecision> next = answers.poll();
    return next != null ? next : CompletableFuture.completedFuture(BudgetDecision.GRANTED);
  }

  @Override
  public void close() {}
}
