package io.retrybudget.server;

import java.util.OptionalLong;

/**
 * What a handler behind the Idempotency-Key store may know and say about its own execution. Get it
 * with {@code VertxIdempotency.context(routingContext)} on Vert.x, or as the request attribute
 * {@link #ATTRIBUTE} behind {@code IdempotencyFilter}.
 *
 * <p><b>Fencing token</b>: a number that grows with every claim of a key, also across a released or
 * expired claim. Pass it to the system that does the side effect and let that system refuse a
 * write whose token is lower than the highest it has seen for the key (Kleppmann's fencing
 * tokens): a holder that was paused past its lease, or cut off from Redis while a duplicate took
 * the key over, can then no longer write after the newer holder.
 */
public final class IdempotencyContext {
  /** The request attribute (servlet) and routing-context key (Vert.x) it is found under. */
  public static final String ATTRIBUTE = IdempotencyContext.class.getName();

  /** The context of a request that runs without a claim (no key where none is required, a method not guarded). */
  public static final IdempotencyContext UNGUARDED = new IdempotencyContext(null);

  private final ClaimRun run;

  IdempotencyContext(ClaimRun run) {
    this.run = run;
  }

  /** True when this execution holds a claim on its key. */
  public boolean guarded() {
    return run != null;
  }

  /** The claim's fencing token; empty when unguarded. */
  public OptionalLong fencingToken() {
    return run == null ? OptionalLong.empty() : OptionalLong.of(run.claim().fence());
  }

  /**
   * Says the answer about to be returned refuses the request before it was executed (a validation
   * error, a missing parameter): it is sent but not stored, whatever the outcome policy, and the
   * key is released so that the corrected request can use it. Call it only when nothing was done.
   */
  public void rejectedBeforeExecuting() {
    if (run != null) {
      run.rejectBeforeExecuting();
    }
  }
}
