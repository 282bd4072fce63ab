package io.retrybudget.server;

import io.retrybudget.retry.http.HttpRetryRules;
import java.time.Duration;
import java.util.Objects;

/**
 * The immutable configuration of an {@link AdmissionQueue} (and of its pure policy, {@link
 * QueuePolicy}). Built by {@link #builder(int)}; every setter validates and names the wrong value.
 *
 * <ul>
 *   <li>{@code workers} (K): requests that run at once — the permits.
 *   <li>{@code maxQueue} (default 100): requests that may wait for a worker; 0 = no queue.
 *   <li>{@code shortTimeout} (default 5 ms), {@code longTimeout} (default 100 ms), {@code interval}
 *       (default 100 ms): the CoDel-style bound on the time a request waits ("Fail at Scale"). The
 *       queue is <em>standing</em> once it has not been empty for {@code interval}; a request then
 *       waits at most {@code shortTimeout}, else at most {@code longTimeout}.
 *   <li>{@code adaptiveLifo} (default on): while the queue is standing, the newest request is served
 *       first (its caller is the likeliest to still be waiting); first in, first out otherwise.
 *   <li>{@code pushback} (default {@link ShedPushback#defaults()}): how shed answers spread retries.
 *   <li>{@code maxDeadline} (default 1 h): the largest {@code X-Request-Deadline-Ms} believed.
 *   <li>{@code deadlineMargin} (default 0): a request is not started once less than this is left of
 *       its deadline (set it to about the handler's service time: a request that cannot finish in
 *       time is answered 504 instead of worked on for a caller who will have gone).
 *   <li>{@code overloadRetryAfter} (default 30 s): {@code Retry-After} of a do-not-retry shed answer
 *       (only when the {@link ServiceOverloadSignal} says the whole service is overloaded).
 *   <li>{@code name} (default {@code server-kit}): the {@code queue} tag of its metrics.
 * </ul>
 */
public final class QueueConfig {
  private final String name;
  private final int workers;
  private final int maxQueue;
  private final long shortTimeoutNanos;
  private final long longTimeoutNanos;
  private final long intervalNanos;
  private final boolean adaptiveLifo;
  private final ShedPushback pushback;
  private final long maxDeadlineMillis;
  private final long deadlineMarginNanos;
  private final Duration overloadRetryAfter;

  private QueueConfig(Builder b) {
    this.name = b.name;
    this.workers = b.workers;
    this.maxQueue = b.maxQueue;
    this.shortTimeoutNanos = b.shortTimeout.toNanos();
    this.longTimeoutNanos = b.longTimeout.toNanos();
    this.intervalNanos = b.interval.toNanos();
    this.adaptiveLifo = b.adaptiveLifo;
    this.pushback = b.pushback;
    this.maxDeadlineMillis = b.maxDeadline.toMillis();
    this.deadlineMarginNanos = b.deadlineMargin.toNanos();
    this.overloadRetryAfter = b.overloadRetryAfter;
  }

  /** @param workers the requests that run at once (K), in [1, 100000] */
  public static Builder builder(int workers) {
    return new Builder(workers);
  }

  public String name() {
    return name;
  }

  public int workers() {
    return workers;
  }

  public int maxQueue() {
    return maxQueue;
  }

  public long shortTimeoutNanos() {
    return shortTimeoutNanos;
  }

  public long longTimeoutNanos() {
    return longTimeoutNanos;
  }

  public long intervalNanos() {
    return intervalNanos;
  }

  public boolean adaptiveLifo() {
    return adaptiveLifo;
  }

  public ShedPushback pushback() {
    return pushback;
  }

  public long maxDeadlineMillis() {
    return maxDeadlineMillis;
  }

  public long deadlineMarginNanos() {
    return deadlineMarginNanos;
  }

  public Duration overloadRetryAfter() {
    return overloadRetryAfter;
  }

  @Override
  public String toString() {
    return "QueueConfig[name=" + name + ", workers=" + workers + ", maxQueue=" + maxQueue + ", shortTimeout="
        + Duration.ofNanos(shortTimeoutNanos) + ", longTimeout=" + Duration.ofNanos(longTimeoutNanos) + ", interval="
        + Duration.ofNanos(intervalNanos) + ", adaptiveLifo=" + adaptiveLifo + ", deadlineMargin="
        + Duration.ofNanos(deadlineMarginNanos) + ", " + pushback + "]";
  }

  public static final class Builder {
    private String name = "server-kit";
    private final int workers;
    private int maxQueue = 100;
    private Duration shortTimeout = Duration.ofMillis(5);
    private Duration longTimeout = Duration.ofMillis(100);
    private Duration interval = Duration.ofMillis(100);
    private boolean adaptiveLifo = true;
    private ShedPushback pushback = ShedPushback.defaults();
    private Duration maxDeadline = Duration.ofMillis(HttpRetryRules.MAX_DEADLINE_MILLIS);
    private Duration overloadRetryAfter = Duration.ofSeconds(30);
    private Duration deadlineMargin = Duration.ZERO;

    private Builder(int workers) {
      if (workers < 1 || workers > 100_000) {
        throw new IllegalArgumentException("workers must be in [1, 100000], was " + workers);
      }
      this.workers = workers;
    }

    public Builder name(String name) {
      if (name == null || name.isBlank()) {
        throw new IllegalArgumentException("name must not be blank, was " + name);
      }
      this.name = name;
      return this;
    }

    /** Requests that may wait for a worker, in [0, 1000000]; 0 = none wait. */
    public Builder maxQueue(int maxQueue) {
      if (maxQueue < 0 || maxQueue > 1_000_000) {
        throw new IllegalArgumentException("maxQueue must be in [0, 1000000], was " + maxQueue);
      }
      this.maxQueue = maxQueue;
      return this;
    }

    /** The most a request waits while the queue is standing (CoDel's target), positive. */
    public Builder shortTimeout(Duration timeout) {
      this.shortTimeout = positive("shortTimeout", timeout);
      return this;
    }

    /** The most a request waits while the queue is not standing, positive, at least {@code shortTimeout}. */
    public Builder longTimeout(Duration timeout) {
      this.longTimeout = positive("longTimeout", timeout);
      return this;
    }

    /** How long the queue must stay non-empty to be standing (CoDel's interval), positive. */
    public Builder interval(Duration interval) {
      this.interval = positive("interval", interval);
      return this;
    }

    /** Newest first while the queue is standing (default true); false: always first in, first out. */
    public Builder adaptiveLifo(boolean on) {
      this.adaptiveLifo = on;
      return this;
    }

    public Builder pushback(ShedPushback pushback) {
      this.pushback = Objects.requireNonNull(pushback, "pushback must not be null");
      return this;
    }

    /** The largest {@code X-Request-Deadline-Ms} believed (larger values are capped), in [1 ms, 1 h]. */
    public Builder maxDeadline(Duration max) {
      positive("maxDeadline", max);
      if (max.toMillis() < 1 || max.toMillis() > HttpRetryRules.MAX_DEADLINE_MILLIS) {
        throw new IllegalArgumentException("maxDeadline must be in [1 ms, 1 h], was " + max);
      }
      this.maxDeadline = max;
      return this;
    }

    /** Not started once less than this is left of its deadline, in [0, 1 h] (default 0). */
    public Builder deadlineMargin(Duration margin) {
      if (margin == null || margin.isNegative() || margin.compareTo(Duration.ofHours(1)) > 0) {
        throw new IllegalArgumentException("deadlineMargin must be in [0, 1 h], was " + margin);
      }
      this.deadlineMargin = margin;
      return this;
    }

    /** {@code Retry-After} sent with a do-not-retry shed answer, positive (default 30 s). */
    public Builder overloadRetryAfter(Duration after) {
      this.overloadRetryAfter = positive("overloadRetryAfter", after);
      return this;
    }

    private static Duration positive(String field, Duration d) {
      if (d == null || d.isNegative() || d.isZero() || d.compareTo(Duration.ofHours(1)) > 0) {
        throw new IllegalArgumentException(field + " must be positive and at most 1 h, was " + d);
      }
      return d;
    }

    public QueueConfig build() {
      if (longTimeout.compareTo(shortTimeout) < 0) {
        throw new IllegalArgumentException("longTimeout must be at least shortTimeout (" + shortTimeout + "), was "
            + longTimeout);
      }
      return new QueueConfig(this);
    }
  }
}
