package io.retrybudget.server;

import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import java.time.Duration;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * What the Idempotency-Key store holds for a request's key, read before shedding ({@code VertxAdmission}
 * in retry-budget-server-kit-vertx, {@code AdmissionFilter} in retry-budget-server-kit-servlet):
 * a key with a stored answer makes the request a replay, which costs one Redis call and is never
 * shed; a key with a claim makes it a retry, whatever its {@code X-Retry-Attempt} says. One
 * read-only script call ({@code lua/idempotency-peek.lua}, {@link IdempotencyScripts#peek}) on the record the guard would claim:
 * the same caller scope and key ({@link IdempotencyConfig#recordKey}), so build it with the guard's
 * config. Asynchronous, ends within {@code timeout}; never throws.
 */
public final class KeyLookup {
  /** A stored answer that expires sooner than this is not counted on: the request may have to run. */
  static final long STORED_MARGIN_MS = 1000;

  /** What the store holds for a key. */
  public enum Seen {
    /** No record (or the key could not be looked up): the request is what its attempt header says. */
    NONE,
    /** Claimed by an earlier request with the key: this one is a retry. */
    IN_PROGRESS,
    /** An answer is stored: this request is a replay (or a 422), answered without running. */
    STORED
  }

  private final IdempotencyScripts scripts;
  private final Duration timeout;
  private final IdempotencyConfig config;

  public KeyLookup(RedisBudgetStore redis, Duration timeout, IdempotencyConfig config) {
    this.scripts = new IdempotencyScripts(redis);
    if (timeout == null || timeout.isNegative() || timeout.isZero()) {
      throw new IllegalArgumentException("timeout must be positive, was " + timeout);
    }
    this.timeout = timeout;
    this.config = Objects.requireNonNull(config, "config must not be null");
  }

  /** Whether the request has a key the guard would use (a guarded method, one valid key line). */
  public boolean applies(RequestView request) {
    return key(request) != null;
  }

  private String key(RequestView request) {
    if (!config.methods().contains(request.method().toUpperCase(Locale.ROOT))
        || request.headerLines(config.keyHeader()) > 1) {
      return null;
    }
    String raw = request.header(config.keyHeader());
    return raw == null ? null : IdempotencyKeyHeader.parse(raw, config.maxKeyLength());
  }

  /** What the store holds for the request's key; NONE when it has none or Redis does not answer in time. */
  public CompletableFuture<Seen> lookup(RequestView request) {
    String key;
    String record;
    try {
      key = key(request);
      if (key == null) {
        return CompletableFuture.completedFuture(Seen.NONE);
      }
      record = config.recordKey(request, key);
    } catch (RuntimeException e) {
      return CompletableFuture.completedFuture(Seen.NONE);
    }
    return scripts.peek(record)
        .orTimeout(timeout.toNanos(), TimeUnit.NANOSECONDS)
        .handle((peek, error) -> error != null ? Seen.NONE : seen(peek));
  }

  private static Seen seen(IdempotencyScripts.Peek peek) {
    return switch (peek.state()) {
      case BUSY -> Seen.IN_PROGRESS;
      // about to expire: the claim may find nothing and run, so it is admitted as a retry instead
      case DONE -> peek.ttlMillis() == -1 || peek.ttlMillis() > STORED_MARGIN_MS ? Seen.STORED : Seen.IN_PROGRESS;
      case NONE -> Seen.NONE;
    };
  }
}
