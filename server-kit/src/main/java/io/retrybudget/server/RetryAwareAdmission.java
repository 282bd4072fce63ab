package io.retrybudget.server;

import com.netflix.concurrency.limits.Limit;
import com.netflix.concurrency.limits.Limiter;
import com.netflix.concurrency.limits.limit.Gradient2Limit;
import com.netflix.concurrency.limits.limiter.AbstractPartitionedLimiter;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;

/**
 * Load shedding that prefers first attempts: a Netflix concurrency-limits limiter (0.5.3) with two
 * partitions, {@code first} ({@code X-Retry-Attempt} absent or 1) and {@code retry} (> 1: retries
 * and hedges). At the limit each partition keeps only its share ({@code retryShare} for retries,
 * default 10 %, the rest for first attempts); below it, the library admits anyone, so on top of it
 * retries are also shed once the requests in flight reach {@code 1 - retryHeadroom} of the limit
 * (default 80 %) — except while fewer retries than {@code floor(limit * retryShare)} are in
 * flight, so that at the limit the retry partition keeps its share: the rest of the last fifth of
 * the capacity is kept for first attempts, and retries are shed first. With a {@link KeyLookup},
 * a request whose idempotency key has a stored answer is a replay and is never shed, and one whose
 * key is claimed counts as a retry. A shed request is answered 503 with
 * {@code X-Retry-Pushback-Ms} and {@code Retry-After}: a positive pushback (wait, then retry —
 * preferably elsewhere) when only this replica is full, {@code -1} (do not retry) only when the
 * {@link ServiceOverloadSignal} says the whole service is overloaded.
 */
public final class RetryAwareAdmission {
  public static final String ATTEMPT_HEADER = "X-Retry-Attempt";
  static final String FIRST = "first";
  static final String RETRY = "retry";

  /** One admitted request: report how it ended, exactly once. */
  public interface Permit {
    /** Answered (2xx-4xx): a latency sample for the limit. */
    void onSuccess();

    /** Failed in a way that says nothing about load (5xx of its own, an exception). */
    void onIgnore();

    /** Dropped or timed out: the limit shrinks. */
    void onDropped();
  }

  /**
   * Counters since start (monotonic); {@code admittedReplay}: requests whose key has a stored
   * answer, admitted without a permit of the limiter.
   */
  public record Stats(long admittedFirst, long admittedRetry, long shedFirst, long shedRetry, long shedDoNotRetry,
      long admittedReplay) {}

  private final AbstractPartitionedLimiter<Integer> limiter;
  private final double retryHeadroom;
  private final Duration pushback;
  private final Duration overloadRetryAfter;
  private final ServiceOverloadSignal signal;
  private final LongAdder admittedFirst = new LongAdder();
  private final LongAdder admittedRetry = new LongAdder();
  private final LongAdder shedFirst = new LongAdder();
  private final LongAdder shedRetry = new LongAdder();
  private final LongAdder shedDoNotRetry = new LongAdder();
  private final LongAdder admittedReplay = new LongAdder();
  private final java.util.concurrent.atomic.AtomicInteger retriesInflight = new java.util.concurrent.atomic.AtomicInteger();
  private final double retryShare;
  private final String name;
  private final ServerKitListener events;

  private RetryAwareAdmission(Builder b) {
    this.name = b.name;
    this.events = b.events;
    PartitionedBuilder lb = new PartitionedBuilder()
        .named(b.name)
        .limit(b.limit)
        .nanoClock(b.nanoClock)
        .partition(FIRST, 1.0 - b.retryShare)
        .partition(RETRY, b.retryShare)
        .partitionResolver(attempt -> attempt > 1 ? RETRY : FIRST);
    this.limiter = (AbstractPartitionedLimiter<Integer>) lb.build();
    this.retryHeadroom = b.retryHeadroom;
    this.retryShare = b.retryShare;
    this.pushback = b.pushback;
    this.overloadRetryAfter = b.overloadRetryAfter;
    this.signal = b.signal;
  }

  /** concurrency-limits' partitioned limiter, which 0.5.3 builds through its abstract builder. */
  private static final class PartitionedBuilder extends AbstractPartitionedLimiter.Builder<PartitionedBuilder, Integer> {
    @Override
    protected PartitionedBuilder self() {
      return this;
    }
  }

  public static Builder builder() {
    return new Builder();
  }

  /** The attempt number of {@code X-Retry-Attempt}: 1 when absent or unreadable. */
  public static int attemptOf(String header) {
    if (header == null) {
      return 1;
    }
    try {
      int n = Integer.parseInt(header.strip());
      return n < 1 ? 1 : n;
    } catch (NumberFormatException e) {
      return 1;
    }
  }

  /** A permit, or empty when the request is to be shed (answer it with {@link #shedAnswer()}). */
  public Optional<Permit> tryAcquire(int attempt) {
    return acquire(attempt, true);
  }

  /**
   * As {@link #tryAcquire(int)}, for a request that carries an idempotency key: a refusal is not
   * counted or answered yet — look the key up ({@link KeyLookup}) and ask {@link #tryAcquire(int,
   * KeyLookup.Seen)}, which decides for good.
   */
  public Optional<Permit> tryAcquireBeforeLookup(int attempt) {
    return acquire(attempt, false);
  }

  /**
   * With what the key store holds for the request's key: a stored answer is a replay, admitted
   * without a permit of the limiter (it costs one Redis call and runs nothing: it is never shed);
   * a claimed key is a retry whatever the attempt header says; otherwise as {@link #tryAcquire(int)}.
   */
  public Optional<Permit> tryAcquire(int attempt, KeyLookup.Seen seen) {
    Objects.requireNonNull(seen, "seen must not be null");
    if (seen == KeyLookup.Seen.STORED) {
      admittedReplay.increment();
      if (events != ServerKitListener.NONE) {
        ServerKitListener.safely(() -> events.onReplayAdmitted(name));
      }
      return Optional.of(new Permit() {
        @Override
        public void onSuccess() {}

        @Override
        public void onIgnore() {}

        @Override
        public void onDropped() {}
      });
    }
    return acquire(seen == KeyLookup.Seen.IN_PROGRESS ? Math.max(2, attempt) : attempt, true);
  }

  private Optional<Permit> acquire(int attempt, boolean decisive) {
    boolean retry = attempt > 1;
    // retries within their guaranteed share (floor(limit * retryShare)) are never held back by the
    // headroom: at the limit the retry partition keeps its share
    Optional<Limiter.Listener> listener = retry && limiter.getInflight() >= retryCeiling()
        && retriesInflight.get() >= retryGuarantee()
        ? Optional.empty()
        : limiter.acquire(attempt);
    if (listener.isEmpty()) {
      if (decisive) {
        (retry ? shedRetry : shedFirst).increment();
        emitAdmission(retry, false);
        signal.onShed();
      }
      return Optional.empty();
    }
    (retry ? admittedRetry : admittedFirst).increment();
    emitAdmission(retry, true);
    signal.onAdmitted();
    if (retry) {
      retriesInflight.incrementAndGet();
    }
    Limiter.Listener l = listener.get();
    return Optional.of(new Permit() {
      private final java.util.concurrent.atomic.AtomicBoolean done = new java.util.concurrent.atomic.AtomicBoolean();

      private boolean end() {
        if (!done.compareAndSet(false, true)) {
          return false;
        }
        if (retry) {
          retriesInflight.decrementAndGet();
        }
        return true;
      }

      @Override
      public void onSuccess() {
        if (end()) {
          l.onSuccess();
        }
      }

      @Override
      public void onIgnore() {
        if (end()) {
          l.onIgnore();
        }
      }

      @Override
      public void onDropped() {
        if (end()) {
          l.onDropped();
        }
      }
    });
  }

  /** The retries in flight that are always admitted: the limit times the retry share, rounded down. */
  int retryGuarantee() {
    return (int) Math.floor(limiter.getLimit() * retryShare);
  }

  private void emitAdmission(boolean retry, boolean admitted) {
    if (events != ServerKitListener.NONE) {
      ServerKitListener.safely(() -> events.onAdmission(name, retry, admitted));
    }
  }

  /** The limiter's name (the {@code limiter} tag of its metrics). */
  public String name() {
    return name;
  }

  /** Requests in flight at which retries are shed: the limit times (1 - headroom), at least 1. */
  int retryCeiling() {
    return Math.max(1, (int) Math.floor(limiter.getLimit() * (1.0 - retryHeadroom)));
  }

  /** The current concurrency limit and the requests in flight (for gauges). */
  public int limit() {
    return limiter.getLimit();
  }

  public int inflight() {
    return limiter.getInflight();
  }

  /** 503 problem+json with pushback: positive for this replica, -1 when the whole service is overloaded. */
  public StoredResponse shedAnswer() {
    boolean doNotRetry = signal.wholeServiceOverloaded();
    if (events != ServerKitListener.NONE) {
      ServerKitListener.safely(() -> events.onShedAnswer(name, doNotRetry));
    }
    if (doNotRetry) {
      shedDoNotRetry.increment();
      StoredResponse r = Problems.of(503, "service-overloaded", "Service overloaded",
          "the whole service is overloaded: do not retry this request");
      long s = Math.max(1, (overloadRetryAfter.toMillis() + 999) / 1000);
      return Problems.withPushback(r, Duration.ofMillis(-1)).withHeader("Retry-After", Long.toString(s));
    }
    return Problems.withPushback(Problems.of(503, "replica-overloaded", "Replica overloaded",
        "this replica is at its concurrency limit; retry after the pushback"), pushback);
  }

  public Stats stats() {
    return new Stats(admittedFirst.sum(), admittedRetry.sum(), shedFirst.sum(), shedRetry.sum(), shedDoNotRetry.sum(),
        admittedReplay.sum());
  }

  public static final class Builder {
    private String name = "server-kit";
    private Limit limit;
    private double retryShare = 0.1;
    private double retryHeadroom = 0.2;
    private Duration pushback = Duration.ofMillis(500);
    private Duration overloadRetryAfter = Duration.ofSeconds(30);
    private ServiceOverloadSignal signal = ServiceOverloadSignal.NEVER;
    private LongSupplier nanoClock = System::nanoTime;
    private ServerKitListener events = ServerKitListener.NONE;

    private Builder() {}

    /** A listener for metrics ({@code MicrometerServerKitMetrics}). */
    public Builder listener(ServerKitListener listener) {
      this.events = Objects.requireNonNull(listener, "listener must not be null");
      return this;
    }

    public Builder name(String name) {
      if (name == null || name.isBlank()) {
        throw new IllegalArgumentException("name must not be blank, was " + name);
      }
      this.name = name;
      return this;
    }

    /** The concurrency limit algorithm (default {@code Gradient2Limit.newDefault()}: adaptive, starts at 20). */
    public Builder limit(Limit limit) {
      this.limit = Objects.requireNonNull(limit, "limit must not be null");
      return this;
    }

    /** The retries' guaranteed share of the limit when it is reached, in [0, 0.5] (default 0.1). */
    public Builder retryShare(double share) {
      if (!(share >= 0.0 && share <= 0.5)) {
        throw new IllegalArgumentException("retryShare must be in [0, 0.5], was " + share);
      }
      this.retryShare = share;
      return this;
    }

    /** The top share of the limit that retries never take, in [0, 0.9] (default 0.2; 0 = the library's partitions only). */
    public Builder retryHeadroom(double headroom) {
      if (!(headroom >= 0.0 && headroom <= 0.9)) {
        throw new IllegalArgumentException("retryHeadroom must be in [0, 0.9], was " + headroom);
      }
      this.retryHeadroom = headroom;
      return this;
    }

    /** The wait a shed request is asked for when only this replica is full (default 500 ms). */
    public Builder pushback(Duration pushback) {
      if (pushback == null || pushback.isNegative() || pushback.isZero()) {
        throw new IllegalArgumentException("pushback must be positive, was " + pushback);
      }
      this.pushback = pushback;
      return this;
    }

    /** Retry-After sent with "do not retry", for clients that do not read the pushback (default 30 s). */
    public Builder overloadRetryAfter(Duration after) {
      if (after == null || after.isNegative() || after.isZero()) {
        throw new IllegalArgumentException("overloadRetryAfter must be positive, was " + after);
      }
      this.overloadRetryAfter = after;
      return this;
    }

    public Builder serviceOverload(ServiceOverloadSignal signal) {
      this.signal = Objects.requireNonNull(signal, "serviceOverload must not be null");
      return this;
    }

    public Builder nanoClock(LongSupplier clock) {
      this.nanoClock = Objects.requireNonNull(clock, "nanoClock must not be null");
      return this;
    }

    public RetryAwareAdmission build() {
      if (limit == null) {
        limit = Gradient2Limit.newDefault();
      }
      return new RetryAwareAdmission(this);
    }
  }
}
