package io.retrybudget.kotlin

import io.retrybudget.retry.RetryScheduler

/** The executor's timers, run when the test says: nothing fires by itself, cancellations are seen. */
class ManualScheduler : RetryScheduler {
  inner class Task(val run: Runnable, val delayNanos: Long) : RetryScheduler.Cancellable {
    @Volatile var cancelled = false
    override fun cancel() {
      cancelled = true
    }
  }

  private val tasks = mutableListOf<Task>()

  @Synchronized
  override fun schedule(task: Runnable, delayNanos: Long): RetryScheduler.Cancellable =
      Task(task, delayNanos).also { tasks += it }

  @Synchronized fun pending(): List<Task> = tasks.filter { !it.cancelled }

  @Synchronized fun all(): List<Task> = tasks.toList()

  /** Runs the tasks due now (delay 0: the executor's hand-overs), not the timers. */
  fun runDue() {
    while (true) {
      val next = synchronized(this) { tasks.firstOrNull { !it.cancelled && it.delayNanos == 0L }?.also { tasks.remove(it) } } ?: return
      next.run.run()
    }
  }

  /** Runs every task scheduled so far and not cancelled, then those they scheduled, and so on. */
  fun runAll() {
    while (true) {
      val next = synchronized(this) { tasks.firstOrNull { !it.cancelled }?.also { tasks.remove(it) } } ?: return
      next.run.run()
    }
  }
}
