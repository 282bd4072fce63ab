package io.retrybudget.server;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

/**
 * The Idempotency-Key protocol, framework-free (draft-ietf-httpapi-idempotency-key-header-07):
 * {@link #begin} decides whether a request executes or is answered at once (replay, 400, 409, 422,
 * 503); after executing, {@link #finish} stores the answer (or releases the claim, as the {@link
 * OutcomePolicy} says) and {@link #abandon} releases it when the handler threw. The adapters
 * ({@code server.vertx}, {@code server.servlet}) call these three. Nothing here blocks: every step
 * is a future that ends within the store's timeout (waits for an in-progress duplicate within
 * {@link IdempotencyConfig#waitForInProgress()}).
 */
public final class IdempotencyGuard implements AutoCloseable {
  public static final String REPLAYED_HEADER = "Idempotent-Replayed";
  public static final String BODY_OMITTED_HEADER = "Idempotent-Body-Omitted";

  /** What {@link #begin} decided. */
  public sealed interface Begin {}

  /** Run the handler, then call {@link #finish} or {@link #abandon} with this execution. */
  public record Execute(Execution execution) implements Begin {}

  /** Do not run the handler: send this answer. */
  public record Answer(StoredResponse response) implements Begin {}

  /** One execution of a handler; {@link #guarded()} is false when it runs without a claim. */
  public static final class Execution {
    private final Claim.Claimed claim;
    private final String route;
    private final java.util.concurrent.atomic.AtomicReference<java.util.concurrent.ScheduledFuture<?>> renewal =
        new java.util.concurrent.atomic.AtomicReference<>();
    private final java.util.concurrent.atomic.AtomicBoolean ended = new java.util.concurrent.atomic.AtomicBoolean();

    private Execution(Claim.Claimed claim, String route) {
      this.claim = claim;
      this.route = route;
    }

    /** Stops renewing the lease (idempotent); true the first time. */
    boolean end() {
      if (!ended.compareAndSet(false, true)) {
        return false;
      }
      var r = renewal.getAndSet(null);
      if (r != null) {
        r.cancel(false);
      }
      return true;
    }

    /** True while the lease is renewed (from {@link #begin} to finish, abandon, timedOut or close). */
    public boolean renewing() {
      return !ended.get() && renewal.get() != null;
    }

    public boolean guarded() {
      return claim != null;
    }

    /** The claim, or null when unguarded. */
    public Claim.Claimed claim() {
      return claim;
    }
  }

  /** Counters since start (monotonic). */
  public record Stats(long executed, long replayed, long inProgress, long mismatched, long missingKey,
      long unavailable, long unguarded, long fencedWrites, long released) {}

  private final ClaimStore store;
  private final IdempotencyConfig config;
  private final ScheduledThreadPoolExecutor timer;
  private final java.util.concurrent.ConcurrentHashMap<CompletableFuture<Begin>, RequestView> waiting =
      new java.util.concurrent.ConcurrentHashMap<>();
  private final java.util.Set<Execution> running = java.util.concurrent.ConcurrentHashMap.newKeySet();
  private final LongAdder executed = new LongAdder();
  private final LongAdder replayed = new LongAdder();
  private final LongAdder inProgress = new LongAdder();
  private final LongAdder mismatched = new LongAdder();
  private final LongAdder missingKey = new LongAdder();
  private final LongAdder unavailable = new LongAdder();
  private final LongAdder unguarded = new LongAdder();
  private final LongAdder fencedWrites = new LongAdder();
  private final LongAdder released = new LongAdder();
  private final ServerKitListener listener;

  private void emit(String route, ServerKitListener.IdempotencyOutcome outcome) {
    if (listener != ServerKitListener.NONE) {
      ServerKitListener.safely(() -> listener.onIdempotency(route == null ? "" : route, outcome));
    }
  }

  public IdempotencyGuard(ClaimStore store, IdempotencyConfig config) {
    this(store, config, ServerKitListener.NONE);
  }

  /** With a listener for metrics ({@code MicrometerServerKitMetrics}). */
  public IdempotencyGuard(ClaimStore store, IdempotencyConfig config, ServerKitListener listener) {
    this.store = Objects.requireNonNull(store, "store must not be null");
    this.config = Objects.requireNonNull(config, "config must not be null");
    this.listener = Objects.requireNonNull(listener, "listener must not be null");
    // one daemon thread for the polls of waiting duplicates and the lease renewals of running handlers
    this.timer = new ScheduledThreadPoolExecutor(1, r -> {
      Thread t = new Thread(r, "idempotency-wait");
      t.setDaemon(true);
      return t;
    });
    timer.setRemoveOnCancelPolicy(true);
  }

  public IdempotencyConfig config() {
    return config;
  }

  public Stats stats() {
    return new Stats(executed.sum(), replayed.sum(), inProgress.sum(), mismatched.sum(), missingKey.sum(),
        unavailable.sum(), unguarded.sum(), fencedWrites.sum(), released.sum());
  }

  /** Decides what to do with a request. Never fails: Redis trouble becomes 503 or an unguarded run. */
  public CompletableFuture<Begin> begin(RequestView request) {
    if (!config.methods().contains(request.method().toUpperCase(Locale.ROOT))) {
      return CompletableFuture.completedFuture(new Execute(new Execution(null, request.route()))); // not a guarded method
    }
    String raw = request.header(config.keyHeader());
    if (raw == null) {
      if (config.required()) {
        missingKey.increment();
        emit(request.route(), ServerKitListener.IdempotencyOutcome.MISSING);
        return CompletableFuture.completedFuture(new Answer(Problems.of(400, "idempotency-key-missing",
            "Idempotency-Key missing", "this operation requires an " + config.keyHeader() + " header")));
      }
      unguarded.increment();
      emit(request.route(), ServerKitListener.IdempotencyOutcome.NO_KEY);
      return CompletableFuture.completedFuture(new Execute(new Execution(null, request.route())));
    }
    if (request.headerLines(config.keyHeader()) > 1) {
      // several field lines combine to "a, b" (RFC 9110), which is no sf-string: which key is meant is unknown
      missingKey.increment();
      emit(request.route(), ServerKitListener.IdempotencyOutcome.INVALID);
      return CompletableFuture.completedFuture(new Answer(Problems.of(400, "idempotency-key-invalid",
          "Idempotency-Key invalid", "the request carries more than one " + config.keyHeader() + " field line")));
    }
    String key = IdempotencyKeyHeader.parse(raw, config.maxKeyLength());
    if (key == null) {
      missingKey.increment();
      emit(request.route(), ServerKitListener.IdempotencyOutcome.INVALID);
      return CompletableFuture.completedFuture(new Answer(Problems.of(400, "idempotency-key-invalid",
          "Idempotency-Key invalid", "the key must be 1 to " + config.maxKeyLength()
              + " visible ASCII characters, as a token or a quoted string")));
    }
    String recordKey;
    String fingerprint;
    try {
      recordKey = config.recordKey(request, key);
      fingerprint = Fingerprint.of(request, config.fingerprintHeaders());
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
    CompletableFuture<Begin> result = new CompletableFuture<>();
    long waitUntil = System.nanoTime() + config.waitForInProgress().toNanos();
    attempt(request, recordKey, fingerprint, waitUntil, 5, result);
    return result;
  }

  private void attempt(RequestView request, String recordKey, String fingerprint, long waitUntil, long pollMillis,
      CompletableFuture<Begin> result) {
    store.claim(recordKey, fingerprint, config.lease()).whenComplete((claim, error) -> {
      if (error != null) {
        result.complete(unavailable(request));
      } else if (claim instanceof Claim.Claimed c) {
        executed.increment();
        emit(request.route(), ServerKitListener.IdempotencyOutcome.CLAIMED);
        Execution execution = new Execution(c, request.route());
        renewWhileRunning(execution);
        result.complete(new Execute(execution));
      } else if (claim instanceof Claim.Done d) {
        replayed.increment();
        emit(request.route(), ServerKitListener.IdempotencyOutcome.REPLAYED);
        result.complete(new Answer(d.response().withHeader(REPLAYED_HEADER, "true")));
      } else if (claim instanceof Claim.Mismatch) {
        mismatched.increment();
        emit(request.route(), ServerKitListener.IdempotencyOutcome.MISMATCH);
        result.complete(new Answer(Problems.of(422, "idempotency-key-reused", "Idempotency-Key reused",
            "this key was used with another request (method, target, body or headers differ)")));
      } else if (claim instanceof Claim.Busy b) {
        long leftNanos = waitUntil - System.nanoTime();
        if (leftNanos <= 0) {
          inProgress.increment();
          emit(request.route(), ServerKitListener.IdempotencyOutcome.CONFLICT);
          Duration after = config.inProgressRetryAfter();
          if (b.leaseLeftMillis() < after.toMillis()) {
            after = Duration.ofMillis(Math.max(1, b.leaseLeftMillis()));
          }
          result.complete(new Answer(Problems.withPushback(Problems.of(409, "idempotency-key-in-progress",
              "Request in progress", "a request with this key is being processed; retry later"), after)));
          return;
        }
        long delay = Math.min(TimeUnit.MILLISECONDS.toNanos(pollMillis), leftNanos);
        waiting.put(result, request);
        try {
          timer.schedule(() -> {
            if (waiting.remove(result) != null) {
              attempt(request, recordKey, fingerprint, waitUntil, Math.min(pollMillis * 2, 200), result);
            }
          }, delay, TimeUnit.NANOSECONDS);
        } catch (RuntimeException closed) {
          waiting.remove(result);
          result.complete(unavailable(request));
        }
      }
    });
  }

  /**
   * Renews the claim every third of the lease (fenced: only while it is still this holder's
   * {@code busy} record) until {@link #finish}, {@link #abandon}, {@link #timedOut} or {@link
   * #close}: a holder that still runs is never joined by a duplicate, and one that crashed stops
   * renewing and lapses within one lease. A renewal Redis refuses or misses is tried again at the
   * next period; a fenced one (the record was taken over or is gone) stops the renewals.
   */
  private void renewWhileRunning(Execution execution) {
    Duration lease = config.lease();
    long period = Math.max(1, lease.toMillis() / 3);
    running.add(execution);
    try {
      execution.renewal.set(timer.scheduleWithFixedDelay(() -> store.renew(execution.claim(), lease)
          .whenComplete((renewed, error) -> {
            if (error == null && !renewed) {
                  stopRenewing(execution);
            }
          }), period, period, TimeUnit.MILLISECONDS));
    } catch (RuntimeException closed) {
      running.remove(execution); // the guard is closed: the claim holds for its lease only
    }
    // (the caller gets the Execution only after this, so it cannot have ended yet)
  }

  /**
   * The handler outran its deadline ({@link IdempotencyConfig#handlerTimeout()}) and its answer
   * was given up: stops renewing without releasing, so the claim holds until its lease ends (the
   * handler may still be working). A later {@link #finish} still stores the answer if nobody took
   * the record over, and a later {@link #abandon} still releases it.
   */
  public void timedOut(Execution execution) {
    if (execution.guarded()) {
      execution.end();
      running.remove(execution);
    }
  }

  /** Executions whose lease is being renewed now. */
  public int renewing() {
    return running.size();
  }

  private void stopRenewing(Execution execution) {
    execution.end();
    running.remove(execution);
  }

  private Begin unavailable(RequestView request) {
    unavailable.increment();
    // only guarded methods get here (the others return before Redis is asked): a method the
    // operator put in methods() fails closed like POST, whatever HTTP says of its idempotence
    if (config.failOpen()) {
      unguarded.increment();
      emit(request.route(), ServerKitListener.IdempotencyOutcome.STORE_ERROR_FAIL_OPEN);
      return new Execute(new Execution(null, request.route()));
    }
    emit(request.route(), ServerKitListener.IdempotencyOutcome.STORE_ERROR_FAIL_CLOSED);
    return new Answer(Problems.withPushback(Problems.of(503, "idempotency-store-unavailable",
        "Idempotency store unavailable", "the request cannot be deduplicated now; retry later with the same key"),
        config.unavailableRetryAfter()));
  }

  /**
   * The handler answered: stores what is to be replayed or releases the claim. The future ends
   * (never failed) when Redis has answered or the store's timeout passed; send the answer then, so
   * that a client that got it finds it stored when it retries.
   */
  public CompletableFuture<Void> finish(Execution execution, StoredResponse answer) {
    if (!execution.guarded()) {
      return CompletableFuture.completedFuture(null);
    }
    stopRenewing(execution);
    if (!config.outcomes().store(answer.status())) {
      return abandon(execution);
    }
    return store.complete(execution.claim(), storable(answer), config.resultTtl())
        .handle((stored, error) -> {
          if (error != null) {
            emit(execution.route, ServerKitListener.IdempotencyOutcome.STORE_ERROR_WRITE);
          } else if (!stored) {
            fencedWrites.increment();
            emit(execution.route, ServerKitListener.IdempotencyOutcome.FENCED);
          } else {
            emit(execution.route, ServerKitListener.IdempotencyOutcome.STORED);
          }
          return null;
        });
  }

  /** The handler failed without an answer: releases the claim so a duplicate executes. */
  public CompletableFuture<Void> abandon(Execution execution) {
    if (!execution.guarded()) {
      return CompletableFuture.completedFuture(null);
    }
    stopRenewing(execution);
    return store.release(execution.claim()).handle((done, error) -> {
      if (error != null) {
        emit(execution.route, ServerKitListener.IdempotencyOutcome.STORE_ERROR_WRITE);
      } else if (done) {
        released.increment();
        emit(execution.route, ServerKitListener.IdempotencyOutcome.RELEASED);
      }
      return null;
    });
  }

  /** The part of an answer that is kept: the chosen headers, the body if it fits. */
  StoredResponse storable(StoredResponse answer) {
    List<StoredResponse.Header> kept = new ArrayList<>();
    for (StoredResponse.Header h : answer.headers()) {
      String name = h.name().toLowerCase(Locale.ROOT);
      boolean chosen = config.storedHeaders().contains(name) || name.equals(BODY_OMITTED_HEADER.toLowerCase(Locale.ROOT));
      if (chosen && StoredResponse.storable(h.name(), h.value())) {
        kept.add(h);
      }
    }
    if (answer.bodyLength() > config.maxStoredBodyBytes()) {
      kept.add(new StoredResponse.Header(BODY_OMITTED_HEADER, "true"));
      return new StoredResponse(answer.status(), kept, new byte[0]);
    }
    return new StoredResponse(answer.status(), kept, answer.body());
  }

  /** Stops the wait timer; waiting duplicates are answered 503 (or run, where that is allowed). */
  @Override
  public void close() {
    timer.shutdownNow();
    for (Execution e : running) {
      stopRenewing(e); // their claims hold for one lease from the last renewal
    }
    for (var w : waiting.entrySet()) {
      if (waiting.remove(w.getKey()) != null) {
        w.getKey().complete(unavailable(w.getValue()));
      }
    }
  }
}
