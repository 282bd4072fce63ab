package io.retrybudget.failsafe;

import dev.failsafe.Failsafe;
import dev.failsafe.Fallback;
import dev.failsafe.RetryPolicy;
import dev.failsafe.Timeout;
import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;

/** The README's snippet, compiled; {@link ReadmeSnippetTest} checks the README shows it as it is. */
final class ReadmeSnippet {
  interface Client {
    String fetch() throws IOException;
  }

  private ReadmeSnippet() {}

  static String run(Client client, ScheduledExecutorService scheduler) throws Exception {
    // README:begin
    RedisBudgetClient budgets = RedisBudgetClient.builder(
        RedisConnectionOptions.standalone("redis://redis:6379").build()).build();   // one per process
    RetryBudget payments = budgets.budget(BudgetConfig.builder("payments-api").build());

    RetryPolicy<String> policy = BudgetedRetryPolicy.of(
        RetryPolicy.<String>builder()
            .handle(IOException.class)
            .withMaxRetries(2)
            .withBackoff(Duration.ofMillis(100), Duration.ofSeconds(2))
            .withJitter(0.5)
            .build(),
        payments);

    String body = Failsafe.with(policy).get(() -> client.fetch());                        // sync
    CompletableFuture<String> f = Failsafe.with(policy).with(scheduler).getAsync(() -> client.fetch()); // never blocks
    String safe = Failsafe.with(Fallback.of("cached"), policy, Timeout.of(Duration.ofSeconds(1)))
        .get(() -> client.fetch());                                                        // composes as before
    // README:end
    budgets.close();
    return body + f.get() + safe;
  }
}
