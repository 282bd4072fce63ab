package io.retrybudget.failsafe;

import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.budget.RetryBudget;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A budget the test drives. In {@code immediate} mode every ask is answered at once with the
 * next scripted decision (GRANTED when the script is empty); otherwise {@link #acquire()} returns a
 * stage that stays pending until the test answers it, and {@link #acquireBlocking()} fails the
 * test, so an asynchronous execution that blocks is caught.
 */
final class ScriptedBudget implements RetryBudget {
  final AtomicInteger firstAttempts = new AtomicInteger();
  final AtomicInteger blockingAsks = new AtomicInteger();
  private final boolean immediate;
  private final List<BudgetDecision> script = new ArrayList<>();
  private final List<CompletableFuture<BudgetDecision>> pending = new ArrayList<>();

  private ScriptedBudget(boolean immediate) {
    this.immediate = immediate;
  }

  /** Answers at once: {@code decisions} in order, then GRANTED. */
  static ScriptedBudget answering(BudgetDecision... decisions) {
    ScriptedBudget b = new ScriptedBudget(true);
    b.script.addAll(List.of(decisions));
    return b;
  }

  /** Leaves every asynchronous ask pending until {@link #answer} is called. */
  static ScriptedBudget pending() {
    return new ScriptedBudget(false);
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
  public synchronized BudgetDecision acquireBlocking() {
    if (!immediate) {
      throw new AssertionError("an asynchronous execution asked the blocking way");
    }
    blockingAsks.incrementAndGet();
    return next();
  }

  @Override
  public synchronized CompletionStage<BudgetDecision> acquire() {
    CompletableFuture<BudgetDecision> answer = new CompletableFuture<>();
    pending.add(answer);
    if (immediate) {
      answer.complete(next());
    }
    return answer;
  }

  private BudgetDecision next() {
    return script.isEmpty() ? BudgetDecision.GRANTED : script.remove(0);
  }

  /** Asynchronous asks so far (answered or not). */
  synchronized int asyncAsks() {
    return pending.size();
  }

  /** All asks so far, blocking and asynchronous. */
  synchronized int asks() {
    return pending.size() + blockingAsks.get();
  }

  void answer(int n, BudgetDecision decision) {
    CompletableFuture<BudgetDecision> answer;
    synchronized (this) {
      answer = pending.get(n);
    }
    answer.complete(decision);
  }

  void fail(int n, Throwable error) {
    CompletableFuture<BudgetDecision> answer;
    synchronized (this) {
      answer = pending.get(n);
    }
    answer.completeExceptionally(error);
  }

  @Override
  public void close() {}
}
