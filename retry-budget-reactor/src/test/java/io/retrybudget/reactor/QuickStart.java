package io.retrybudget.reactor;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import io.retrybudget.retry.RetryPolicy;
import java.time.Duration;
import java.util.concurrent.Callable;
import org.springframework.web.reactive.function.client.WebClient;
import reactor.core.publisher.Mono;

/**
 * The module README's example, compiled with the tests and run by {@link QuickStartTest} against a
 * real Redis and a real HTTP server: the README shows the lines between the markers, and the test
 * fails when they differ.
 */
final class QuickStart {
  private QuickStart() {}

  static String run(String redisUrl, String baseUrl, Callable<String> quotes) {
    // README:begin
    RedisBudgetClient budgets = RedisBudgetClient.builder(
        RedisConnectionOptions.standalone(redisUrl).build()).build();        // one per process
    RetryBudget payments = budgets.budget(BudgetConfig.builder("payments-api").build());
    RetryPolicy policy = RetryPolicy.builder().maxAttempts(3).deadline(Duration.ofSeconds(2)).build();

    // WebClient: HTTP's rules (5xx/429, Retry-After, X-Retry-Attempt, Idempotency-Key on POST)
    WebClient web = WebClient.builder().baseUrl(baseUrl)
        .filter(BudgetRetryFilter.builder().policy(policy).budget(payments).build())
        .build();
    Mono<String> item = web.get().uri("/items/42").retrieve().bodyToMono(String.class);

    // any Mono or Flux: retryWhen with the budget (IOException and timeouts are retried)
    BudgetRetry retry = BudgetRetry.of(policy, payments);
    Mono<String> quote = Mono.fromCallable(quotes).retryWhen(retry);

    try {
      return item.block() + ", " + quote.block();
    } finally {
      payments.close();
      budgets.close();
    }
    // README:end
  }
}
