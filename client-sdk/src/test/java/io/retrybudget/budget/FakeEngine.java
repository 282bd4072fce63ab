package io.retrybudget.budget;

import io.retrybudget.retry.FakeTime;
import io.retrybudget.retry.RetryScheduler;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;
import java.util.function.DoubleSupplier;
import java.util.function.Supplier;

/**
 * The process around {@link RedisRetryBudget}s on fake time: a {@link FakeTime} as clock and timer, a
 * {@link ModelStore} as Redis, and a fleet registry that knows this process's budgets as a
 * {@link RedisBudgetClient} does. Single-threaded: everything runs inside {@link FakeTime#advance}.
 */
final class FakeEngine implements FleetRegistry, EngineTimer {
  static final long MS = 1_000_000L;
  final FakeTime time = new FakeTime();
  final ModelStore store;
  final EngineSettings settings;
  final List<RedisRetryBudget> budgets = new ArrayList<>();
  private long learned;
  private boolean connected = true;
  // deliberately broken variants, for tests that show their checks catch them
  RedisHealth.Rule healthRule = RedisHealth::next;
  boolean timeoutsEnforced = true;
  boolean callsAppliedTwice;
  Port portInstead; // a port of the test's own instead of the store (null: the store)

  FakeEngine(long callTimeoutMillis, FallbackPolicy policy, DoubleSupplier random) {
    this.settings = new EngineSettings(callTimeoutMillis, 500, 10_000, 100, policy, true, this::millis, random, this);
    this.store = new ModelStore(this::millis, time, settings.flushTimeoutMillis());
  }

  long millis() {
    return time.nanos() / MS;
  }

  RedisRetryBudget budget(BudgetConfig config) {
    RedisRetryBudget b = new RedisRetryBudget(settings, this, config, healthRule);
    budgets.add(b);
    return b;
  }

  void advanceMillis(long millis) {
    time.advance(millis * MS);
  }

  void disconnect() {
    connected = false;
  }

  // ---- FleetRegistry
  @Override
  public Port port() {
    if (!connected) {
      return null;
    }
    if (portInstead != null) {
      return portInstead;
    }
    return callsAppliedTwice ? (call, sequence) -> {
      store.budget(call, sequence);
      return store.budget(call, sequence);
    } : store;
  }

  @Override
  public long fleetEstimate(String name) {
    return Math.max(budgets.size(), learned);
  }

  @Override
  public void learnedFleet(String name, long clients, boolean first) {
    learned = clients;
  }

  @Override
  public void forget(RedisRetryBudget budget) {
    budgets.remove(budget);
  }

  @Override
  public void logDegraded(Supplier<String> message) {}

  @Override
  public void logRecovered(Supplier<String> message) {}

  // ---- EngineTimer
  @Override
  public Cancel every(Runnable task, long initialMillis, long periodMillis) {
    Repeating r = new Repeating(task, periodMillis);
    r.next = time.schedule(r, initialMillis * MS);
    return r::cancel;
  }

  @Override
  public void execute(Runnable task) {
    time.schedule(task, 0);
  }

  @Override
  public <T> CompletableFuture<T> within(CompletableFuture<T> call, long timeoutMillis) {
    CompletableFuture<T> copy = call.copy();
    if (!timeoutsEnforced) {
      return copy;
    }
    RetryScheduler.Cancellable timeout = time.schedule(() -> copy.completeExceptionally(new TimeoutException()),
        timeoutMillis * MS);
    copy.whenComplete((v, e) -> timeout.cancel());
    return copy;
  }

  private final class Repeating implements Runnable {
    private final Runnable task;
    private final long periodMillis;
    private RetryScheduler.Cancellable next;
    private boolean cancelled;

    Repeating(Runnable task, long periodMillis) {
      this.task = task;
      this.periodMillis = periodMillis;
    }

    @Override
    public void run() {
      if (cancelled) {
        return;
      }
      next = time.schedule(this, periodMillis * MS);
      task.run();
    }

    void cancel() {
      cancelled = true;
      next.cancel();
    }
  }
}
