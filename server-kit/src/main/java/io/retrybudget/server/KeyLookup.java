package io.retrybudget.server;

import io.retrybudget.budget.redis.protocol.LuaScript;
import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import java.time.Duration;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * What the Idempotency-Key store holds for a request's key, read before shedding ({@link
 * io.retrybudget.server.vertx.VertxAdmission}, {@link io.retrybudget.server.servlet.AdmissionFilter}):
 * a key with a stored answer makes the request a replay, which costs one Redis call and is never
 * shed; a key with a claim makes it a retry, whatever its {@code X-Retry-Attempt} says. One
 * read-only script call ({@code lua/idempotency-peek.lua}) on the record the guard would claim:
 * the same caller scope and key ({@link IdempotencyConfig#recordKey}), so build it with the guard's
 * config. Asynchronous, ends within {@code timeout}; never throws.
 */
public final class KeyLookup {
  static final LuaScript PEEK = LuaScript.load("idempotency-peek.lua");

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

  private final RedisBudgetStore redis;
  private final Duration timeout;
  private final IdempotencyConfig config;

  public KeyLookup(RedisBudgetStore redis, Duration timeout, IdempotencyConfig config) {
    this.redis = Objects.requireNonNull(redis, "redis must not be null");
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
    return redis.run(PEEK, new String[] {record})
        .orTimeout(timeout.toNanos(), TimeUnit.NANOSECONDS)
        .handle((reply, error) -> error != null || reply == null || reply.isEmpty() ? Seen.NONE : seen(reply));
  }

  private static Seen seen(java.util.List<Object> reply) {
    String state = String.valueOf(reply.get(0));
    if (state.equals("busy")) {
      return Seen.IN_PROGRESS;
    }
    if (state.equals("done")) {
      long ttl;
      try {
        ttl = Long.parseLong(String.valueOf(reply.get(1)));
      } catch (RuntimeException e) {
        return Seen.IN_PROGRESS;
      }
      // about to expire: the claim may find nothing and run, so it is admitted as a retry instead
      return ttl == -1 || ttl > STORED_MARGIN_MS ? Seen.STORED : Seen.IN_PROGRESS;
    }
    return Seen.NONE;
  }
}
