package io.retrybudget.budget;

import io.retrybudget.budget.redis.protocol.BrokenBudgetException;
import io.retrybudget.budget.redis.protocol.BudgetCall;
import io.retrybudget.budget.redis.protocol.BudgetReply;
import io.retrybudget.budget.redis.protocol.BudgetScripts;
import io.retrybudget.budget.redis.protocol.ClientSequence;
import io.retrybudget.budget.redis.transport.FailoverRoute;
import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import java.lang.System.Logger.Level;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongSupplier;

/**
 * A process's way to its budgets' counts across relays: each call goes to the first way of its
 * {@link FailoverRoute} (the home relay, the next relays, then Redis) that is not passed over and whose
 * connection is up; with none, it fails at once and the budget's fallback decides. A call is sent on
 * one way only: one that failed is never sent along the route again, so no count is applied twice (the
 * counts of one whose fate is unknown go with a later call on the same way, added only if it never ran
 * there: {@link BudgetLink}). A way is passed over for the route's wait when a call on it failed; a
 * way whose connection is down is skipped while it is (its client reconnects in the background), and
 * a way never connected is connected off the caller's thread ({@code connector}). Nothing here blocks
 * a caller.
 */
final class RoutedPort implements FleetRegistry.Port, AutoCloseable {
  private static final System.Logger LOG = System.getLogger(RoutedPort.class.getName());

  /** One way: a relay or Redis, and its port once connected. */
  private static final class Way {
    final RedisConnectionOptions options;
    final AtomicBoolean connecting = new AtomicBoolean();
    volatile DirectPort port;

    Way(RedisConnectionOptions options) {
      this.options = options;
    }

    boolean usable() {
      DirectPort p = port;
      return p != null && p.scripts().store().isConnected();
    }
  }

  /** How long a relay of another SDK version (it refuses this one's budget.lua) is passed over, at least. */
  static final long OTHER_VERSION_WAIT_MILLIS = 60_000;

  private final Way[] ways;
  private final FailoverRoute route; // guarded by itself
  private final LongSupplier clock;
  private final java.util.concurrent.ExecutorService connector;
  private volatile boolean closed;

  /**
   * A route over {@code ways}, in order of preference, each way passed over {@code retryAfterMillis}
   * after a failure; {@code connector} runs connection attempts (never a caller's thread).
   */
  RoutedPort(List<RedisConnectionOptions> ways, long retryAfterMillis, LongSupplier clock,
      java.util.concurrent.ExecutorService connector) {
    this.ways = ways.stream().map(Way::new).toArray(Way[]::new);
    this.route = new FailoverRoute(this.ways.length, retryAfterMillis);
    this.clock = clock;
    this.connector = connector;
  }

  /**
   * The route over {@code relays} then {@code redis}, with a connector thread of its own
   * ({@code retry-budget-connect}) that connects every way in order, the home relay first; returns
   * once one is connected, or after Redis's connect timeout (calls meanwhile skip the ways not up).
   */
  static RoutedPort start(List<RedisConnectionOptions> relays, RedisConnectionOptions redis, long retryAfterMillis,
      LongSupplier clock) {
    List<RedisConnectionOptions> ways = new java.util.ArrayList<>(relays);
    ways.add(redis); // Redis directly, last
    RoutedPort port = new RoutedPort(ways, retryAfterMillis, clock,
        io.retrybudget.internal.Schedulers.daemon("retry-budget-connect"));
    java.util.concurrent.CountDownLatch one = new java.util.concurrent.CountDownLatch(1);
    port.connector.execute(() -> {
      for (int w = 0; w < port.ways(); w++) {
        if (port.connectNow(port.ways[w])) {
          one.countDown();
        }
      }
      one.countDown();
    });
    try {
      one.await(redis.connectTimeout().toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return port;
  }

  /** The builder's check of a list of relays: at most 999, none null, no two the same, none Redis itself. */
  static List<RedisConnectionOptions> checkRelays(List<RedisConnectionOptions> relays, RedisConnectionOptions redis) {
    java.util.Objects.requireNonNull(relays, "relays must not be null");
    if (relays.size() >= FailoverRoute.MAX_WAYS) {
      throw new IllegalArgumentException("relays must be at most " + (FailoverRoute.MAX_WAYS - 1) + ", was "
          + relays.size());
    }
    if (relays.stream().anyMatch(java.util.Objects::isNull)) {
      throw new IllegalArgumentException("relays must not hold null, was " + relays);
    }
    java.util.Set<String> seen = new java.util.HashSet<>();
    for (RedisConnectionOptions r : relays) {
      if (!seen.add(r.toString()) || r.toString().equals(redis.toString())) {
        throw new IllegalArgumentException("relays must be distinct and not Redis itself, was " + r + " twice");
      }
    }
    return List.copyOf(relays);
  }

  @Override
  public boolean routed() {
    return true;
  }

  @Override
  public CompletableFuture<BudgetReply> budget(BudgetCall call, ClientSequence sequence) {
    return send(call, sequence, null).reply();
  }

  /**
   * Sends {@code call} on the first way it may take, carrying {@code offered}'s counts if they were in
   * doubt on that way (a relay's numbers are not Redis's: on another way they wait).
   */
  @Override
  public FleetRegistry.Sent send(BudgetCall call, ClientSequence sequence, CallsInDoubt offered) {
    return send(call, sequence, offered, w -> io.retrybudget.budget.redis.protocol.RelayHeld.Offer.NONE);
  }

  /** As {@link #send(BudgetCall, ClientSequence, CallsInDoubt)}, carrying the held items {@code held} offers for the way taken. */
  @Override
  public FleetRegistry.Sent send(BudgetCall call, ClientSequence sequence, CallsInDoubt offered,
      java.util.function.IntFunction<io.retrybudget.budget.redis.protocol.RelayHeld.Offer> held) {
    long now = clock.getAsLong();
    int w;
    synchronized (route) {
      // a way whose connection is down is skipped (no call goes to it, so the next way may take this
      // one: its counts were applied nowhere) and connected in the background if it never was
      w = route.pick(now, this::upOrConnectLater);
    }
    if (w == FailoverRoute.NONE) {
      return new FleetRegistry.Sent(CompletableFuture.failedFuture(new NoWayException()), w, () -> 0, false);
    }
    FleetRegistry.Sent sent = ways[w].port.send(call, sequence, offered, held);
    int chosen = w;
    sent.reply().whenComplete((reply, error) -> settled(chosen, error));
    return sent;
  }

  private boolean upOrConnectLater(int way) {
    if (ways[way].usable()) {
      return true;
    }
    connectLater(ways[way]);
    return false;
  }

  private void settled(int way, Throwable error) {
    Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
    if (cause instanceof BrokenBudgetException) {
      return; // the way answered: that budget's keys are broken, the way is fine
    }
    long now = clock.getAsLong();
    boolean otherVersion = cause != null && BudgetScripts.refusedAsOtherVersion(cause);
    boolean told;
    synchronized (route) {
      told = route.passedOver(way, now);
      if (cause == null) {
        route.answered(way);
      } else if (otherVersion) {
        // it will refuse every call until one of the two is upgraded: the next ways take them meanwhile
        // (the refused call ran nowhere: its counts go with the next call, BudgetLink)
        route.refused(way, now, OTHER_VERSION_WAIT_MILLIS);
      } else {
        route.failed(way, now);
      }
    }
    if (otherVersion && !told) {
      LOG.log(Level.WARNING, "relay " + ways[way].options + " runs another SDK version (" + cause.getMessage()
          + "); passed over for " + Math.max(OTHER_VERSION_WAIT_MILLIS, route.retryAfterMillis()) / 1000
          + " s: calls go to the next way (docs/RELAY.md, \"Upgrading\")");
    }
  }

  private void connectLater(Way way) {
    if (way.port == null && !closed && way.connecting.compareAndSet(false, true)) {
      try {
        connector.execute(() -> connectNow(way));
      } catch (RuntimeException e) {
        way.connecting.set(false); // the connector is shut down: the client is closing
      }
    }
  }

  private boolean connectNow(Way way) {
    try {
      if (way.port != null || closed) {
        return way.port != null;
      }
      RedisBudgetStore store = RedisBudgetStore.connect(way.options);
      synchronized (ways) {
        if (!closed) {
          way.port = new DirectPort(new BudgetScripts(store), index(way));
          return true;
        }
      }
      store.close(); // closed while connecting: leak nothing
      return false;
    } catch (RuntimeException e) {
      LOG.log(Level.DEBUG, () -> "budget calls cannot go to " + way.options + " yet: " + e.getMessage());
      return false;
    } finally {
      way.connecting.set(false);
    }
  }

  private int index(Way way) {
    for (int w = 0; w < ways.length; w++) {
      if (ways[w] == way) {
        return w;
      }
    }
    throw new IllegalArgumentException("not a way of this route: " + way.options);
  }

  /** How many ways the route has. */
  int ways() {
    return ways.length;
  }

  /** The way the last call was sent on, or {@link FailoverRoute#NONE}. */
  int current() {
    synchronized (route) {
      return route.current();
    }
  }

  /** Whether way {@code way} is passed over now. */
  boolean passedOver(int way) {
    synchronized (route) {
      return route.passedOver(way, clock.getAsLong());
    }
  }

  /** Whether some way is connected now. */
  boolean anyConnected() {
    for (Way way : ways) {
      if (way.usable()) {
        return true;
      }
    }
    return false;
  }

  /** Whether way {@code way} is connected now. */
  boolean connected(int way) {
    return ways[way].usable();
  }

  /**
   * Stops the connector (waiting for an attempt under way, its connect timeout at most) and closes every
   * way's connection; an attempt that outlives the wait closes what it opens.
   */
  @Override
  public void close() {
    connector.shutdownNow();
    try {
      connector.awaitTermination(ways[ways.length - 1].options.connectTimeout().toMillis() + 2_000,
          java.util.concurrent.TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    synchronized (ways) {
      closed = true; // from here no connection is kept: every one made is closed below or by its maker
    }
    for (Way way : ways) {
      DirectPort p = way.port;
      if (p != null) {
        p.scripts().store().close();
      }
    }
  }

  /** Every way is passed over: the budget's fallback decides. */
  static final class NoWayException extends RuntimeException {
    NoWayException() {
      super("no relay and no Redis can take budget calls now", null, false, false);
    }
  }
}
