package io.retrybudget.retry.http;

import java.net.http.HttpResponse;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.function.Supplier;

/**
 * The future {@code RetryingHttpClient.sendAsync} returns: it completes as the retry executor's call
 * does, but only once the call's other responses have their bodies closed ({@link DiscardedResponses}),
 * so no stage a caller puts on it, and no {@code send()}, sees one of them still open. However the
 * caller completes it ({@code cancel}, {@code complete}, {@code completeExceptionally},
 * {@code orTimeout}, {@code completeOnTimeout}, {@code completeAsync}, {@code obtrude...}), the call
 * stops as the executor's own future would, and the other responses are closed first.
 */
final class HttpCallFuture<T> extends CompletableFuture<HttpResponse<T>> {
  private final DiscardedResponses<T> responses;
  private CompletableFuture<HttpResponse<T>> call;

  HttpCallFuture(DiscardedResponses<T> responses) {
    this.responses = responses;
  }

  /** Follows {@code call} (the executor's future); called once, before the caller gets this future. */
  HttpCallFuture<T> follow(CompletableFuture<HttpResponse<T>> call) {
    this.call = call;
    call.whenComplete((answer, failure) -> {
      if (responses.end(failure == null ? answer : null)) {
        if (failure != null) {
          super.completeExceptionally(failure);
        } else {
          super.complete(answer);
        }
      }
    });
    return this;
  }

  /**
   * The caller ended the call with {@code answer}: the other bodies are closed, then this future
   * completes, then the call stops.
   */
  private boolean byCaller(HttpResponse<T> answer, Supplier<Boolean> completeThis) {
    if (!responses.end(answer)) {
      return false; // the call's own answer (or the caller's) came first
    }
    boolean completed = completeThis.get();
    call.cancel(true);
    return completed;
  }

  @Override
  public boolean complete(HttpResponse<T> value) {
    return byCaller(value, () -> super.complete(value));
  }

  @Override
  public boolean completeExceptionally(Throwable ex) {
    Objects.requireNonNull(ex, "ex");
    return byCaller(null, () -> super.completeExceptionally(ex));
  }

  @Override
  public boolean cancel(boolean mayInterruptIfRunning) {
    return byCaller(null, () -> super.cancel(mayInterruptIfRunning));
  }

  @Override
  public void obtrudeValue(HttpResponse<T> value) {
    responses.end(value); // an answer the call gave already was handed out with this future: not ours to close
    super.obtrudeValue(value);
    call.cancel(true);
  }

  @Override
  public void obtrudeException(Throwable ex) {
    responses.end(null);
    super.obtrudeException(ex);
    call.cancel(true);
  }

  @Override
  public CompletableFuture<HttpResponse<T>> completeAsync(Supplier<? extends HttpResponse<T>> supplier,
      Executor executor) {
    // the JDK's own completeAsync completes through an internal method that bypasses complete()
    Objects.requireNonNull(supplier, "supplier");
    Objects.requireNonNull(executor, "executor");
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
