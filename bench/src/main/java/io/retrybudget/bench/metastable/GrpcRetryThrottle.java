package io.retrybudget.bench.metastable;

import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.retry.RetryListener;
import io.retrybudget.retry.RetryOutcome;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * gRPC's {@code retryThrottling} (gRFC A6, "Retry throttling"), one per client as gRPC keeps one
 * per channel: a token count that starts at {@code maxTokens}; every failed attempt takes one
 * token, every successful call gives back {@code tokenRatio}; a retry is allowed only while the
 * count is above {@code maxTokens / 2}. The count stays in [0, maxTokens].
 *
 * <p>The executor tells it how attempts end: {@link #acquireBlocking()} is asked right after a
 * retryable failure, so the failure is counted there, before the threshold is checked (gRPC's
 * order); the failure of a call's last attempt, which asks for nothing, is counted by
 * {@link #listener()} ({@link RetryOutcome#MAX_ATTEMPTS}, {@link RetryOutcome#DEADLINE}); a
 * success by the listener as well. Attach the listener to the client that uses this budget.
 */
final class GrpcRetryThrottle implements RetryBudget {
  private final String name;
  private final double maxTokens;
  private final double tokenRatio;
  private double tokens;
  private final RetryListener listener = new RetryListener() {
    @Override
    public void onOutcome(RetryOutcome outcome, int attempts) {
      if (outcome == RetryOutcome.SUCCESS) {
        succeeded();
      } else if (outcome == RetryOutcome.MAX_ATTEMPTS || outcome == RetryOutcome.DEADLINE) {
        failed();
      }
    }
  };

  /**
   * @param maxTokens  gRPC's {@code maxTokens} (0, 1000]; the service config's example and this
   *     benchmark use 10
   * @param tokenRatio gRPC's {@code tokenRatio} (0, 1]; 0.1 in the benchmark
   */
  GrpcRetryThrottle(String name, double maxTokens, double tokenRatio) {
    if (!(maxTokens > 0 && maxTokens <= 1000)) {
      throw new IllegalArgumentException("maxTokens must be in (0, 1000], was " + maxTokens);
    }
    if (!(tokenRatio > 0 && tokenRatio <= 1)) {
      throw new IllegalArgumentException("tokenRatio must be in (0, 1], was " + tokenRatio);
    }
    this.name = name;
    this.maxTokens = maxTokens;
    this.tokenRatio = tokenRatio;
    this.tokens = maxTokens;
  }

  /** Feeds the token count from how calls end: attach it to the client using this budget. */
  RetryListener listener() {
    return listener;
  }

  synchronized double tokens() {
    return tokens;
  }

  synchronized void failed() {
    tokens = Math.max(0, tokens - 1);
  }

  synchronized void succeeded() {
    tokens = Math.min(maxTokens, tokens + tokenRatio);
  }

  @Override
  public String name() {
    return name;
  }

  /** First attempts cost nothing in gRPC's throttle. */
  @Override
  public void recordFirstAttempt() {}

  /** Counts the failure that asks for the retry, then allows it while tokens stay above half. */
  @Override
  public synchronized BudgetDecision acquireBlocking() {
    tokens = Math.max(0, tokens - 1);
    return tokens > maxTokens / 2 ? BudgetDecision.GRANTED : BudgetDecision.DENIED_EXHAUSTED;
  }

  @Override
  public CompletionStage<BudgetDecision> acquire() {
    return CompletableFuture.completedFuture(acquireBlocking());
  }

  @Override
  public void close() {}
}
