package io.retrybudget.kotlin

import io.retrybudget.budget.BudgetConfig
import io.retrybudget.budget.RedisBudgetClient
import io.retrybudget.budget.redis.transport.RedisConnectionOptions
import io.retrybudget.retry.RetryExecutor
import io.retrybudget.retry.RetryPolicy
import java.time.Duration
import kotlin.time.Duration.Companion.seconds

/** The README's snippet, compiled; [ReadmeSnippetTest] checks the README shows it as it is. */
object ReadmeSnippet {
  fun interface Client {
    suspend fun fetch(idempotencyKey: String): String
  }

  suspend fun run(client: Client): String {
    // README:begin
    val budgets = RedisBudgetClient.builder(
        RedisConnectionOptions.standalone("redis://redis:6379").build()).build()     // one per process
    val executor = RetryExecutor.builder(
        RetryPolicy.builder().maxAttempts(3).backoff(Duration.ofMillis(100), Duration.ofSeconds(2)).build())
        .budget(budgets.budget(BudgetConfig.builder("payments-api").build()))
        .build()

    // suspends instead of blocking; cancelling the coroutine cancels the call and its attempts
    val receipt = executor.callSuspending(deadline = 5.seconds) { attempt ->
      client.fetch(attempt.idempotencyKey())
    }
    // README:end
    budgets.close()
    return receipt
  }
}
