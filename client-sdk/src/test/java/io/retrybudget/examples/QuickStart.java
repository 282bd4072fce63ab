package io.retrybudget.examples;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import io.retrybudget.retry.RetryBudgetExhaustedException;
import io.retrybudget.retry.RetryExecutor;
import io.retrybudget.retry.RetryPolicy;
import java.io.IOException;

/**
 * The top README's SDK example, compiled with the tests and run by {@link QuickStartTest} against a
 * real Redis, so it cannot rot: the README shows the lines between the markers, and the deploy
 * module's {@code ReadmeTest} fails when they differ.
 */
public final class QuickStart {
  private QuickStart() {}

  /** What the example calls: a remote service whose failures are {@link IOException}s. */
  public interface PaymentsClient {
    String charge(String order) throws IOException;
  }

  static void run(String redisUrl, PaymentsClient paymentsClient, String order) throws Exception {
    // README:begin
    RedisBudgetClient budgets = RedisBudgetClient.builder(
        RedisConnectionOptions.standalone(redisUrl).build()).build();     // one per process
    RetryBudget payments = budgets.budget(BudgetConfig.builder("payments-api")
        .ratio(0.1).windowSeconds(10).minRetriesPerSecond(10).build());  // seeds Redis if it has none
    RetryExecutor executor = RetryExecutor.builder(RetryPolicy.builder().maxAttempts(3).build())
        .budget(payments)  // counts each call's first attempt once, asks the budget before every retry
        .build();
    try {
      System.out.println(executor.call(() -> paymentsClient.charge(order)));  // IOException: retried
    } catch (RetryBudgetExhaustedException e) {
      System.out.println("the fleet has spent its retries: failing fast");
    } finally {
      executor.close();
      budgets.close();
    }
    // README:end
  }

  /** {@code java ... QuickStart [redis-url]}: one call through the fleet budget, against a stand-in client. */
  public static void main(String[] args) throws Exception {
    run(args.length > 0 ? args[0] : "redis://localhost:6379", order -> "charged " + order, "order-1");
  }
}
