package io.retrybudget.retry;

import java.util.UUID;

/**
 * What an attempt knows about its call: its number (1 for the first, counting retries and hedges)
 * and the call's idempotency key, made on first use only and the same for every attempt.
 */
public final class AttemptContext {
  private volatile int attempt;
  private volatile String idempotencyKey;

  AttemptContext() {}

  /** A context that already carries the caller's own key. */
  AttemptContext(String idempotencyKey) {
    this.idempotencyKey = idempotencyKey;
  }

  void startAttempt(int number) {
    this.attempt = number;
  }

  /** 1 for the first attempt; what {@code X-Retry-Attempt} carries. */
  public int attempt() {
    return attempt;
  }

  /** The call's idempotency key, made now if this call has none yet. */
  public String idempotencyKey() {
    String key = idempotencyKey;
    if (key == null) {
      synchronized (this) {
        key = idempotencyKey;
        if (key == null) {
          key = UUID.randomUUID().toString();
          idempotencyKey = key;
        }
      }
    }
    return key;
  }

  /** Whether the call carries a key, without making one. */
  public boolean hasIdempotencyKey() {
    return idempotencyKey != null;
  }
}
