package io.retrybudget.retry;

import java.util.UUID;

/**
 * What an attempt knows about its call: its number (1 for the first, counting retries and hedges),
 * whether it is a hedge, which replica it should go to, and the call's idempotency key, made on
 * first use only and the same for every attempt and hedge of the call.
 */
public final class AttemptContext {
  private final AttemptContext call; // the first attempt's context holds the call's key
  private volatile int attempt;
  private final boolean hedge;
  private final int replica;
  private volatile String idempotencyKey;

  /** A call's first context, carrying the caller's own key (or null). */
  AttemptContext(String idempotencyKey) {
    this.call = null;
    this.idempotencyKey = idempotencyKey;
    this.hedge = false;
    this.replica = 0;
  }

  private AttemptContext(AttemptContext call, int attempt, boolean hedge, int replica) {
    this.call = call;
    this.attempt = attempt;
    this.hedge = hedge;
    this.replica = replica;
  }

  /** Another attempt of the same call, sharing its key. */
  AttemptContext next(int number, boolean isHedge, int replicaIndex) {
    return new AttemptContext(call == null ? this : call, number, isHedge, replicaIndex);
  }

  void startAttempt(int number) {
    this.attempt = number;
  }

  /** 1 for the first attempt; what {@code X-Retry-Attempt} carries. */
  public int attempt() {
    return attempt;
  }

  /** True for a hedged request: sent while an earlier attempt of the same call is still running. */
  public boolean isHedge() {
    return hedge;
  }

  /**
   * Which of the caller's replicas this attempt should use, counting from the call's first: 0 for
   * the first attempt, then 1, 2, ... so a hedge or retry goes to a different replica where there
   * are several ({@code replicas.get(ctx.replica() % replicas.size())}).
   */
  public int replica() {
    return replica;
  }

  /** The call's idempotency key, made now if this call has none yet. */
  public String idempotencyKey() {
    if (call != null) {
      return call.idempotencyKey();
    }
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
    return call != null ? call.hasIdempotencyKey() : idempotencyKey != null;
  }
}
