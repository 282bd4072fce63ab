package io.retrybudget.retry;

import java.io.IOException;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.TimeoutException;
import java.util.function.BiFunction;
import java.util.function.Predicate;

/**
 * What to retry and how: immutable, from {@link #builder()}, which validates every value and names
 * the wrong one. The decisions themselves live in {@link RetryPlanner}; the running in {@link
 * RetryExecutor}.
 */
public final class RetryPolicy {
  private final int maxAttempts;
  private final Backoff backoff;
  private final Duration deadline;
  private final Duration attemptTimeout;
  private final Predicate<Throwable> retryOnException;
  private final Predicate<Object> retryOnResult;
  private final BiFunction<Object, Throwable, Duration> serverDelay;
  private final boolean idempotent;

  private RetryPolicy(Builder b) {
    this.idempotent = b.idempotent;
    this.maxAttempts = b.maxAttempts;
    this.backoff = Backoff.of(b.base, b.cap, b.jitter);
    this.deadline = b.deadline;
    this.attemptTimeout = b.attemptTimeout;
    this.retryOnException = b.retryOnException;
    this.retryOnResult = b.retryOnResult;
    this.serverDelay = b.serverDelay;
  }

  public static Builder builder() {
    return new Builder();
  }

  /** A builder holding this policy's values, for a changed copy. */
  public Builder toBuilder() {
    Builder b = new Builder();
    b.maxAttempts = maxAttempts;
    b.base = backoff.base();
    b.cap = backoff.cap();
    b.jitter = backoff.jitter();
    b.deadline = deadline;
    b.attemptTimeout = attemptTimeout;
    b.retryOnException = retryOnException;
    b.retryOnResult = retryOnResult;
    b.serverDelay = serverDelay;
    b.idempotent = idempotent;
    return b;
  }

  /**
   * This policy with its deadline no later than {@code deadline} (the attempt timeout cut to it
   * where it is longer); this policy itself when its own deadline is already as early.
   *
   * @throws IllegalArgumentException when {@code deadline} is not positive
   */
  public RetryPolicy withDeadlineAtMost(Duration deadline) {
    if (deadline == null || deadline.isNegative() || deadline.isZero()) {
      throw new IllegalArgumentException("deadline must be positive, was " + deadline);
    }
    if (deadline.compareTo(MAX_DURATION) > 0) {
      deadline = MAX_DURATION; // "at most" more than the longest deadline: the longest bounds it
    }
    if (this.deadline != null && this.deadline.compareTo(deadline) <= 0) {
      return this;
    }
    Builder b = toBuilder();
    b.deadline = deadline;
    if (attemptTimeout != null && attemptTimeout.compareTo(deadline) > 0) {
      b.attemptTimeout = deadline;
    }
    return b.build();
  }

  /**
   * The longest deadline and attempt timeout, 30 days: they are kept as nanoseconds from a start on
   * {@code System.nanoTime()}, and a long holds about 292 years of those (a longer one overflowed on
   * the first retry).
   */
  public static final Duration MAX_DURATION = Duration.ofDays(30);

  /** Network errors and timeouts are worth another attempt; anything else is not. */
  public static boolean isTransient(Throwable failure) {
    return failure instanceof IOException
        || failure instanceof TimeoutException
        || failure instanceof AttemptTimeoutException
        || failure instanceof java.net.http.HttpTimeoutException;
  }

  /** Every attempt of a call, hedges included. */
  public int maxAttempts() {
    return maxAttempts;
  }

  public Backoff backoff() {
    return backoff;
  }

  /** The whole call's time limit, or null for none. */
  public Duration deadline() {
    return deadline;
  }

  /** One attempt's time limit, or null for none. */
  public Duration attemptTimeout() {
    return attemptTimeout;
  }

  /** False for operations that may be retried only when the call carries an idempotency key. */
  public boolean idempotent() {
    return idempotent;
  }

  public boolean shouldRetry(Throwable failure) {
    return retryOnException.test(failure);
  }

  public boolean shouldRetryResult(Object result) {
    return retryOnResult.test(result);
  }

  /**
   * The delay the server asked for with this answer (Retry-After, pushback), null when it asked
   * for none, negative when it said not to retry.
   */
  public Duration serverDelay(Object result, Throwable failure) {
    return serverDelay.apply(result, failure);
  }

  public static final class Builder {
    private int maxAttempts = 3;
    private Duration base = Duration.ofMillis(100);
    private Duration cap = Duration.ofSeconds(10);
    private Jitter jitter = Jitter.FULL;
    private Duration deadline;
    private Duration attemptTimeout;
    private Predicate<Throwable> retryOnException = RetryPolicy::isTransient;
    private Predicate<Object> retryOnResult = r -> false;
    private BiFunction<Object, Throwable, Duration> serverDelay = (r, f) -> null;
    private boolean idempotent = true;

    private Builder() {}

    /**
     * Marks the operation as not idempotent (a payment, say): then it is retried only when the call
     * carries an idempotency key ({@link AttemptContext#idempotencyKey()}). Default: idempotent.
     */
    public Builder idempotent(boolean idempotent) {
      this.idempotent = idempotent;
      return this;
    }

    /** Attempts in all, first included, in [1, 100]. */
    public Builder maxAttempts(int attempts) {
      if (attempts < 1 || attempts > 100) {
        throw new IllegalArgumentException("maxAttempts must be in [1, 100], was " + attempts);
      }
      this.maxAttempts = attempts;
      return this;
    }

    public Builder backoff(Duration base, Duration cap) {
      Backoff.of(base, cap, jitter); // validates, naming base or cap
      this.base = base;
      this.cap = cap;
      return this;
    }

    public Builder jitter(Jitter jitter) {
      this.jitter = Objects.requireNonNull(jitter, "jitter must not be null");
      return this;
    }

    public Builder deadline(Duration deadline) {
      if (deadline == null || deadline.isNegative() || deadline.isZero() || deadline.compareTo(MAX_DURATION) > 0) {
        throw new IllegalArgumentException("deadline must be positive and at most " + MAX_DURATION + ", was " + deadline);
      }
      this.deadline = deadline;
      return this;
    }

    public Builder attemptTimeout(Duration timeout) {
      if (timeout == null || timeout.isNegative() || timeout.isZero() || timeout.compareTo(MAX_DURATION) > 0) {
        throw new IllegalArgumentException("attemptTimeout must be positive and at most " + MAX_DURATION + ", was " + timeout);
      }
      this.attemptTimeout = timeout;
      return this;
    }

    /** Which failures are retried (default {@link RetryPolicy#isTransient}). */
    public Builder retryOn(Predicate<Throwable> predicate) {
      this.retryOnException = Objects.requireNonNull(predicate, "retryOn must not be null");
      return this;
    }

    /** Which results are retried, e.g. a 503 response (default: none). */
    @SuppressWarnings("unchecked")
    public <R> Builder retryOnResult(Predicate<R> predicate) {
      Objects.requireNonNull(predicate, "retryOnResult must not be null");
      this.retryOnResult = r -> ((Predicate<Object>) predicate).test(r);
      return this;
    }

    /** Reads a server's requested delay from a result or failure (see {@link RetryPolicy#serverDelay}). */
    public Builder serverDelay(BiFunction<Object, Throwable, Duration> extractor) {
      this.serverDelay = Objects.requireNonNull(extractor, "serverDelay must not be null");
      return this;
    }

    public RetryPolicy build() {
      if (attemptTimeout != null && deadline != null && attemptTimeout.compareTo(deadline) > 0) {
        throw new IllegalArgumentException("attemptTimeout must not exceed deadline, was " + attemptTimeout
            + " > " + deadline);
      }
      return new RetryPolicy(this);
    }
  }
}
