package io.retrybudget.server;

import io.retrybudget.retry.RetryScheduler;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.DoubleSupplier;
import java.util.function.LongFunction;
import java.util.function.LongSupplier;

/**
 * A work queue bounded in time as well as length, in front of K workers (permits): deadline-aware,
 * CoDel-timed, adaptive LIFO, retries behind first attempts ({@link QueuePolicy} holds the rules;
 * this class runs it under a lock, arms its expiry timer, answers and counts). Framework-free and
 * thread-safe; {@code VertxQueueAdmission} (retry-budget-server-kit-vertx) and
 * {@code QueueAdmissionFilter} (retry-budget-server-kit-servlet) are its adapters, and any other server can
 * call {@link #submit} itself.
 *
 * <p>A request is {@link #submit submitted} with its attempt number and deadline; its {@link Waiter}
 * is then called exactly once, unless the ticket is cancelled first: {@link Waiter#start} with a
 * {@link Permit} (run the handler, {@link Permit#release()} when its answer is sent), or {@link
 * Waiter#reject} with the answer to send at once — 504 do-not-retry ({@code X-Retry-Pushback-Ms:
 * -1}) when its deadline passed, 503 with a spread pushback ({@link ShedPushback}) when it waited
 * too long or the queue was full. Callbacks run on whichever thread made the decision (the
 * submitting thread, the thread that released a permit, the timer's): hand them to your own
 * thread or event loop, and never block in them.
 */
public final class AdmissionQueue implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(AdmissionQueue.class.getName());
  /** Weight of the newest service time in the running average behind the drain time. */
  private static final double SERVICE_EWMA_WEIGHT = 0.1;

  /** Told, exactly once, what becomes of a submitted request (unless its ticket is cancelled first). */
  public interface Waiter {
    /** A worker is the request's: run it, and release the permit when its answer is sent (or it failed). */
    void start(Permit permit);

    /** The request never runs: send {@code rejection.answer()} now. */
    void reject(Rejection rejection);
  }

  /** A worker held by one request; {@link #release()} once it is done (further calls do nothing). */
  public interface Permit {
    void release();
  }

  /** Why a request was refused and the answer to send (503 or 504 problem+json with pushback). */
  public record Rejection(QueueDrop reason, StoredResponse answer) {}

  /** Counters since start (monotonic). */
  public record Stats(long startedFirst, long startedRetry, long replays, long droppedDeadline, long droppedCodel,
      long droppedFull, long cancelled) {}

  /** A submitted request. */
  public final class Ticket {
    private final Waiter waiter;
    private volatile long expiresAtNanos = Long.MAX_VALUE;

    private Ticket(Waiter waiter) {
      this.waiter = waiter;
    }

    /**
     * The caller went away: if the request still waits it leaves the queue and its waiter is never
     * called. Returns whether it was still waiting.
     */
    public boolean cancel() {
      // the same event may first drop it as expired: then it is told, and was not cancelled
      return decide(now -> policy.cancel(this, now)).stream().anyMatch(a -> a.item() == this
          && a instanceof QueuePolicy.Drop<Ticket> d && d.reason() == QueueDrop.CANCELLED);
    }

    /**
     * When the request is dropped if no worker takes it first, on the queue's clock; {@link
     * Long#MAX_VALUE} when it was decided on arrival. A thread that waits for the decision need
     * never wait longer (then call {@link #expire()}).
     */
    public long expiresAtNanos() {
      return expiresAtNanos;
    }
  }

  private final QueueConfig config;
  private final ServerKitListener listener;
  private final ServiceOverloadSignal signal;
  private final LongSupplier nanoClock;
  private final QueueAnswers answers;
  private final ExpiryTimer timer;
  private final Object lock = new Object();
  private final QueuePolicy<Ticket> policy;
  private double serviceNanos; // running average; 0 until a request has finished
  private final LongAdder startedFirst = new LongAdder();
  private final LongAdder startedRetry = new LongAdder();
  private final LongAdder replays = new LongAdder();
  private final LongAdder droppedDeadline = new LongAdder();
  private final LongAdder droppedCodel = new LongAdder();
  private final LongAdder droppedFull = new LongAdder();
  private final LongAdder cancelled = new LongAdder();
  private final AtomicBoolean loggedWaiter = new AtomicBoolean();

  private AdmissionQueue(Builder b) {
    this.config = b.config;
    this.listener = b.listener;
    this.signal = b.signal;
    this.nanoClock = b.nanoClock;
    this.answers = new QueueAnswers(config, signal, b.random, listener);
    this.timer = new ExpiryTimer(b.scheduler, config.name(), nanoClock, this::expire);
    this.policy = new QueuePolicy<>(config, nanoClock.getAsLong());
  }

  public static Builder builder(QueueConfig config) {
    return new Builder(config);
  }

  /**
   * A request as the adapters read it: {@code X-Retry-Attempt} (> 1 is a retry) and {@code
   * X-Request-Deadline-Ms} (the milliseconds its caller still waits, relative to {@code
   * receivedNanos}; several values: the tightest; garbage: none; capped at {@code maxDeadline}).
   */
  public Ticket submit(RequestView request, long receivedNanos, Waiter waiter) {
    return submit(RetryAwareAdmission.attemptOf(request.header(RetryAwareAdmission.ATTEMPT_HEADER)),
        deadlineMillis(request), receivedNanos, waiter);
  }

  /**
   * A request arrives. {@code attempt}: 1 for a first attempt, more for a retry or hedge;
   * {@code deadlineMillis}: how long its caller waits from {@code receivedNanos} (on {@link
   * #nanoTime()}'s clock), -1 for no deadline, 0 when it has already given up. It is not started
   * once less than {@code deadlineMargin} is left.
   */
  public Ticket submit(int attempt, long deadlineMillis, long receivedNanos, Waiter waiter) {
    Objects.requireNonNull(waiter, "waiter must not be null");
    Ticket ticket = new Ticket(waiter);
    long deadline = deadlineMillis < 0 ? QueuePolicy.NO_DEADLINE
        : receivedNanos + Math.min(deadlineMillis, config.maxDeadlineMillis()) * 1_000_000L
            - config.deadlineMarginNanos();
    decide(now -> {
      List<QueuePolicy.Action<Ticket>> actions = policy.offer(ticket, attempt > 1, deadline, now);
      ticket.expiresAtNanos = policy.expiresAt(ticket);
      return actions;
    });
    return ticket;
  }

  /** The tightest valid {@code X-Request-Deadline-Ms} of a request, capped at {@code maxDeadline}; -1 when none. */
  public long deadlineMillis(RequestView request) {
    return MiddleLayer.inboundDeadlineMillis(request, config.maxDeadlineMillis());
  }

  /**
   * A replay of a stored idempotent answer (a {@link KeyLookup} said {@link KeyLookup.Seen#STORED}):
   * it runs no handler, so it bypasses the queue and is never shed. Counted here.
   */
  public void replayAdmitted() {
    replays.increment();
    ServerKitListener.safely(() -> listener.onReplayAdmitted(config.name()));
  }

  /** Drops what has expired now (the timer does this; a thread waiting for a decision may too). */
  public void expire() {
    decide(policy::expire);
  }

  /** Whether a request arriving now would wait (every worker busy). */
  public boolean saturated() {
    synchronized (lock) {
      return policy.saturated();
    }
  }

  /** Requests waiting now. */
  public int queueLength() {
    synchronized (lock) {
      return policy.size();
    }
  }

  /** Requests running now (permits held). */
  public int running() {
    synchronized (lock) {
      return policy.running();
    }
  }

  /** Whether the queue serves newest first now (standing, with adaptive LIFO on). */
  public boolean lifo() {
    synchronized (lock) {
      return policy.lifo(nanoClock.getAsLong());
    }
  }

  /** The queue's clock (what {@code receivedNanos} and {@link Ticket#expiresAtNanos()} are on). */
  public long nanoTime() {
    return nanoClock.getAsLong();
  }

  public QueueConfig config() {
    return config;
  }

  public String name() {
    return config.name();
  }

  public Stats stats() {
    return new Stats(startedFirst.sum(), startedRetry.sum(), replays.sum(), droppedDeadline.sum(), droppedCodel.sum(),
        droppedFull.sum(), cancelled.sum());
  }

  /** Stops the queue's own timer thread (none when a scheduler was given). Call it after the server stopped. */
  @Override
  public void close() {
    timer.close();
  }

  /** The time the work held now takes to finish: (running + waiting) / K average service times. Under the lock. */
  private long drainNanos() {
    return (long) ((policy.running() + policy.size()) * serviceNanos / config.workers());
  }

  /**
   * One event: the policy decides under the lock at the clock's time, the timer is re-armed, and
   * the actions run outside the lock. Returns the actions.
   */
  private List<QueuePolicy.Action<Ticket>> decide(LongFunction<List<QueuePolicy.Action<Ticket>>> event) {
    List<QueuePolicy.Action<Ticket>> actions;
    long drain;
    synchronized (lock) {
      actions = event.apply(nanoClock.getAsLong());
      drain = drainNanos();
      timer.rearm(policy.nextExpiryNanos());
    }
    run(actions, drain);
    return actions;
  }

  private void run(List<QueuePolicy.Action<Ticket>> actions, long drainNanos) {
    for (QueuePolicy.Action<Ticket> a : actions) {
      if (a instanceof QueuePolicy.Start<Ticket> s) {
        start(s);
      } else if (a instanceof QueuePolicy.Drop<Ticket> d) {
        drop(d, drainNanos);
      }
    }
  }

  private void start(QueuePolicy.Start<Ticket> s) {
    (s.retry() ? startedRetry : startedFirst).increment();
    ServerKitListener.safely(() -> listener.onQueueStart(config.name(), s.retry(), s.waitedNanos()));
    ServerKitListener.safely(signal::onAdmitted);
    Permit permit = new Held(nanoClock.getAsLong());
    try {
      s.item().waiter.start(permit);
    } catch (RuntimeException e) {
      permit.release();
      logWaiter(e);
    }
  }

  private void drop(QueuePolicy.Drop<Ticket> d, long drainNanos) {
    QueueDrop reason = d.reason();
    (switch (reason) {
      case DEADLINE -> droppedDeadline;
      case CODEL -> droppedCodel;
      case FULL -> droppedFull;
      case CANCELLED -> cancelled;
    }).increment();
    ServerKitListener.safely(() -> listener.onQueueDrop(config.name(), d.retry(), reason, d.waitedNanos()));
    if (reason == QueueDrop.CANCELLED) {
      return;
    }
    StoredResponse answer = reason == QueueDrop.DEADLINE ? QueueAnswers.deadline() : answers.shed(reason, drainNanos);
    try {
      d.item().waiter.reject(new Rejection(reason, answer));
    } catch (RuntimeException e) {
      logWaiter(e);
    }
  }

  private void logWaiter(RuntimeException e) {
    if (loggedWaiter.compareAndSet(false, true)) {
      LOG.log(System.Logger.Level.WARNING, "an AdmissionQueue waiter threw (logged once); its permit was released", e);
    }
  }

  /** A worker held since {@code startedAt}; its release feeds the average service time. */
  private final class Held implements Permit {
    private final long startedAt;
    private final AtomicBoolean released = new AtomicBoolean();

    Held(long startedAt) {
      this.startedAt = startedAt;
    }

    @Override
    public void release() {
      if (!released.compareAndSet(false, true)) {
        return;
      }
      decide(now -> {
        long took = Math.max(0, now - startedAt);
        serviceNanos = serviceNanos == 0 ? took : serviceNanos + SERVICE_EWMA_WEIGHT * (took - serviceNanos);
        return policy.release(now);
      });
    }
  }

  public static final class Builder {
    private final QueueConfig config;
    private ServerKitListener listener = ServerKitListener.NONE;
    private ServiceOverloadSignal signal = ServiceOverloadSignal.NEVER;
    private LongSupplier nanoClock = System::nanoTime;
    private DoubleSupplier random = () -> ThreadLocalRandom.current().nextDouble();
    private RetryScheduler scheduler;

    private Builder(QueueConfig config) {
      this.config = Objects.requireNonNull(config, "config must not be null");
    }

    /** Metrics ({@code MicrometerServerKitMetrics}). */
    public Builder listener(ServerKitListener listener) {
      this.listener = Objects.requireNonNull(listener, "listener must not be null");
      return this;
    }

    /** When a shed answer may say "do not retry" (default never; see {@link ServiceOverloadSignal}). */
    public Builder serviceOverload(ServiceOverloadSignal signal) {
      this.signal = Objects.requireNonNull(signal, "serviceOverload must not be null");
      return this;
    }

    public Builder nanoClock(LongSupplier clock) {
      this.nanoClock = Objects.requireNonNull(clock, "nanoClock must not be null");
      return this;
    }

    /** The uniform [0, 1) source of the pushback's spread (default {@code ThreadLocalRandom}). */
    public Builder random(DoubleSupplier random) {
      this.random = Objects.requireNonNull(random, "random must not be null");
      return this;
    }

    /** The timer that drops expired requests (default: a daemon thread of the queue's own, stopped by close()). */
    public Builder scheduler(RetryScheduler scheduler) {
      this.scheduler = Objects.requireNonNull(scheduler, "scheduler must not be null");
      return this;
    }

    public AdmissionQueue build() {
      return new AdmissionQueue(this);
    }
  }
}
