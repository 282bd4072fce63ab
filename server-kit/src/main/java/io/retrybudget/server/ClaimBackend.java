package io.retrybudget.server;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;

/**
 * The claim primitive {@link IdempotencyGuard} runs on: {@link ClaimStore} in Redis (the one
 * production implementation); tests put an in-process model of the same contract behind it to run
 * thousands of fault schedules on fake time. Every method is asynchronous, never throws, and its
 * future ends (failing when the store is slow or gone) within {@link #timeout()}.
 */
public interface ClaimBackend {
  /** How long a call may take before its future fails. */
  Duration timeout();

  /**
   * Claims {@code key} for one execution with a lease of {@code lease}: {@link Claim.Claimed} (with
   * a fencing token greater than every earlier claim's of this key), {@link Claim.Busy}, {@link
   * Claim.Mismatch} or {@link Claim.Done}.
   */
  CompletableFuture<Claim> claim(String key, String fingerprint, Duration lease);

  /** Stores {@code response} under the claim: true when stored, false when fenced off. */
  CompletableFuture<Boolean> complete(Claim.Claimed claim, StoredResponse response, Duration ttl);

  /** Gives the claim up: true when released, false when it was no longer this holder's. */
  CompletableFuture<Boolean> release(Claim.Claimed claim);

  /** Extends a running claim's lease to {@code lease} from now: true when renewed, false when fenced off. */
  CompletableFuture<Boolean> renew(Claim.Claimed claim, Duration lease);
}
