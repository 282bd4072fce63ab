package io.retrybudget.bench.metastable;

import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.retry.RetryListener;
import io.retrybudget.retry.RetryOutcome;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * The AWS SDKs' retry quota (standard retry mode), one per client as each SDK client keeps one: a
 * bucket of {@code capacity} tokens, full at start; a retry takes {@code retryCost} tokens and is
 * refused when fewer are left; a call that succeeds after retries gives its last retry's cost
 * back, a call that succeeds at its first attempt gives {@code successIncrement}; never above
 * {@code capacity}.
 *
 * <p>The figures of the 2026 behaviour ({@code AWS_NEW_RETRIES_2026=true}, the AWS SDKs and Tools
 * reference guide, "Retry behavior"; the constants of smithy-rs {@code token_bucket.rs}): capacity
 * 500, cost 14 per retry after a transient error or a timeout (5 after a throttling error, which
 * this backend never answers), 1 per success without a retry. The pre-2026 figures were cost 5,
 * 10 after a timeout.
 *
 * <p>Successes reach it through {@link #listener()}: attach it to the client using this budget.
 */
final class AwsRetryQuota implements RetryBudget {
  static final int CAPACITY_2026 = 500;
  static final int RETRY_COST_2026 = 14;
  static final int SUCCESS_INCREMENT = 1;

  private final String name;
  private final int capacity;
  private final int retryCost;
  private final int successIncrement;
  private int tokens;
  private final RetryListener listener = new RetryListener() {
    @Override
    public void onOutcome(RetryOutcome outcome, int attempts) {
      if (outcome == RetryOutcome.SUCCESS) {
        refund(attempts > 1 ? AwsRetryQuota.this.retryCost : AwsRetryQuota.this.successIncrement);
      }
    }
  };

  AwsRetryQuota(String name, int capacity, int retryCost, int successIncrement) {
    if (capacity < 1) {
      throw new IllegalArgumentException("capacity must be at least 1, was " + capacity);
    }
    if (retryCost < 1 || retryCost > capacity) {
      throw new IllegalArgumentException("retryCost must be in [1, capacity " + capacity + "], was " + retryCost);
    }
    if (successIncrement < 0) {
      throw new IllegalArgumentException("successIncrement must not be negative, was " + successIncrement);
    }
    this.name = name;
    this.capacity = capacity;
    this.retryCost = retryCost;
    this.successIncrement = successIncrement;
    this.tokens = capacity;
  }

  /** The 2026 defaults: 500 tokens, 14 per retry, 1 back per success without a retry. */
  static AwsRetryQuota defaults2026(String name) {
    return new AwsRetryQuota(name, CAPACITY_2026, RETRY_COST_2026, SUCCESS_INCREMENT);
  }

  RetryListener listener() {
    return listener;
  }

  synchronized int tokens() {
    return tokens;
  }

  private synchronized void refund(int amount) {
    tokens = Math.min(capacity, tokens + amount);
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public void recordFirstAttempt() {}

  @Override
  public synchronized BudgetDecision acquireBlocking() {
    if (tokens < retryCost) {
      return BudgetDecision.DENIED_EXHAUSTED;
    }
    tokens -= retryCost;
    return BudgetDecision.GRANTED;
  }

  @Override
  public CompletionStage<BudgetDecision> acquire() {
    return CompletableFuture.completedFuture(acquireBlocking());
  }

  @Override
  public void close() {}
}
