package io.retrybudget.server;

import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * The claim primitive in Redis, shared by the idempotency-key store and tied requests: claim a
 * record with a fencing token and a lease, then complete it with an answer or release it, both
 * fenced. Runs {@code lua/idempotency-*.lua} ({@link IdempotencyScripts}) by SHA over the process's one
 * Redis connection ({@link RedisBudgetStore}, which reloads them on NOSCRIPT). Every call is asynchronous and ends
 * within {@code timeout}, failing its future when Redis is slow or gone; none throws.
 *
 * <p>Keys: {@code rb:idem:v1:{<hash>}} and {@code rb:tie:v1:{<hash>}} — a layout version, and the
 * hash (SHA-256 of the scope, 128 bits in hex) as the Cluster hash tag; one key per record.
 */
public final class ClaimStore implements ClaimBackend {
  public static final String IDEMPOTENCY_PREFIX = "rb:idem:v1:";
  public static final String TIE_PREFIX = "rb:tie:v1:";

  private final IdempotencyScripts scripts;
  private final Duration timeout;
  private final java.util.concurrent.atomic.LongAdder abandonsSent = new java.util.concurrent.atomic.LongAdder();
  private final java.util.concurrent.atomic.LongAdder abandoned = new java.util.concurrent.atomic.LongAdder();

  /** Over a connection the caller owns (and closes); {@code timeout} bounds each call. */
  public ClaimStore(RedisBudgetStore redis, Duration timeout) {
    this.scripts = new IdempotencyScripts(redis);
    if (timeout == null || timeout.isNegative() || timeout.isZero()) {
      throw new IllegalArgumentException("timeout must be positive, was " + timeout);
    }
    this.timeout = timeout;
  }

  /** The record key of an idempotency scope (parts: caller, method, route, key). */
  public static String idempotencyKey(String... scope) {
    return IDEMPOTENCY_PREFIX + "{" + Fingerprint.hash(scope).substring(0, 32) + "}";
  }

  /** The record key of a tie id. */
  public static String tieKey(String tieId) {
    return TIE_PREFIX + "{" + Fingerprint.hash(tieId).substring(0, 32) + "}";
  }

  @Override
  public Duration timeout() {
    return timeout;
  }

  /**
   * Claims {@code key} for one execution. When the claim fails on this side (Redis slower than the
   * timeout, a lost connection) it may still have been made in Redis, with a fence this holder never
   * learnt: the store then undoes it ({@code idempotency-abandon.lua}, matched by a token unique to
   * this claim request, sent right after on the same connection so that Redis runs it after the
   * claim), instead of leaving the key {@code busy} for a whole lease.
   */
  @Override
  public CompletableFuture<Claim> claim(String key, String fingerprint, Duration lease) {
    return claim(key, fingerprint, lease, true);
  }

  /**
   * As {@link #claim(String, String, Duration)}; with {@code abandonIfUnanswered} false a claim that
   * failed on this side is left to its lease (tied requests: the copy whose claim went unanswered
   * runs anyway, so the claim it may hold must keep the other copy from running too).
   */
  public CompletableFuture<Claim> claim(String key, String fingerprint, Duration lease, boolean abandonIfUnanswered) {
    long ms = Math.max(1, lease.toMillis());
    String holder = abandonIfUnanswered ? holderToken() : "";
    CompletableFuture<Claim> answer = new CompletableFuture<>();
    // one decision point: the reply and the timeout race to complete the answer; only one wins
    scripts.claim(key, fingerprint, ms, holder).whenComplete((claim, error) -> {
      if (error != null) {
        answer.completeExceptionally(error);
        return;
      }
      if (!answer.complete(claim) && abandonIfUnanswered && claim instanceof Claim.Claimed made) {
        // the answer came after the caller gave up on it: nobody runs under this claim
        release(made).thenAccept(released -> {
          if (released) {
            abandoned.increment();
          }
        });
      }
    });
    answer.orTimeout(timeout.toNanos(), TimeUnit.NANOSECONDS);
    if (abandonIfUnanswered) {
      answer.whenComplete((claim, error) -> {
        if (error != null) {
          abandon(key, holder);
        }
      });
    }
    return answer;
  }

  private void abandon(String key, String holder) {
    abandonsSent.increment();
    try {
      scripts.abandon(key, holder).whenComplete((removed, error) -> {
        if (error == null && removed) {
          abandoned.increment();
        }
      });
    } catch (RuntimeException closed) {
      // the connection is gone: the claim, if made, lapses with its lease
    }
  }

  private static String holderToken() {
    java.util.concurrent.ThreadLocalRandom r = java.util.concurrent.ThreadLocalRandom.current();
    return Long.toHexString(r.nextLong()) + Long.toHexString(r.nextLong()) + Long.toHexString(System.nanoTime());
  }

  /** Claims that failed on this side and were undone in Redis (a made claim whose reply was lost). */
  public long unansweredClaimsAbandoned() {
    return abandoned.sum();
  }

  /** Claims that failed on this side, for which an undo was sent. */
  public long unansweredClaims() {
    return abandonsSent.sum();
  }

  /** Stores {@code response} under the claim: true when stored, false when fenced off. */
  @Override
  public CompletableFuture<Boolean> complete(Claim.Claimed claim, StoredResponse response, Duration ttl) {
    return bounded(scripts.complete(claim.key(), claim.fence(), response.status(), response.encodedHeaders(),
        response.encodedBody(), Math.max(1, ttl.toMillis())));
  }

  /** Gives the claim up: true when released, false when it was no longer this holder's. */
  @Override
  public CompletableFuture<Boolean> release(Claim.Claimed claim) {
    return bounded(scripts.release(claim.key(), claim.fence()));
  }

  /** Extends a running claim's lease to {@code lease} from now: true when renewed, false when fenced off. */
  @Override
  public CompletableFuture<Boolean> renew(Claim.Claimed claim, Duration lease) {
    return bounded(scripts.renew(claim.key(), claim.fence(), Math.max(1, lease.toMillis())));
  }

  private <T> CompletableFuture<T> bounded(CompletableFuture<T> call) {
    return call.orTimeout(timeout.toNanos(), TimeUnit.NANOSECONDS);
  }
}
