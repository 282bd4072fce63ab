package io.retrybudget.observation;

import io.retrybudget.retry.AttemptTimeoutException;
import java.net.SocketTimeoutException;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.util.Objects;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import java.util.function.ToIntFunction;

/**
 * Names why an attempt was retried, from the answer of the attempt before it: the value of an
 * attempt's {@value ObservationRetryListener#RETRY_REASON}. The values follow OpenTelemetry's
 * {@code error.type}: {@code timeout} for a timeout, the HTTP status code as a string ({@code 503})
 * for a response the policy retries, the fully-qualified class name of any other failure
 * ({@code java.net.ConnectException}); {@code result} for another result the policy retries. Keep
 * the values few: they are tags.
 */
@FunctionalInterface
public interface RetryReasons {
  /**
   * Timeouts, then the status of a {@code java.net.http.HttpResponse}, then the failure's class;
   * {@code result} for any other result.
   */
  RetryReasons DEFAULT = statusOf(HttpResponse.class, HttpResponse::statusCode);

  /**
   * @param result what the attempt returned (null when it failed)
   * @param failure what it failed with (null when it returned)
   * @return the reason, never null
   */
  String reason(Object result, Throwable failure);

  /**
   * The default rules with the status code of responses of type {@code type} (an OkHttp
   * {@code Response::code}, a Vert.x {@code HttpResponse::statusCode}).
   */
  static <R> RetryReasons statusOf(Class<R> type, ToIntFunction<? super R> status) {
    Objects.requireNonNull(type, "type must not be null");
    Objects.requireNonNull(status, "status must not be null");
    return (result, failure) -> {
      if (failure != null) {
        return ofFailure(failure);
      }
      if (type.isInstance(result)) {
        return Integer.toString(status.applyAsInt(type.cast(result)));
      }
      return "result";
    };
  }

  /** {@code timeout} for the timeouts of the SDK, the JDK and its HTTP client; else the class name. */
  static String ofFailure(Throwable failure) {
    Throwable f = failure;
    while ((f instanceof CompletionException || f instanceof ExecutionException) && f.getCause() != null) {
      f = f.getCause();
    }
    if (f instanceof AttemptTimeoutException || f instanceof TimeoutException || f instanceof HttpTimeoutException
        || f instanceof SocketTimeoutException) {
      return "timeout";
    }
    return f.getClass().getName();
  }
}
