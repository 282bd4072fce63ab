/**
 * Kotlin coroutines for the retry executor: `suspend` calls whose retries the budget pays for,
 * cancelled by the calling coroutine's Job.
 */
@file:JvmName("Suspending")

package io.retrybudget.kotlin

import io.retrybudget.retry.AttemptContext
import io.retrybudget.retry.RetryExecutor
import java.util.concurrent.CompletionStage
import kotlin.time.Duration
import kotlin.time.toJavaDuration
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Job
import kotlinx.coroutines.NonCancellable
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.cancelAndJoin
import kotlinx.coroutines.currentCoroutineContext
import kotlinx.coroutines.future.await
import kotlinx.coroutines.future.future
import kotlinx.coroutines.withContext

/**
 * Runs [block] with this executor's retries, suspending instead of blocking: the executor's own
 * asynchronous call ([RetryExecutor.callAsync]) with each attempt a child coroutine of the caller.
 *
 * - Retries, backoff, hedges, attempt timeouts and the retry budget are the executor's: each retry
 *   is paid from its budget, and a refusal is thrown as `RetryBudgetExhaustedException`.
 * - Each attempt runs in the caller's coroutine context (its dispatcher); an attempt the executor
 *   gives up on (its timeout, a hedge that lost) is cancelled.
 * - Cancelling the caller's Job cancels the call first (the executor ends it as `CANCELLED`), which
 *   cancels the running attempts and calls off a pending backoff timer; no further attempt starts.
 *   The attempts are not children of the caller's Job for that reason (a child would be cancelled
 *   before the call, and the executor would read its cancellation as a failed attempt), but they
 *   are joined: this function returns only once every attempt it started has completed.
 * - An attempt's failure does not cancel the caller's scope: it is an attempt's outcome, which the
 *   executor classifies (retry or not); only the call's final failure is thrown.
 *
 * @param idempotencyKey the call's idempotency key, given to every attempt (null: made on demand)
 * @param deadline the whole call's deadline from now, capping the policy's own (null: the policy's)
 */
suspend fun <T> RetryExecutor.callSuspending(
    idempotencyKey: String? = null,
    deadline: Duration? = null,
    block: suspend (AttemptContext) -> T,
): T {
  val attemptsJob = SupervisorJob()
  val attempts = CoroutineScope(currentCoroutineContext().minusKey(Job) + attemptsJob)
  try {
    return callAsync<T>(idempotencyKey, deadline?.toJavaDuration()) { context ->
      attempts.future { block(context) } as CompletionStage<T>
    }.await() // a cancelled caller cancels the call's future here
  } finally {
    withContext(NonCancellable) { attemptsJob.cancelAndJoin() }
  }
}
