package io.retrybudget.server;

import java.util.Locale;

/**
 * Hooks for metrics: what the kit decided, one call per decision. Every method has a no-op
 * default; the core carries no metrics library ({@code io.retrybudget.server.micrometer} binds
 * this to Micrometer). Called on the request's thread or Redis's reply thread: keep it short and
 * non-blocking. What a listener throws is logged (once a minute at most) and never reaches a
 * request.
 *
 * <p>{@code route} is always the framework's route template (never the concrete path), "" when the
 * request matched none.
 */
public interface ServerKitListener {
  ServerKitListener NONE = new ServerKitListener() {};

  /** How the idempotency guard handled a request, or how its execution ended. */
  enum IdempotencyOutcome {
    /** First request with the key: claimed, the handler runs. */
    CLAIMED,
    /** A duplicate after completion: the stored answer was replayed. */
    REPLAYED,
    /** A duplicate while the first runs: 409. */
    CONFLICT,
    /** The key was used with another fingerprint: 422. */
    MISMATCH,
    /** No key on a route that requires one: 400. */
    MISSING,
    /** An unreadable key, or more than one key field line: 400. */
    INVALID,
    /** No key where none is required: the handler runs unguarded. */
    NO_KEY,
    /** Redis failed or was too slow; fail closed: 503 with pushback. */
    STORE_ERROR_FAIL_CLOSED,
    /** Redis failed or was too slow; fail open: the handler runs unguarded. */
    STORE_ERROR_FAIL_OPEN,
    /** The handler's answer was stored for replays. */
    STORED,
    /**
     * Redis failed or was too slow when the answer was to be stored or the claim released: the
     * answer is sent anyway, the claim lapses with its lease.
     */
    STORE_ERROR_WRITE,
    /** The answer's write was refused: the claim had been taken over (fenced). */
    FENCED,
    /** The claim was released (an outcome the policy does not store, or the handler failed). */
    RELEASED,
    /**
     * A renewal found the claim gone or another holder's while its handler still ran (Redis lost
     * the record, or the lease lapsed while Redis was out of reach): a duplicate may have executed
     * meanwhile, and this handler's answer will not be stored.
     */
    CLAIM_LOST;

    /** Lower-case name for metric tags. */
    public String tag() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /** How a tied copy's claim went. */
  enum TieOutcome {
    WON, LOST, /** Redis could not be asked: the copy runs. */ UNASKED;

    public String tag() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  default void onIdempotency(String route, IdempotencyOutcome outcome) {}

  default void onTie(String route, TieOutcome outcome) {}

  /** Admission of one request by the limiter named {@code limiter}: retry partition or first. */
  default void onAdmission(String limiter, boolean retry, boolean admitted) {}

  /** A request whose idempotency key has a stored answer was admitted as a replay, outside the limit. */
  default void onReplayAdmitted(String limiter) {}

  /** A shed answer was sent: wait (positive pushback) or do not retry (the whole service is overloaded). */
  default void onShedAnswer(String limiter, boolean doNotRetry) {}

  /**
   * A request of the {@link AdmissionQueue} named {@code queue} got a worker after waiting
   * {@code waitedNanos} (0 when a worker was free on arrival); {@code retry}: its partition.
   */
  default void onQueueStart(String queue, boolean retry, long waitedNanos) {}

  /** A request left the queue named {@code queue} without running, after waiting {@code waitedNanos}. */
  default void onQueueDrop(String queue, boolean retry, QueueDrop reason, long waitedNanos) {}

  /** A middle layer answered upstream with do-not-retry, for {@code reason}. */
  default void onSuppression(Downstream.Reason reason) {}

  /** Runs {@code call} on {@code listener}, keeping what it throws away from the request. */
  static void safely(Runnable call) {
    try {
      call.run();
    } catch (RuntimeException e) {
      Failures.log(e);
    }
  }

  /** Rate-limited logging of listener failures. */
  final class Failures {
    private static final System.Logger LOG = System.getLogger(ServerKitListener.class.getName());
    private static final java.util.concurrent.atomic.AtomicLong LAST = new java.util.concurrent.atomic.AtomicLong(Long.MIN_VALUE);

    private Failures() {}

    static void log(RuntimeException e) {
      long now = System.nanoTime();
      long last = LAST.get();
      if ((last == Long.MIN_VALUE || now - last >= 60_000_000_000L) && LAST.compareAndSet(last, now)) {
        LOG.log(System.Logger.Level.WARNING, "a ServerKitListener threw; the request went on", e);
      }
    }
  }
}
