package io.retrybudget.testing;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.budget.RetryBudget;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicInteger;

/** A real budget that also counts what it is asked, so a test can see what the integration asked. */
public final class CountingBudget implements RetryBudget {
  public final RetryBudget delegate;
  public final AtomicInteger firstAttempts = new AtomicInteger();
  public final AtomicInteger acquires = new AtomicInteger();

  public CountingBudget(RetryBudget delegate) {
    this.delegate = delegate;
  }

  @Override
  public String name() {
    return delegate.name();
  }

  @Override
  public void recordFirstAttempt() {
    firstAttempts.incrementAndGet();
    delegate.recordFirstAttempt();
  }

  @Override
  public BudgetDecision acquireBlocking() {
    acquires.incrementAndGet();
    return delegate.acquireBlocking();
  }

  @Override
  public CompletionStage<BudgetDecision> acquire() {
    acquires.incrementAndGet();
    return delegate.acquire();
  }

  @Override
  public Optional<BudgetConfig> configInForce() {
    return delegate.configInForce();
  }

  @Override
  public boolean isDegraded() {
    return delegate.isDegraded();
  }

  @Override
  public void close() {
    delegate.close();
  }
}
