package io.retrybudget.retry;

import java.time.Duration;

/** An attempt ran past the policy's per-attempt timeout and was cancelled. */
public final class AttemptTimeoutException extends RuntimeException {
  public AttemptTimeoutException(Duration timeout) {
    super("attempt timed out after " + timeout.toMillis() + " ms");
  }
}
