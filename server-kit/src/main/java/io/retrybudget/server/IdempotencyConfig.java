package io.retrybudget.server;

import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.function.Function;

/**
 * How the Idempotency-Key store behaves on a route (draft-ietf-httpapi-idempotency-key-header-07).
 * Immutable, from {@link #builder()}, which names the wrong value. Defaults in the module README.
 */
public final class IdempotencyConfig {
  private final String keyHeader;
  private final java.util.Set<String> methods;
  private final boolean required;
  private final int maxKeyLength;
  private final Function<RequestView, String> callerIdentity;
  private final List<String> fingerprintHeaders;
  private final List<String> storedHeaders;
  private final Duration handlerTimeout;
  private final Duration leaseMargin;
  private final Duration resultTtl;
  private final int maxStoredBodyBytes;
  private final OutcomePolicy outcomes;
  private final Duration waitForInProgress;
  private final Duration inProgressRetryAfter;
  private final boolean failOpen;
  private final Duration unavailableRetryAfter;
  private final Duration maxHold;

  private IdempotencyConfig(Builder b) {
    this.keyHeader = b.keyHeader;
    this.methods = b.methods;
    this.required = b.required;
    this.maxKeyLength = b.maxKeyLength;
    this.callerIdentity = b.callerIdentity;
    this.fingerprintHeaders = b.fingerprintHeaders;
    this.storedHeaders = b.storedHeaders;
    this.handlerTimeout = b.handlerTimeout;
    this.leaseMargin = b.leaseMargin;
    this.resultTtl = b.resultTtl;
    this.maxStoredBodyBytes = b.maxStoredBodyBytes;
    this.outcomes = b.outcomes;
    this.waitForInProgress = b.waitForInProgress;
    this.inProgressRetryAfter = b.inProgressRetryAfter;
    this.failOpen = b.failOpen;
    this.unavailableRetryAfter = b.unavailableRetryAfter;
    this.maxHold = b.maxHold != null ? b.maxHold : defaultMaxHold(handlerTimeout);
  }

  /** Ten handler timeouts, at most the claim script's longest lease (24 h), at least one lease. */
  static Duration defaultMaxHold(Duration handlerTimeout) {
    Duration ten = handlerTimeout.multipliedBy(10);
    return ten.compareTo(Builder.MAX_LEASE) > 0 ? Builder.MAX_LEASE : ten;
  }

  public static Builder builder() {
    return new Builder();
  }

  public String keyHeader() {
    return keyHeader;
  }

  public boolean required() {
    return required;
  }

  /** The methods that are guarded (upper case); others pass through untouched. */
  public java.util.Set<String> methods() {
    return methods;
  }

  public int maxKeyLength() {
    return maxKeyLength;
  }

  public Function<RequestView, String> callerIdentity() {
    return callerIdentity;
  }

  /**
   * The Redis key of the record a request's idempotency key names: its caller's scope and the key.
   * Method and route are left out on purpose: a key reused on another route or with another method
   * finds the first request's record and is answered 422 (its fingerprint covers method and
   * target), as the draft asks of a key reused with a different request.
   */
  public String recordKey(RequestView request, String key) {
    String caller = Objects.requireNonNullElse(callerIdentity.apply(request), "");
    return ClaimStore.idempotencyKey(caller, key);
  }

  public List<String> fingerprintHeaders() {
    return fingerprintHeaders;
  }

  public List<String> storedHeaders() {
    return storedHeaders;
  }

  public Duration handlerTimeout() {
    return handlerTimeout;
  }

  /** The claim's lease: the handler's deadline plus the margin. */
  public Duration lease() {
    return handlerTimeout.plus(leaseMargin);
  }

  public Duration resultTtl() {
    return resultTtl;
  }

  public int maxStoredBodyBytes() {
    return maxStoredBodyBytes;
  }

  public OutcomePolicy outcomes() {
    return outcomes;
  }

  public Duration waitForInProgress() {
    return waitForInProgress;
  }

  public Duration inProgressRetryAfter() {
    return inProgressRetryAfter;
  }

  public boolean failOpen() {
    return failOpen;
  }

  public Duration unavailableRetryAfter() {
    return unavailableRetryAfter;
  }

  /**
   * How long a claim is kept by renewing its lease while its handler still runs, counted from the
   * claim (default ten handler timeouts, at most 24 h). Past {@link #handlerTimeout()} the client is
   * answered 503 but the claim is kept: duplicates get 409 and the late answer is stored. Past this,
   * renewals stop and the claim lapses one lease later; a handler still running then is no longer
   * protected from a duplicate (exactly once assumes handlers end within {@code maxHold}).
   */
  public Duration maxHold() {
    return maxHold;
  }

  public static final class Builder {
    private String keyHeader = "Idempotency-Key";
    private java.util.Set<String> methods = java.util.Set.of("POST", "PATCH");
    private boolean required = true;
    private int maxKeyLength = 255;
    private Function<RequestView, String> callerIdentity = CallerIdentity.principalOrCredentials();
    private List<String> fingerprintHeaders = List.of("content-type");
    private List<String> storedHeaders = List.of("content-type", "location", "etag", "last-modified", "cache-control");
    private Duration handlerTimeout = Duration.ofSeconds(30);
    private Duration leaseMargin = Duration.ofSeconds(5);
    private Duration resultTtl = Duration.ofHours(24);
    private int maxStoredBodyBytes = 64 * 1024;
    private OutcomePolicy outcomes = OutcomePolicy.STANDARD;
    private Duration waitForInProgress = Duration.ZERO;
    private Duration inProgressRetryAfter = Duration.ofSeconds(1);
    private boolean failOpen = false;
    private Duration unavailableRetryAfter = Duration.ofSeconds(1);
    private Duration maxHold; // null: ten handler timeouts

    private Builder() {}

    public Builder keyHeader(String name) {
      if (name == null || name.isBlank()) {
        throw new IllegalArgumentException("keyHeader must be a header name, was " + name);
      }
      this.keyHeader = name;
      return this;
    }

    /**
     * The methods guarded (default POST and PATCH, the non-idempotent ones the draft is for);
     * requests of other methods on the same route pass through untouched.
     */
    public Builder methods(java.util.Set<String> methods) {
      if (methods == null || methods.isEmpty()) {
        throw new IllegalArgumentException("methods must name at least one method, was " + methods);
      }
      java.util.Set<String> upper = new java.util.HashSet<>();
      for (String m : methods) {
        if (m == null || m.isBlank()) {
          throw new IllegalArgumentException("methods must hold method names, had '" + m + "'");
        }
        upper.add(m.strip().toUpperCase(Locale.ROOT));
      }
      this.methods = java.util.Set.copyOf(upper);
      return this;
    }

    /** Whether a request without a key is refused with 400 (default true); else it runs unguarded. */
    public Builder required(boolean required) {
      this.required = required;
      return this;
    }

    public Builder maxKeyLength(int length) {
      if (length < 1 || length > 1024) {
        throw new IllegalArgumentException("maxKeyLength must be in [1, 1024], was " + length);
      }
      this.maxKeyLength = length;
      return this;
    }

    /**
     * Who is asking (an account id, the authenticated principal): keys of different callers never
     * meet, and one caller never gets another's stored answer. Default {@link
     * CallerIdentity#principalOrCredentials()} (the principal, else a SHA-256 of the {@code
     * Authorization} credentials); {@link CallerIdentity#shared()} for one scope for everybody.
     * A null answer is the anonymous scope.
     */
    public Builder callerIdentity(Function<RequestView, String> identity) {
      this.callerIdentity = Objects.requireNonNull(identity, "callerIdentity must not be null");
      return this;
    }

    /** Headers that are part of the fingerprint beside method, target and body (default content-type). */
    public Builder fingerprintHeaders(List<String> names) {
      this.fingerprintHeaders = lower(names, "fingerprintHeaders");
      return this;
    }

    /** Response headers stored and replayed (default content-type, location, etag, last-modified, cache-control). */
    public Builder storedHeaders(List<String> names) {
      this.storedHeaders = lower(names, "storedHeaders");
      return this;
    }

    /** How long the handler may take (default 30 s); with the margin it makes the claim's lease. */
    public Builder handlerTimeout(Duration timeout) {
      this.handlerTimeout = positive(timeout, "handlerTimeout");
      return this;
    }

    /** Added to the handler timeout for the lease (default 5 s). */
    public Builder leaseMargin(Duration margin) {
      if (margin == null || margin.isNegative()) {
        throw new IllegalArgumentException("leaseMargin must be >= 0, was " + margin);
      }
      this.leaseMargin = margin;
      return this;
    }

    /** How long a finished answer is replayed (default 24 h). */
    public Builder resultTtl(Duration ttl) {
      this.resultTtl = positive(ttl, "resultTtl");
      return this;
    }

    /**
     * Largest body stored (default 64 KiB). A larger answer is sent to its caller but stored
     * without its body: duplicates get its status and stored headers, an empty body and
     * {@code Idempotent-Body-Omitted: true} (a 201 with Location stays useful).
     */
    public Builder maxStoredBodyBytes(int bytes) {
      if (bytes < 0 || bytes > 16 * 1024 * 1024) {
        throw new IllegalArgumentException("maxStoredBodyBytes must be in [0, 16 MiB], was " + bytes);
      }
      this.maxStoredBodyBytes = bytes;
      return this;
    }

    public Builder outcomes(OutcomePolicy policy) {
      this.outcomes = Objects.requireNonNull(policy, "outcomes must not be null");
      return this;
    }

    /**
     * How long a duplicate waits for the first request to finish and then replays its answer
     * (default 0: answer 409 at once, as the draft says).
     */
    public Builder waitForInProgress(Duration wait) {
      if (wait == null || wait.isNegative() || wait.compareTo(Duration.ofMinutes(5)) > 0) {
        throw new IllegalArgumentException("waitForInProgress must be in [0, 5 min], was " + wait);
      }
      this.waitForInProgress = wait;
      return this;
    }

    /** Retry-After / X-Retry-Pushback-Ms of a 409 (default 1 s; never beyond the holder's lease). */
    public Builder inProgressRetryAfter(Duration delay) {
      this.inProgressRetryAfter = positive(delay, "inProgressRetryAfter");
      return this;
    }

    /**
     * When Redis cannot be asked: false (default) refuses non-idempotent methods (POST, PATCH) with
     * 503 and pushback; true runs them unguarded. Idempotent methods always run.
     */
    public Builder failOpen(boolean open) {
      this.failOpen = open;
      return this;
    }

    public Builder unavailableRetryAfter(Duration delay) {
      this.unavailableRetryAfter = positive(delay, "unavailableRetryAfter");
      return this;
    }

    /** See {@link IdempotencyConfig#maxHold()}; at least {@code handlerTimeout}, at most 24 h. */
    public Builder maxHold(Duration hold) {
      this.maxHold = positive(hold, "maxHold");
      return this;
    }

    /** The longest lease the claim script accepts (lua/idempotency-claim.lua: lease_ms <= 86400000). */
    static final Duration MAX_LEASE = Duration.ofHours(24);

    public IdempotencyConfig build() {
      if (handlerTimeout.plus(leaseMargin).compareTo(MAX_LEASE) > 0) {
        throw new IllegalArgumentException("handlerTimeout + leaseMargin must be at most " + MAX_LEASE
            + " (the claim script's lease limit), was handlerTimeout " + handlerTimeout + " + leaseMargin " + leaseMargin);
      }
      if (maxHold != null && (maxHold.compareTo(handlerTimeout) < 0 || maxHold.compareTo(MAX_LEASE) > 0)) {
        throw new IllegalArgumentException("maxHold must be in [handlerTimeout " + handlerTimeout + ", " + MAX_LEASE
            + "], was " + maxHold);
      }
      return new IdempotencyConfig(this);
    }

    private static Duration positive(Duration d, String field) {
      if (d == null || d.isNegative() || d.isZero()) {
        throw new IllegalArgumentException(field + " must be positive, was " + d);
      }
      return d;
    }

    private static List<String> lower(List<String> names, String field) {
      Objects.requireNonNull(names, field + " must not be null");
      for (String n : names) {
        if (n == null || n.isBlank()) {
          throw new IllegalArgumentException(field + " must hold header names, had '" + n + "'");
        }
      }
      return names.stream().map(n -> n.toLowerCase(Locale.ROOT)).toList();
    }
  }
}
