package io.retrybudget.retry;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.function.Supplier;

/**
 * The future {@code callAsync} returns. However the caller completes it — {@code cancel},
 * {@code complete}, {@code completeExceptionally}, {@code orTimeout}, {@code completeOnTimeout},
 * {@code completeAsync}, {@code obtrude...} — the call stops: attempts are cancelled, timers called
 * off, budget answers still to come ignored (as Failsafe's {@code FailsafeFuture}). The executor
 * itself completes it through {@link #finish}, which does not count as the caller's.
 */
final class CallFuture<T> extends CompletableFuture<T> {
  private final AsyncCall<T> call;

  CallFuture(AsyncCall<T> call) {
    this.call = call;
  }

  AsyncCall<T> call() {
    return call;
  }

  /** Completes as the executor decided; false when the caller got there first. */
  boolean finish(T value, Throwable failure) {
    return failure != null ? super.completeExceptionally(failure) : super.complete(value);
  }

  private boolean byCaller(boolean completed) {
    if (completed) {
      call.callerCompleted();
    }
    return completed;
  }

  @Override
  public boolean complete(T value) {
    return byCaller(super.complete(value));
  }

  @Override
  public boolean completeExceptionally(Throwable ex) {
    return byCaller(super.completeExceptionally(ex));
  }

  @Override
  public boolean cancel(boolean mayInterruptIfRunning) {
    return byCaller(super.cancel(mayInterruptIfRunning));
  }

  @Override
  public void obtrudeValue(T value) {
    super.obtrudeValue(value);
    call.callerCompleted();
  }

  @Override
  public void obtrudeException(Throwable ex) {
    super.obtrudeException(ex);
    call.callerCompleted();
  }

  @Override
  public CompletableFuture<T> completeAsync(Supplier<? extends T> supplier, Executor executor) {
    // the JDK's own completeAsync completes through an internal method that bypasses complete()
    java.util.Objects.requireNonNull(supplier, "supplier");
    java.util.Objects.requireNonNull(executor, "executor");
    executor.execute(() -> {
      try {
        complete(supplier.get());
      } catch (Throwable t) {
        completeExceptionally(t);
      }
    });
    return this;
  }
}
