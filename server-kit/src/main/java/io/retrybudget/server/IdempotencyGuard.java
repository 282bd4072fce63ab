package io.retrybudget.server;

import io.retrybudget.retry.RetryScheduler;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;

/**
 * The Idempotency-Key protocol, framework-free (draft-ietf-httpapi-idempotency-key-header-07):
 * {@link #begin} decides whether a request executes or is answered at once (replay, 400, 409, 422,
 * 503). An execution holds a claim whose lifecycle ({@link ClaimLifecycle}: lease renewals, the
 * handler's deadline, storing or releasing) runs here: an adapter either hands the handler's future
 * to {@link #handle} (Vert.x) or reports its end with {@link #finish}, {@link #failed} or {@link
 * #abandon} (servlet). Nothing here blocks: every step is a future that ends within the store's
 * timeout (waits for an in-progress duplicate within {@link IdempotencyConfig#waitForInProgress()}).
 */
public final class IdempotencyGuard implements AutoCloseable {
  public static final String REPLAYED_HEADER = "Idempotent-Replayed";
  public static final String BODY_OMITTED_HEADER = "Idempotent-Body-Omitted";

  /** What {@link #begin} decided. */
  public sealed interface Begin {}

  /** Run the handler, then call {@link #handle}, or {@link #finish}, {@link #failed} or {@link #abandon}. */
  public record Execute(Execution execution) implements Begin {}

  /** Do not run the handler: send this answer. */
  public record Answer(StoredResponse response) implements Begin {}

  /** What to send the client of an execution: a response, or (exactly one of them) a failure to report. */
  public record Reply(StoredResponse response, Throwable failure) {}

  /** One execution of a handler; {@link #guarded()} is false when it runs without a claim. */
  public static final class Execution {
    private final ClaimRun run;
    private final IdempotencyContext context;

    private Execution(ClaimRun run) {
      this.run = run;
      this.context = run == null ? IdempotencyContext.UNGUARDED : new IdempotencyContext(run);
    }

    /** True while the lease is renewed (from {@link #begin} until the handler's end, at most maxHold). */
    public boolean renewing() {
      return run != null && run.renewing();
    }

    public boolean guarded() {
      return run != null;
    }

    /** The claim, or null when unguarded. */
    public Claim.Claimed claim() {
      return run == null ? null : run.claim();
    }

    /** What the handler may know and say of this execution (its fencing token). */
    public IdempotencyContext context() {
      return context;
    }

    ClaimRun run() {
      return run;
    }
  }

  /** Counters since start (monotonic). */
  public record Stats(long executed, long replayed, long inProgress, long mismatched, long missingKey,
      long unavailable, long unguarded, long fencedWrites, long released, long claimsLost) {}

  private final ClaimBackend store;
  private final IdempotencyConfig config;
  private final ScheduledThreadPoolExecutor timer; // null when the scheduler is the caller's
  private final RetryScheduler scheduler;
  private final LongSupplier nanoClock;
  private volatile boolean closed;
  private final java.util.concurrent.ConcurrentHashMap<CompletableFuture<Begin>, RequestView> waiting =
      new java.util.concurrent.ConcurrentHashMap<>();
  private final java.util.Set<ClaimRun> running = java.util.concurrent.ConcurrentHashMap.newKeySet();
  private final LongAdder executed = new LongAdder();
  private final LongAdder replayed = new LongAdder();
  private final LongAdder inProgress = new LongAdder();
  private final LongAdder mismatched = new LongAdder();
  private final LongAdder missingKey = new LongAdder();
  private final LongAdder unavailable = new LongAdder();
  private final LongAdder unguarded = new LongAdder();
  private final LongAdder fencedWrites = new LongAdder();
  private final LongAdder released = new LongAdder();
  private final LongAdder claimsLost = new LongAdder();
  private final ServerKitListener listener;

  private void emit(String route, ServerKitListener.IdempotencyOutcome outcome) {
    if (listener != ServerKitListener.NONE) {
      ServerKitListener.safely(() -> listener.onIdempotency(route == null ? "" : route, outcome));
    }
  }

  public IdempotencyGuard(ClaimBackend store, IdempotencyConfig config) {
    this(store, config, ServerKitListener.NONE);
  }

  /** With a listener for metrics ({@code MicrometerServerKitMetrics}). */
  public IdempotencyGuard(ClaimBackend store, IdempotencyConfig config, ServerKitListener listener) {
    this(store, config, listener, null, System::nanoTime);
  }

  /**
   * With the timer and clock given (tests run it on fake time): {@code scheduler} runs the polls of
   * waiting duplicates, the lease renewals and the handlers' deadlines; {@code nanoClock} measures
   * waits and how long a claim has been held. The caller owns {@code scheduler}.
   */
  public IdempotencyGuard(ClaimBackend store, IdempotencyConfig config, ServerKitListener listener,
      RetryScheduler scheduler, LongSupplier nanoClock) {
    this.store = Objects.requireNonNull(store, "store must not be null");
    this.config = Objects.requireNonNull(config, "config must not be null");
    this.listener = Objects.requireNonNull(listener, "listener must not be null");
    this.nanoClock = Objects.requireNonNull(nanoClock, "nanoClock must not be null");
    if (scheduler != null) {
      this.timer = null;
      this.scheduler = scheduler;
    } else {
      // one daemon thread for the polls of waiting duplicates, the renewals and the deadlines
      this.timer = new ScheduledThreadPoolExecutor(1, r -> {
        Thread t = new Thread(r, "idempotency-wait");
        t.setDaemon(true);
        return t;
      });
      timer.setRemoveOnCancelPolicy(true);
      this.scheduler = RetryScheduler.of(timer);
    }
  }

  public IdempotencyConfig config() {
    return config;
  }

  public Stats stats() {
    return new Stats(executed.sum(), replayed.sum(), inProgress.sum(), mismatched.sum(), missingKey.sum(),
        unavailable.sum(), unguarded.sum(), fencedWrites.sum(), released.sum(), claimsLost.sum());
  }

  /** Decides what to do with a request. Never fails: Redis trouble becomes 503 or an unguarded run. */
  public CompletableFuture<Begin> begin(RequestView request) {
    if (!config.methods().contains(request.method().toUpperCase(Locale.ROOT))) {
      return CompletableFuture.completedFuture(new Execute(new Execution(null))); // not a guarded method
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
      return CompletableFuture.completedFuture(new Execute(new Execution(null)));
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
    long waitUntil = nanoClock.getAsLong() + config.waitForInProgress().toNanos();
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
        result.complete(new Execute(new Execution(started(c, request.route()))));
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
        long leftNanos = waitUntil - nanoClock.getAsLong();
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
          if (closed) {
            throw new IllegalStateException("closed");
          }
          scheduler.schedule(() -> {
            if (waiting.remove(result) != null) {
              attempt(request, recordKey, fingerprint, waitUntil, Math.min(pollMillis * 2, 200), result);
            }
          }, delay);
        } catch (RuntimeException closed) {
          waiting.remove(result);
          result.complete(unavailable(request));
        }
      }
    });
  }

  /** Starts the lifecycle of a claim just made: its lease is renewed from now on. */
  private ClaimRun started(Claim.Claimed claim, String route) {
    ClaimRun run = new ClaimRun(claim, store, config, scheduler, nanoClock, this::storable,
        outcome -> ended(route, outcome), running::remove);
    running.add(run);
    if (closed) {
      run.fire(new ClaimLifecycle.Closed()); // the claim holds for its lease only
    } else {
      run.start();
    }
    return run;
  }

  private void ended(String route, ServerKitListener.IdempotencyOutcome outcome) {
    switch (outcome) {
      case FENCED -> fencedWrites.increment();
      case RELEASED -> released.increment();
      case CLAIM_LOST -> claimsLost.increment();
      default -> { }
    }
    emit(route, outcome);
  }

  /** Executions whose lease is being renewed now. */
  public int renewing() {
    int n = 0;
    for (ClaimRun r : running) {
      n += r.renewing() ? 1 : 0;
    }
    return n;
  }

  private Begin unavailable(RequestView request) {
    unavailable.increment();
    // only guarded methods get here (the others return before Redis is asked): a method the
    // operator put in methods() fails closed like POST, whatever HTTP says of its idempotence
    if (config.failOpen()) {
      unguarded.increment();
      emit(request.route(), ServerKitListener.IdempotencyOutcome.STORE_ERROR_FAIL_OPEN);
      return new Execute(new Execution(null));
    }
    emit(request.route(), ServerKitListener.IdempotencyOutcome.STORE_ERROR_FAIL_CLOSED);
    return new Answer(Problems.withPushback(Problems.of(503, "idempotency-store-unavailable",
        "Idempotency store unavailable", "the request cannot be deduplicated now; retry later with the same key"),
        config.unavailableRetryAfter()));
  }

  /**
   * Runs an execution to its end (the Vert.x adapter): the handler's {@code answer} is stored or the
   * claim released as the lifecycle says ({@link ClaimLifecycle}), and the reply ends with what to
   * send the client — the answer once Redis has it, the stored {@code handler-failed} 500 under
   * STORE_ALL, the failure to report when the claim was released, or the 503
   * {@code handler-timeout} at {@link IdempotencyConfig#handlerTimeout()} if the handler is late
   * (its claim is kept, renewed, and its late answer stored). Never fails.
   */
  public CompletableFuture<Reply> handle(Execution execution, java.util.concurrent.CompletionStage<StoredResponse> answer) {
    if (!execution.guarded()) {
      return answer.toCompletableFuture().handle((a, error) -> error != null ? new Reply(null, unwrap(error))
          : a == null ? new Reply(null, new NullPointerException("the handler answered null")) : new Reply(a, null));
    }
    ClaimRun run = execution.run();
    run.armDeadline(config.handlerTimeout());
    answer.whenComplete((a, error) -> {
      if (error != null || a == null) {
        run.fire(new ClaimLifecycle.HandlerFailed(error != null ? unwrap(error) : new NullPointerException("the handler answered null")));
      } else {
        run.answered(a);
      }
    });
    return run.reply;
  }

  private static Throwable unwrap(Throwable t) {
    return t instanceof java.util.concurrent.CompletionException && t.getCause() != null ? t.getCause() : t;
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
    execution.run().answered(answer);
    return execution.run().written;
  }

  /**
   * The handler failed without an answer (it threw) after it started executing: a 500, stored as
   * {@code handler-failed} when the outcome policy stores 500 (STORE_ALL; the future then ends with
   * that answer, to be sent), else the claim is released (the future ends with null: report the
   * failure as usual). Never fails.
   */
  public CompletableFuture<StoredResponse> failed(Execution execution, Throwable failure) {
    if (!execution.guarded()) {
      return CompletableFuture.completedFuture(null);
    }
    ClaimRun run = execution.run();
    run.fire(new ClaimLifecycle.HandlerFailed(failure));
    return run.written.thenCompose(x -> run.reply).thenApply(Reply::response);
  }

  /** The handler did not run (or gave no answer and must not be replayed): releases the claim. */
  public CompletableFuture<Void> abandon(Execution execution) {
    if (!execution.guarded()) {
      return CompletableFuture.completedFuture(null);
    }
    execution.run().fire(new ClaimLifecycle.Abandoned());
    return execution.run().written;
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

  /**
   * Stops the timer: waiting duplicates are answered 503 (or run, where that is allowed); running
   * executions stop renewing (their claims hold for one lease from the last renewal) and still
   * store their answers when they end.
   */
  @Override
  public void close() {
    closed = true;
    if (timer != null) {
      timer.shutdownNow();
    }
    for (ClaimRun r : running) {
      r.fire(new ClaimLifecycle.Closed());
    }
    for (var w : waiting.entrySet()) {
      if (waiting.remove(w.getKey()) != null) {
        w.getKey().complete(unavailable(w.getValue()));
      }
    }
  }
}
