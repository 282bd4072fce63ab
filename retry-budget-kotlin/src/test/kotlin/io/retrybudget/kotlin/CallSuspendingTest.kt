package io.retrybudget.kotlin

import io.retrybudget.budget.BudgetDecision
import io.retrybudget.budget.RetryBudget
import io.retrybudget.retry.AttemptContext
import io.retrybudget.retry.RetryBudgetExhaustedException
import io.retrybudget.retry.RetryExecutor
import io.retrybudget.retry.RetryListener
import io.retrybudget.retry.RetryOutcome
import io.retrybudget.retry.RetryPolicy
import java.io.IOException
import java.time.Duration
import java.util.concurrent.CompletableFuture
import java.util.concurrent.CompletionStage
import java.util.concurrent.CopyOnWriteArrayList
import java.util.concurrent.atomic.AtomicInteger
import kotlin.time.Duration.Companion.milliseconds
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitCancellation
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import kotlinx.coroutines.yield
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertInstanceOf
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows

/**
 * `callSuspending` on the executor's own state machine, its timers on a manual scheduler: retries
 * paid from the budget, a refusal thrown, and cancellation by the caller's Job reaching the running
 * attempt and the backoff timer.
 */
class CallSuspendingTest {
  private val scheduler = ManualScheduler()
  private val outcomes = CopyOnWriteArrayList<RetryOutcome>()
  private val listener = object : RetryListener {
    override fun onOutcome(outcome: RetryOutcome, attempts: Int) {
      outcomes += outcome
    }
  }

  private fun executor(budget: RetryBudget, backoff: Duration = Duration.ofMillis(100)): RetryExecutor =
      RetryExecutor.builder(RetryPolicy.builder().maxAttempts(3).backoff(backoff, backoff).build())
          .budget(budget)
          .scheduler(scheduler)
          .listener(listener)
          .random { 0.5 }
          .build()

  /** Runs the executor's timers on this thread while [body] suspends on them. */
  private fun <T> driven(body: suspend () -> T): T = runBlocking {
    val result = async(Dispatchers.Unconfined) { body() }
    while (!result.isCompleted) {
      scheduler.runAll()
      yield()
    }
    result.await()
  }

  @Test
  fun retriesPaidFromTheBudgetUntilAnAttemptSucceeds() {
    val budget = CountingBudget(BudgetDecision.GRANTED)
    val attempts = AtomicInteger()
    val answer = driven {
      executor(budget).callSuspending { context ->
        assertEquals(attempts.get() + 1, context.attempt())
        if (attempts.incrementAndGet() < 3) throw IOException("down")
        "ok after ${context.attempt()}"
      }
    }
    assertEquals("ok after 3", answer)
    assertEquals(1, budget.firstAttempts.get())
    assertEquals(2, budget.asks.get())
    assertEquals(listOf(RetryOutcome.SUCCESS), outcomes)
  }

  @Test
  fun aRefusalIsThrownWithTheLastFailureAsItsCause() {
    val budget = CountingBudget(BudgetDecision.DENIED_EXHAUSTED)
    val attempts = AtomicInteger()
    val refused = assertThrows<RetryBudgetExhaustedException> {
      driven {
        executor(budget).callSuspending<String> {
          attempts.incrementAndGet()
          throw IOException("down")
        }
      }
    }
    assertInstanceOf(IOException::class.java, refused.cause)
    assertEquals(1, attempts.get())
    assertEquals(listOf(RetryOutcome.BUDGET_EXHAUSTED), outcomes)
  }

  @Test
  fun aFailureTheExecutorDoesNotRetryIsThrownAsIs() {
    val budget = CountingBudget(BudgetDecision.GRANTED)
    assertThrows<IllegalArgumentException> {
      driven { executor(budget).callSuspending<String> { throw IllegalArgumentException("bad request") } }
    }
    assertEquals(0, budget.asks.get())
    assertEquals(listOf(RetryOutcome.NOT_RETRYABLE), outcomes)
  }

  @Test
  fun cancellingTheCallerCancelsTheRunningAttempt() = runBlocking {
    val budget = CountingBudget(BudgetDecision.GRANTED)
    val started = CompletableDeferred<Unit>()
    val attemptCancelled = CompletableDeferred<Throwable>()
    val call = launch(Dispatchers.Unconfined, start = CoroutineStart.UNDISPATCHED) {
      executor(budget).callSuspending<String> {
        started.complete(Unit)
        try {
          awaitCancellation()
        } catch (e: CancellationException) {
          attemptCancelled.complete(e)
          throw e
        }
      }
    }
    withTimeout(10_000) { started.await() }
    call.cancel()
    withTimeout(10_000) { attemptCancelled.await() }
    call.join()
    scheduler.runAll()
    assertEquals(listOf(RetryOutcome.CANCELLED), outcomes)
    assertEquals(0, budget.asks.get())
  }

  @Test
  fun cancellingTheCallerDuringTheBackoffCallsOffTheTimerAndStartsNoAttempt() = runBlocking {
    val budget = CountingBudget(BudgetDecision.GRANTED)
    val attempts = AtomicInteger()
    val call = launch(Dispatchers.Unconfined, start = CoroutineStart.UNDISPATCHED) {
      executor(budget, backoff = Duration.ofHours(1)).callSuspending<String> {
        attempts.incrementAndGet()
        throw IOException("down")
      }
    }
    // the first attempt failed at once; the retry waits for its hour-long backoff timer
    withTimeout(10_000) {
      while (scheduler.pending().none { it.delayNanos >= Duration.ofMinutes(20).toNanos() }) {
        scheduler.runDue()
        yield()
      }
    }
    val backoff = scheduler.pending().single { it.delayNanos >= Duration.ofMinutes(20).toNanos() }
    call.cancel()
    call.join()
    assertTrue(backoff.cancelled, "the backoff timer was called off")
    scheduler.runAll()
    assertEquals(1, attempts.get())
    assertEquals(listOf(RetryOutcome.CANCELLED), outcomes)
  }

  @Test
  fun anAttemptsFailureDoesNotCancelTheCallersScope() = runBlocking {
    val budget = CountingBudget(BudgetDecision.GRANTED)
    val sibling = CompletableDeferred<String>()
    val attempts = AtomicInteger()
    coroutineScope {
      launch { sibling.complete("sibling lived") }
      val answer = async(Dispatchers.Unconfined) {
        executor(budget, backoff = Duration.ofMillis(1)).callSuspending { _: AttemptContext ->
          if (attempts.incrementAndGet() == 1) throw IOException("first attempt fails")
          "second attempt answers"
        }
      }
      while (!answer.isCompleted) {
        scheduler.runAll()
        yield()
      }
      assertEquals("second attempt answers", answer.await())
    }
    assertEquals("sibling lived", sibling.await())
  }

  @Test
  fun theCallersDeadlineCapsThePolicys() {
    val budget = CountingBudget(BudgetDecision.GRANTED)
    val remaining = AtomicInteger(-1)
    driven {
      executor(budget).callSuspending(idempotencyKey = "key-1", deadline = 250.milliseconds) { context ->
        assertEquals("key-1", context.idempotencyKey())
        remaining.set(context.remainingMillis().toInt())
        "ok"
      }
    }
    assertTrue(remaining.get() in 1..250, "the attempt saw the call's deadline: ${remaining.get()} ms")
  }

  /** A budget that answers every ask with [answer] at once and counts. */
  class CountingBudget(private val answer: BudgetDecision) : RetryBudget {
    val firstAttempts = AtomicInteger()
    val asks = AtomicInteger()

    override fun name() = "counting"

    override fun recordFirstAttempt() {
      firstAttempts.incrementAndGet()
    }

    override fun acquireBlocking(): BudgetDecision = throw AssertionError("a suspending call never blocks on the budget")

    override fun acquire(): CompletionStage<BudgetDecision> {
      asks.incrementAndGet()
      return CompletableFuture.completedFuture(answer)
    }

    override fun close() {}
  }
}
