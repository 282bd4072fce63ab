package io.retrybudget.retry.http;

import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The responses of one call, and the bodies of those that are not its answer (retried ones, hedges
 * that lost, the one a budget refusal carries) closed when they are closeable ({@code ofInputStream},
 * {@code ofLines}), which frees their connections.
 *
 * <p>When it happens: a response is registered by {@link Attempt} before the retry executor sees it,
 * and {@link #end} closes every registered one but the answer before the future the caller holds
 * completes. So when {@code send()} returns, or any stage the caller put on {@code sendAsync}'s
 * future runs, every response the call received is closed but the answer. A response that arrives
 * after the call ended (a hedge whose exchange had answered just before it was cancelled) is closed
 * as it arrives.
 */
final class DiscardedResponses<T> {
  private final List<HttpResponse<T>> pending = new ArrayList<>(2);
  private boolean ended;
  private HttpResponse<T> answer;

  /** A response of one of the call's attempts: kept until the call ends, closed at once after that. */
  void arrived(HttpResponse<T> response) {
    if (response == null) {
      return;
    }
    synchronized (this) {
      if (!ended) {
        pending.add(response);
        return;
      }
      if (response == answer) {
        return;
      }
    }
    closeBody(response);
  }

  /**
   * Ends the call with {@code answer} (null: it ended without a response), closing every other
   * response's body before returning; false when it had ended already (the answer is the first one's).
   * The bodies are closed under the lock, so a second caller returns only once they are.
   */
  synchronized boolean end(HttpResponse<T> answer) {
    if (ended) {
      return false;
    }
    ended = true;
    this.answer = answer;
    for (HttpResponse<T> r : pending) {
      if (r != answer) {
        closeBody(r);
      }
    }
    pending.clear();
    return true;
  }

  private static void closeBody(HttpResponse<?> response) {
    if (response.body() instanceof AutoCloseable body) {
      try {
        body.close();
      } catch (Exception ignored) {
        // nothing more to give back
      }
    }
  }

  /**
   * What the retry executor gets for one attempt: completed only once the response is registered,
   * and cancelling it (a losing hedge, an attempt timeout) cancels the exchange, which aborts it.
   */
  static final class Attempt<T> extends CompletableFuture<HttpResponse<T>> {
    private final CompletableFuture<HttpResponse<T>> exchange;

    Attempt(CompletableFuture<HttpResponse<T>> exchange, DiscardedResponses<T> responses) {
      this.exchange = exchange;
      exchange.whenComplete((response, error) -> {
        responses.arrived(response);
        if (error != null) {
          completeExceptionally(error);
        } else {
          complete(response);
        }
      });
    }

    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
      exchange.cancel(mayInterruptIfRunning);
      return super.cancel(mayInterruptIfRunning);
    }
  }
}
