package io.retrybudget.budget;

import io.retrybudget.budget.internal.LogLimiter;
import io.retrybudget.budget.redis.protocol.BudgetScripts;
import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * The process-wide entry point to fleet-wide retry budgets held in Redis: one Redis connection and
 * one timer thread, however many budgets. Make one per process and close it on shutdown.
 *
 * <pre>{@code
 * RedisBudgetClient budgets = RedisBudgetClient.builder(
 *     RedisConnectionOptions.standalone("redis://localhost:6379").build()).build();
 * RetryBudget payments = budgets.budget(BudgetConfig.builder("payments-api").build());
 * // by hand (a RetryExecutor with this budget does both itself: never do both)
 * payments.recordFirstAttempt();              // on every first attempt: no I/O
 * if (payments.acquireBlocking().granted()) { // before every retry or hedge
 *   ...
 * }
 * }</pre>
 *
 * <p>If Redis cannot be reached when the client is built, it is built anyway: budgets decide from
 * their fallback and the client keeps connecting in the background. {@code build()} waits for the
 * first connection at most the connect timeout of {@link RedisConnectionOptions} (default 2 s).
 *
 * <p>With {@link Builder#relays relays} (docs/RELAY.md), budget calls go to the first relay of the
 * list that is up (the home relay first), else to the next, else to Redis directly, else the
 * fallback decides; a relay or Redis that failed a call is passed over for
 * {@link Builder#relayRetryAfter} (default 1 s), then tried again first. A call that failed is never
 * sent again along the route (the budget counts it as lost), so no count is applied twice.
 */
public final class RedisBudgetClient implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(RedisBudgetClient.class.getName());

  private final RedisConnectionOptions connectionOptions;
  private final Duration callTimeout;
  private final Duration flushInterval;
  private final Duration maxFlushInterval;
  private final java.util.function.DoubleSupplier random;
  private final Duration exhaustedCacheTime;
  private final FallbackPolicy fallbackPolicy;
  private final boolean fallbackSharesFloor;
  private final LongSupplier millisClock;
  private final ScheduledExecutorService scheduler;
  private final Set<RedisRetryBudget> budgets = ConcurrentHashMap.newKeySet();
  private final ProcessFleets fleets = new ProcessFleets();
  private volatile RedisBudgetStore store;
  private volatile BudgetScripts scripts;
  private volatile FleetRegistry.Port port; // set with scripts, or at once with relays
  private final RoutedPort routed; // null without relays
  private final EngineSettings engine;
  private final FleetRegistry registry = new Registry();
  // at most one WARNING and one INFO about degradation per 30 s for the whole client
  private final LogLimiter warnings;
  private final LogLimiter infos;
  private volatile ScheduledFuture<?> connectTask;
  private volatile boolean closed;
  private final java.util.concurrent.atomic.AtomicInteger connectAttempts = new java.util.concurrent.atomic.AtomicInteger();
  private boolean reportedUnreachable; // timer thread only (and the constructor)
  static final long LOG_INTERVAL_MILLIS = 30_000;

  private RedisBudgetClient(Builder b) {
    this.connectionOptions = b.connectionOptions;
    this.callTimeout = b.callTimeout;
    this.flushInterval = b.flushInterval;
    this.maxFlushInterval = b.maxFlushInterval;
    this.random = b.random;
    this.exhaustedCacheTime = b.exhaustedCacheTime;
    this.fallbackPolicy = b.fallbackPolicy;
    this.fallbackSharesFloor = b.fallbackSharesFloor;
    this.millisClock = b.millisClock;
    this.warnings = new LogLimiter(LOG, Level.WARNING, LOG_INTERVAL_MILLIS, millisClock);
    this.infos = new LogLimiter(LOG, Level.INFO, LOG_INTERVAL_MILLIS, millisClock);
    this.scheduler = io.retrybudget.internal.Schedulers.daemon("retry-budget-timer");
    this.engine = new EngineSettings(callTimeout.toMillis(), flushInterval.toMillis(), maxFlushInterval.toMillis(),
        exhaustedCacheTime.toMillis(), fallbackPolicy, fallbackSharesFloor, millisClock, random, EngineTimer.of(scheduler));
    // The first attempt runs on the timer thread; build() waits for it at most the connect timeout
    // (a Redis that accepts but never answers would otherwise hold it for every handshake timeout).
    if (!b.relays.isEmpty()) {
      // every way connected in the background, the home relay first; waits the connect timeout at most
      this.routed = RoutedPort.start(b.relays, connectionOptions, b.relayRetryAfter.toMillis(), millisClock);
      this.port = routed;
      return;
    }
    this.routed = null;
    java.util.concurrent.Future<Boolean> first = scheduler.submit(this::tryConnect);
    boolean connected = false;
    try {
      connected = first.get(connectionOptions.connectTimeout().toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
      // still trying, or failed: the timer goes on trying (one thread: never two attempts at once)
    }
    if (!connected) {
      long delay = connectionOptions.reconnectDelayMax().toMillis();
      connectTask = scheduler.scheduleWithFixedDelay(this::connectInBackground, delay, delay, TimeUnit.MILLISECONDS);
    }
  }

  public static Builder builder(RedisConnectionOptions connectionOptions) {
    return new Builder(connectionOptions);
  }

  /**
   * A new budget client for this dependency, with its own local counts, caches and client id.
   * {@code config} seeds Redis when it holds no configuration for this budget yet; Redis's
   * configuration wins otherwise. Close it (or this client) when done.
   */
  public RetryBudget budget(BudgetConfig config) {
    if (closed) {
      throw new IllegalStateException("RedisBudgetClient is closed");
    }
    fleets.opened(config.name());
    RedisRetryBudget budget;
    try {
      budget = new RedisRetryBudget(engine, registry, config);
    } catch (RuntimeException | Error e) {
      fleets.closed(config.name(), false);
      throw e;
    }
    budgets.add(budget);
    return budget;
  }

  /** What this process knows of the fleet of budget {@code name} ({@link ProcessFleets#estimate}). */
  long fleetEstimate(String name) {
    return fleets.estimate(name);
  }

  /** A budget of {@code name} heard from Redis that its fleet is {@code clients} clients ({@code first}: its first reply). */
  void learnedFleet(String name, long clients, boolean first) {
    fleets.learned(name, clients, first);
  }

  /**
   * True while at least one budget answers from its fallback, or Redis was never reached (with
   * relays: while neither a relay nor Redis is connected).
   */
  public boolean isDegraded() {
    if (routed != null ? !routed.anyConnected() : store == null) {
      return true;
    }
    for (RedisRetryBudget budget : budgets) {
      if (budget.isDegraded()) {
        return true;
      }
    }
    return false;
  }

  /** True while at least one budget decides from its fallback because Redis answers too slowly ({@link RetryBudget#isSlow()}). */
  public boolean isSlow() {
    for (RedisRetryBudget budget : budgets) {
      if (budget.isSlow()) {
        return true;
      }
    }
    return false;
  }

  RedisBudgetStore store() {
    return store;
  }

  BudgetScripts scripts() {
    return scripts;
  }

  /** The route across relays, or null without relays (tests). */
  RoutedPort routedPort() {
    return routed;
  }

  /** The client as its budgets see it: the way to Redis, the fleets this process knows, the log. */
  private final class Registry implements FleetRegistry {
    @Override
    public Port port() {
      return port;
    }

    @Override
    public long fleetEstimate(String name) {
      return RedisBudgetClient.this.fleetEstimate(name);
    }

    @Override
    public void learnedFleet(String name, long clients, boolean first) {
      RedisBudgetClient.this.learnedFleet(name, clients, first);
    }

    @Override
    public void forget(RedisRetryBudget budget) {
      if (budgets.remove(budget)) {
        fleets.closed(budget.name(), budget.heardFromRedis());
      }
    }

    @Override
    public void logDegraded(java.util.function.Supplier<String> message) {
      warnings.log(message);
    }

    @Override
    public void logRecovered(java.util.function.Supplier<String> message) {
      infos.log(message);
    }
  }

  /** How many times the client has tried to reach Redis (for tests and diagnostics). */
  int connectAttempts() {
    return connectAttempts.get();
  }

  private boolean tryConnect() {
    connectAttempts.incrementAndGet();
    try {
      RedisBudgetStore s = RedisBudgetStore.connect(connectionOptions);
      if (closed) {
        s.close(); // closed while connecting: leak nothing
        return false;
      }
      BudgetScripts sc = new BudgetScripts(s);
      port = new DirectPort(sc, DirectPort.WAY);
      scripts = sc;
      store = s;
      if (reportedUnreachable) {
        infos.log(() -> "Redis " + connectionOptions + " reached: budgets decide from Redis");
      }
      return true;
    } catch (RuntimeException e) {
      reportedUnreachable = true;
      // every attempt at DEBUG (the WARNING below is held back to one per 30 s)
      LOG.log(Level.DEBUG, () -> "connect attempt " + connectAttempts.get() + " to Redis "
          + connectionOptions + " failed", e);
      warnings.log(() -> "Redis " + connectionOptions + " not reachable, budgets use their " + fallbackPolicy
          + " fallback and the client keeps connecting: " + e.getMessage());
      return false;
    }
  }

  private void connectInBackground() {
    if (closed || store != null) {
      ScheduledFuture<?> task = connectTask;
      if (task != null) {
        task.cancel(false);
      }
      return;
    }
    if (tryConnect()) {
      ScheduledFuture<?> task = connectTask;
      if (task != null) {
        task.cancel(false);
      }
      if (closed) {
        store.close();
      }
    }
  }

  /**
   * Closes every budget (each sends its last counts, all at once, and the close waits for their
   * answers together, at most 2 s or the flush timeout if longer), then the timer thread and the Redis
   * connection.
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    List<RedisRetryBudget> all = new ArrayList<>(budgets);
    List<CompletableFuture<?>> last = new ArrayList<>(all.size());
    for (RedisRetryBudget budget : all) {
      last.add(budget.beginClose());
    }
    RedisRetryBudget.awaitLastCalls(last, RedisRetryBudget.closeWaitMillis(engine));
    for (RedisRetryBudget budget : all) {
      budget.finishClose();
    }
    scheduler.shutdownNow();
    try {
      scheduler.awaitTermination(2, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (routed != null) {
      routed.close();
    }
    RedisBudgetStore s = store;
    if (s != null) {
      s.close();
    }
  }

  /** Validates every value as it is set, naming the field that is wrong. */
  public static final class Builder {
    private final RedisConnectionOptions connectionOptions;
    private Duration callTimeout = Duration.ofMillis(20);
    private Duration flushInterval = Duration.ofMillis(500);
    private Duration maxFlushInterval = Duration.ofSeconds(10);
    private java.util.function.DoubleSupplier random = () -> java.util.concurrent.ThreadLocalRandom.current().nextDouble();
    private Duration exhaustedCacheTime = Duration.ofMillis(100);
    private FallbackPolicy fallbackPolicy = FallbackPolicy.LOCAL;
    private boolean fallbackSharesFloor = true;
    private LongSupplier millisClock = () -> System.nanoTime() / 1_000_000L;
    private java.util.List<RedisConnectionOptions> relays = java.util.List.of();
    private Duration relayRetryAfter = Duration.ofSeconds(1);

    private Builder(RedisConnectionOptions connectionOptions) {
      this.connectionOptions = Objects.requireNonNull(connectionOptions, "connectionOptions must not be null");
    }

    /** Hard limit on a permit request, enforced by this client (default 20 ms). */
    public Builder callTimeout(Duration timeout) {
      if (timeout == null || timeout.isNegative() || timeout.isZero() || timeout.compareTo(Duration.ofSeconds(5)) > 0) {
        throw new IllegalArgumentException("callTimeout must be in (0, 5s], was " + timeout);
      }
      this.callTimeout = timeout;
      return this;
    }

    /** How often locally counted first attempts are sent to Redis (default 500 ms, at most 1 s). */
    public Builder flushInterval(Duration interval) {
      if (interval == null || interval.toMillis() < 10 || interval.compareTo(Duration.ofSeconds(1)) > 0) {
        throw new IllegalArgumentException("flushInterval must be in [10ms, 1s], was " + interval);
      }
      this.flushInterval = interval;
      return this;
    }

    /**
     * The longest the flush interval is stretched to (default 10 s, in [1 s, 60 s]). A budget's
     * clients stretch their flushes to {@code N / max_calls_per_s} seconds (N clients in the fleet)
     * so the fleet's calls stay under the budget's ceiling; this bounds how long a configuration
     * change takes to reach an idle-permit client (1.25 times the interval plus one flushInterval).
     */
    public Builder maxFlushInterval(Duration interval) {
      if (interval == null || interval.compareTo(Duration.ofSeconds(1)) < 0 || interval.compareTo(Duration.ofSeconds(60)) > 0) {
        throw new IllegalArgumentException("maxFlushInterval must be in [1s, 60s], was " + interval);
      }
      this.maxFlushInterval = interval;
      return this;
    }

    /** The random source of flush phases and permit-call sampling, in [0, 1), for tests. */
    Builder random(java.util.function.DoubleSupplier source) {
      this.random = Objects.requireNonNull(source, "random must not be null");
      return this;
    }

    /**
     * The shortest time an "exhausted" answer is reused locally before Redis is asked again (default
     * 100 ms); it is reused until the budget can refill a permit (Redis says when), at most 1 s or
     * this time if longer.
     */
    public Builder exhaustedCacheTime(Duration time) {
      if (time == null || time.isNegative() || time.compareTo(Duration.ofSeconds(10)) > 0) {
        throw new IllegalArgumentException("exhaustedCacheTime must be in [0, 10s], was " + time);
      }
      this.exhaustedCacheTime = time;
      return this;
    }

    public Builder fallbackPolicy(FallbackPolicy policy) {
      this.fallbackPolicy = Objects.requireNonNull(policy, "fallbackPolicy must not be null");
      return this;
    }

    /**
     * Whether the LOCAL fallback adds this client's share of the fleet floor (floor / active
     * clients as last seen in Redis; the default) or no floor at all.
     */
    public Builder fallbackSharesFloor(boolean share) {
      this.fallbackSharesFloor = share;
      return this;
    }

    /** A monotonic clock in milliseconds, for tests. */
    public Builder millisClock(LongSupplier clock) {
      this.millisClock = Objects.requireNonNull(clock, "millisClock must not be null");
      return this;
    }

    /**
     * The relays budget calls go to, home relay first (docs/RELAY.md; default none: calls go to
     * Redis): a call goes to the first relay that is up, else the next, else to Redis (this builder's
     * connection options), else the fallback decides. At most 999 relays, no two the same. Each
     * relay has a connection of its own, made when first needed and kept up in the background; its
     * command timeout is how long a relay that accepts but never answers holds a call.
     */
    public Builder relays(java.util.List<RedisConnectionOptions> relays) {
      this.relays = RoutedPort.checkRelays(relays, connectionOptions);
      return this;
    }

    /** How long a relay (or Redis) that failed a call is passed over before it is tried again first (default 1 s, in [10 ms, 10 min]). */
    public Builder relayRetryAfter(Duration wait) {
      if (wait == null || wait.toMillis() < 10 || wait.compareTo(Duration.ofMinutes(10)) > 0) {
        throw new IllegalArgumentException("relayRetryAfter must be in [10ms, 10min], was " + wait);
      }
      this.relayRetryAfter = wait;
      return this;
    }

    public RedisBudgetClient build() {
      return new RedisBudgetClient(this);
    }
  }
}
