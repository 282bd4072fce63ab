package io.retrybudget.server;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.LongAdder;

/**
 * The server side of tied requests ("The Tail at Scale"): a client sends two copies of a call,
 * tagged with one {@code X-Tie-Id}, to two replicas about 1 ms apart; each replica claims the tie
 * in Redis when it starts executing (the key store's claim primitive, {@link ClaimStore}); the
 * copy that loses stops before doing any work and answers at once with 409
 * {@code urn:retrybudget:problem:tie-lost} and {@code X-Tie-Lost: true}, which {@link TiedSender}
 * treats as no failure. The copy that runs (it won the tie, or Redis could not be asked) carries
 * {@code X-Tie-Won: true} on its answer, set by the adapters before the handler runs: only such an
 * answer decides the call at once in {@link TiedSender}. Place the tie guard before the
 * idempotency guard and the admission handler, so that what they refuse is a copy that won. A request without a tie id runs as usual. Redis down: the copy runs (both
 * may: tied copies are hedges, so the operation must tolerate a duplicate or carry an
 * Idempotency-Key).
 */
public final class TieGuard {
  public static final String TIE_HEADER = "X-Tie-Id";
  public static final String LOST_HEADER = "X-Tie-Lost";
  /** On the answer of a tied copy that passed the guard and ran (value {@code true}). */
  public static final String WON_HEADER = "X-Tie-Won";

  /** What to do with a request. */
  public enum Decision {
    /** No tie, or this copy won it, or the tie could not be asked: run the handler. */
    EXECUTE,
    /** The other copy has it: answer {@link #lostAnswer()} without working. */
    LOST
  }

  private final ClaimStore store;
  private final ServerKitListener listener;
  private final Duration lease;
  private final LongAdder won = new LongAdder();
  private final LongAdder lost = new LongAdder();
  private final LongAdder unavailable = new LongAdder();

  /** {@code lease}: how long a tie is held (the handler's deadline; the record lives two leases). */
  public TieGuard(ClaimStore store, Duration lease) {
    this(store, lease, ServerKitListener.NONE);
  }

  /** With a listener for metrics ({@code MicrometerServerKitMetrics}). */
  public TieGuard(ClaimStore store, Duration lease, ServerKitListener listener) {
    this.listener = Objects.requireNonNull(listener, "listener must not be null");
    this.store = Objects.requireNonNull(store, "store must not be null");
    if (lease == null || lease.isNegative() || lease.isZero()) {
      throw new IllegalArgumentException("lease must be positive, was " + lease);
    }
    this.lease = lease;
  }

  /** Claims the request's tie, if it has one. Never fails. */
  public CompletableFuture<Decision> begin(RequestView request) {
    String tie = request.header(TIE_HEADER);
    if (tie == null || tie.isBlank() || tie.length() > 200) {
      return CompletableFuture.completedFuture(Decision.EXECUTE);
    }
    return store.claim(ClaimStore.tieKey(tie.strip()), "tie", lease, false).handle((claim, error) -> {
      String route = request.route() == null ? "" : request.route();
      if (error != null) {
        unavailable.increment();
        ServerKitListener.safely(() -> listener.onTie(route, ServerKitListener.TieOutcome.UNASKED));
        return Decision.EXECUTE;
      }
      if (claim instanceof Claim.Claimed) {
        won.increment();
        ServerKitListener.safely(() -> listener.onTie(route, ServerKitListener.TieOutcome.WON));
        return Decision.EXECUTE;
      }
      lost.increment();
      ServerKitListener.safely(() -> listener.onTie(route, ServerKitListener.TieOutcome.LOST));
      return Decision.LOST;
    });
  }

  /** The loser's answer: 409 problem+json with {@code X-Tie-Lost: true}. */
  public static StoredResponse lostAnswer() {
    return Problems.of(409, "tie-lost", "Tie lost", "the other copy of this tied request is being served")
        .withHeader(LOST_HEADER, "true");
  }

  /** Ties won, lost, and copies run because Redis could not be asked (monotonic). */
  public long[] stats() {
    return new long[] {won.sum(), lost.sum(), unavailable.sum()};
  }
}
