package io.retrybudget.retry;

import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * What an attempt knows about its call: its number (1 for the first, counting retries and hedges),
 * whether it is a hedge, which replica it should go to, how long its answer will still be waited
 * for (the call's deadline and the attempt timeout: what {@code X-Request-Deadline-Ms} carries),
 * and the call's idempotency key, made on first use only and the same for every attempt and
 * hedge of the call.
 */
public final class AttemptContext {
  /** {@link #answerByNanos} of an attempt that neither a deadline nor an attempt timeout bounds. */
  static final long UNBOUNDED = Long.MAX_VALUE;
  private final AttemptContext call; // the first attempt's context holds the call's key
  private volatile int attempt;
  private final boolean hedge;
  private final int replica;
  private volatile String idempotencyKey;
  private final LongSupplier nanoClock; // the executor's clock, which answerByNanos is on
  private volatile long answerByNanos = UNBOUNDED;

  /** A call's first context, carrying the caller's own key (or null). */
  AttemptContext(String idempotencyKey) {
    this(idempotencyKey, System::nanoTime);
  }

  /** A call's first context on the executor's clock. */
  AttemptContext(String idempotencyKey, LongSupplier nanoClock) {
    this.call = null;
    this.idempotencyKey = idempotencyKey;
    this.hedge = false;
    this.replica = 0;
    this.nanoClock = nanoClock;
  }

  private AttemptContext(AttemptContext call, int attempt, boolean hedge, int replica, long answerByNanos) {
    this.call = call;
    this.attempt = attempt;
    this.hedge = hedge;
    this.replica = replica;
    this.nanoClock = call.nanoClock;
    this.answerByNanos = answerByNanos;
  }

  /** Another attempt of the same call, sharing its key; answered by {@code answerBy} or {@link #UNBOUNDED}. */
  AttemptContext next(int number, boolean isHedge, int replicaIndex, long answerBy) {
    return new AttemptContext(call == null ? this : call, number, isHedge, replicaIndex, answerBy);
  }

  void startAttempt(int number) {
    startAttempt(number, UNBOUNDED);
  }

  /** The attempt starts; its answer is waited for until {@code answerBy} on the executor's clock. */
  void startAttempt(int number, long answerBy) {
    this.answerByNanos = answerBy;
    this.attempt = number;
  }

  /** When the attempt must have been answered: its start plus what {@code RetryPlanner.attemptBudgetNanos} allowed. */
  static long answerBy(long startedNanos, long allowedNanos) {
    if (allowedNanos == Long.MAX_VALUE) {
      return UNBOUNDED;
    }
    long at = startedNanos + allowedNanos;
    if (((startedNanos ^ at) & (allowedNanos ^ at)) < 0) {
      return UNBOUNDED; // beyond what a long of nanoseconds holds (centuries): as good as unbounded
    }
    return at == UNBOUNDED ? UNBOUNDED - 1 : at;
  }

  /**
   * Whether this attempt's answer is waited for only a bounded time: the call has a deadline or
   * the policy an attempt timeout. When true, {@link #remainingMillis()} says how long.
   */
  public boolean hasDeadline() {
    return answerByNanos != UNBOUNDED;
  }

  /**
   * How long this attempt's answer will still be waited for, in whole milliseconds (rounded down,
   * never negative): the attempt timeout cut to what the call's deadline leaves, minus the time
   * since the attempt started. What {@code X-Request-Deadline-Ms} (and gRPC's {@code grpc-timeout})
   * tells the server, so it does not work, or call its own dependencies, past the moment nobody
   * waits for the answer any more. {@link Long#MAX_VALUE} when {@link #hasDeadline()} is false.
   */
  public long remainingMillis() {
    long nanos = remainingNanos();
    return nanos == Long.MAX_VALUE ? Long.MAX_VALUE : TimeUnit.NANOSECONDS.toMillis(nanos);
  }

  /** As {@link #remainingMillis()} in nanoseconds. */
  public long remainingNanos() {
    long by = answerByNanos;
    if (by == UNBOUNDED) {
      return Long.MAX_VALUE;
    }
    long now = nanoClock.getAsLong();
    long left = by - now;
    if (((by ^ now) & (by ^ left)) < 0) {
      return left < 0 ? Long.MAX_VALUE : 0; // overflowed: far in the future, or far in the past
    }
    return Math.max(0, left);
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
