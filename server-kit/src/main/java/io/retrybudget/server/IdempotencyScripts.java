package io.retrybudget.server;

import io.retrybudget.budget.redis.protocol.LuaScript;
import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;

/**
 * The typed protocol of {@code lua/idempotency-*.lua} (documented in lua/README.md, "server-kit"):
 * the only place where their positional arguments are built and their replies parsed, for
 * {@link ClaimStore} and {@link KeyLookup}. Each method is one script call on one record key, by
 * SHA over the shared {@link RedisBudgetStore} (its text once on NOSCRIPT). A failed call fails the
 * future with the store's error as it is; a reply the script never gives fails it with an
 * {@link IllegalStateException}. No deadline here: callers put their own on the futures.
 */
final class IdempotencyScripts {
  /** Where server-kit's jar holds lua/idempotency-*.lua (its pom copies them there). */
  static final String DIRECTORY = "/io/retrybudget/server/lua/";
  static final LuaScript CLAIM = LuaScript.load(IdempotencyScripts.class, DIRECTORY, "idempotency-claim.lua");
  static final LuaScript COMPLETE = LuaScript.load(IdempotencyScripts.class, DIRECTORY, "idempotency-complete.lua");
  static final LuaScript RELEASE = LuaScript.load(IdempotencyScripts.class, DIRECTORY, "idempotency-release.lua");
  static final LuaScript RENEW = LuaScript.load(IdempotencyScripts.class, DIRECTORY, "idempotency-renew.lua");
  static final LuaScript ABANDON = LuaScript.load(IdempotencyScripts.class, DIRECTORY, "idempotency-abandon.lua");
  static final LuaScript PEEK = LuaScript.load(IdempotencyScripts.class, DIRECTORY, "idempotency-peek.lua");

  /** What idempotency-peek.lua found: the record's state, and for a stored answer its PTTL (-1: none). */
  record Peek(State state, long ttlMillis) {
    enum State { NONE, BUSY, DONE }
  }

  private final RedisBudgetStore redis;

  IdempotencyScripts(RedisBudgetStore redis) {
    this.redis = Objects.requireNonNull(redis, "redis must not be null");
  }

  /**
   * idempotency-claim.lua: claims {@code key} for a request with {@code fingerprint} for
   * {@code leaseMillis}; {@code holder} (1-64 characters, or empty for none) lets
   * {@link #abandon} undo a claim whose reply was lost.
   */
  CompletableFuture<Claim> claim(String key, String fingerprint, long leaseMillis, String holder) {
    return parsed(CLAIM, key, reply -> parseClaim(key, reply), fingerprint, Long.toString(leaseMillis), holder);
  }

  /**
   * idempotency-complete.lua: stores an answer (status, headers and body as the caller encoded them)
   * under the claim fenced by {@code fence}, kept {@code ttlMillis}: true stored, false fenced off.
   */
  CompletableFuture<Boolean> complete(String key, long fence, int status, String encodedHeaders, String encodedBody,
      long ttlMillis) {
    return parsed(COMPLETE, key, reply -> either(COMPLETE, reply, "stored", "fenced"), Long.toString(fence),
        Integer.toString(status), encodedHeaders, encodedBody, Long.toString(ttlMillis));
  }

  /** idempotency-release.lua: gives the claim up: true released, false no longer this fence's. */
  CompletableFuture<Boolean> release(String key, long fence) {
    return parsed(RELEASE, key, reply -> either(RELEASE, reply, "released", "fenced"), Long.toString(fence));
  }

  /** idempotency-renew.lua: the claim's lease to {@code leaseMillis} from now: true renewed, false fenced off. */
  CompletableFuture<Boolean> renew(String key, long fence, long leaseMillis) {
    return parsed(RENEW, key, reply -> either(RENEW, reply, "renewed", "fenced"), Long.toString(fence),
        Long.toString(leaseMillis));
  }

  /**
   * idempotency-abandon.lua: removes a claim still in progress under {@code holder}: true removed,
   * false kept (another holder's, finished, or none).
   */
  CompletableFuture<Boolean> abandon(String key, String holder) {
    return parsed(ABANDON, key, reply -> either(ABANDON, reply, "abandoned", "kept"), holder);
  }

  /** idempotency-peek.lua: what the record holds, read only. */
  CompletableFuture<Peek> peek(String key) {
    return parsed(PEEK, key, IdempotencyScripts::parsePeek);
  }

  private <T> CompletableFuture<T> parsed(LuaScript script, String key, Function<List<Object>, T> parse, String... args) {
    CompletableFuture<T> result = new CompletableFuture<>();
    redis.run(script, new String[] {key}, args).whenComplete((reply, error) -> {
      if (error != null) {
        result.completeExceptionally(error);
        return;
      }
      try {
        result.complete(parse.apply(reply));
      } catch (RuntimeException e) {
        result.completeExceptionally(e);
      }
    });
    return result;
  }

  static boolean either(LuaScript script, List<Object> reply, String yes, String no) {
    String what = first(script, reply);
    if (what.equals(yes)) {
      return true;
    }
    if (what.equals(no)) {
      return false;
    }
    throw unexpected(script, reply);
  }

  static Claim parseClaim(String key, List<Object> reply) {
    switch (first(CLAIM, reply)) {
      case "claimed":
        return new Claim.Claimed(key, Long.parseLong(String.valueOf(reply.get(1))), "takeover".equals(reply.get(2)));
      case "busy":
        return new Claim.Busy(Long.parseLong(String.valueOf(reply.get(1))));
      case "mismatch":
        return new Claim.Mismatch();
      case "done":
        return new Claim.Done(StoredResponse.decode(str(reply, 1), str(reply, 2), str(reply, 3)));
      default:
        throw unexpected(CLAIM, reply);
    }
  }

  static Peek parsePeek(List<Object> reply) {
    return switch (first(PEEK, reply)) {
      case "none" -> new Peek(Peek.State.NONE, 0);
      case "busy" -> new Peek(Peek.State.BUSY, 0);
      case "done" -> new Peek(Peek.State.DONE, Long.parseLong(str(reply, 1)));
      default -> throw unexpected(PEEK, reply);
    };
  }

  private static String first(LuaScript script, List<Object> reply) {
    if (reply == null || reply.isEmpty()) {
      throw unexpected(script, reply);
    }
    return String.valueOf(reply.get(0));
  }

  private static IllegalStateException unexpected(LuaScript script, List<Object> reply) {
    return new IllegalStateException("unexpected reply of " + script + ": " + reply);
  }

  private static String str(List<Object> reply, int i) {
    return i < reply.size() && reply.get(i) != null ? String.valueOf(reply.get(i)) : "";
  }
}
