package io.retrybudget.coordinator;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * SDK clients in a storm, and its history: {@code processes} {@link RedisBudgetClient}s (each a
 * process of the fleet, with its own route: home relay, the other relay, Redis), each holding
 * {@code perProcess} engines of one budget. Every tick each engine makes its first attempts; in the
 * outage every first attempt fails and asks the budget for a retry. Per second of the storm the
 * history holds first attempts and grants, for the whole fleet and per home relay, and for each
 * engine every tick at which it was degraded.
 */
final class RelayStormFleet implements AutoCloseable {
  static final int SECONDS = 60;
  private static final long TICK_MILLIS = 20;

  /**
   * One engine: its budget, its home relay (0 or 1), and the times (ms) at which a tick saw it
   * degraded (deciding from its fallback because its calls failed).
   */
  record Engine(RetryBudget budget, int home, List<Long> degraded) {}

  private final List<RedisBudgetClient> clients = new ArrayList<>();
  private final List<Engine> engines = new ArrayList<>();
  private final ScheduledExecutorService ticker = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread t = new Thread(r, "storm");
    t.setDaemon(true);
    return t;
  });
  private final double firstsPerSecond;
  private final long t0 = System.nanoTime();
  private final AtomicLong made = new AtomicLong();
  // [home][second]: first attempts and grants (home 2: the fleet)
  private final AtomicLongArray[] firsts = {new AtomicLongArray(SECONDS), new AtomicLongArray(SECONDS),
      new AtomicLongArray(SECONDS)};
  private final AtomicLongArray[] grants = {new AtomicLongArray(SECONDS), new AtomicLongArray(SECONDS),
      new AtomicLongArray(SECONDS)};
  private volatile boolean outage;
  private double owed;

  RelayStormFleet(String redisUri, List<String> relayUris, int processes, int perProcess, BudgetConfig config,
      double firstsPerSecond) {
    this.firstsPerSecond = firstsPerSecond;
    for (int p = 0; p < processes; p++) {
      int home = p % relayUris.size();
      List<RedisConnectionOptions> route = new ArrayList<>();
      for (int i = 0; i < relayUris.size(); i++) {
        route.add(RedisConnectionOptions.standalone(relayUris.get((home + i) % relayUris.size())).build());
      }
      // a call timeout of 250 ms: a relay's answer takes a millisecond, and a loaded machine must not
      // turn answers into refusals in doubt
      RedisBudgetClient client = RedisBudgetClient.builder(RedisConnectionOptions.standalone(redisUri).build())
          .relays(route).callTimeout(Duration.ofMillis(250)).build();
      clients.add(client);
      for (int i = 0; i < perProcess; i++) {
        engines.add(new Engine(client.budget(config), home, java.util.Collections.synchronizedList(new ArrayList<>())));
      }
    }
  }

  /** Milliseconds since the fleet was made. */
  long now() {
    return (System.nanoTime() - t0) / 1_000_000;
  }

  void start() {
    ticker.scheduleAtFixedRate(this::tick, 0, TICK_MILLIS, TimeUnit.MILLISECONDS);
  }

  /** From now on every first attempt fails and asks for a retry. */
  void outage(boolean on) {
    outage = on;
  }

  private void tick() {
    owed += firstsPerSecond * TICK_MILLIS / 1000.0;
    int n = (int) owed;
    owed -= n;
    for (Engine e : engines) {
      if (e.budget().isDegraded()) {
        e.degraded().add(now());
      }
      for (int i = 0; i < n; i++) {
        long at = now();
        int s = (int) Math.min(SECONDS - 1, at / 1000);
        e.budget().recordFirstAttempt();
        made.incrementAndGet();
        firsts[e.home()].incrementAndGet(s);
        firsts[2].incrementAndGet(s);
        if (outage) {
          e.budget().acquire().whenComplete((d, error) -> decided(e, d));
        }
      }
    }
  }

  private void decided(Engine e, BudgetDecision d) {
    if (d == null) {
      return;
    }
    long at = now();
    if (d.granted()) {
      int s = (int) Math.min(SECONDS - 1, at / 1000);
      grants[e.home()].incrementAndGet(s);
      grants[2].incrementAndGet(s);
    }
  }

  /** Stops the storm (waits for the tick under way). */
  void stop() throws InterruptedException {
    ticker.shutdown();
    ticker.awaitTermination(10, TimeUnit.SECONDS);
  }

  long made() {
    return made.get();
  }

  /** First attempts in second {@code s} of the engines homed at {@code home} (2: all). */
  long firsts(int home, int s) {
    return firsts[home].get(s);
  }

  long grants(int home, int s) {
    return grants[home].get(s);
  }

  List<Engine> engines() {
    return engines;
  }

  List<RedisBudgetClient> clients() {
    return clients;
  }

  @Override
  public void close() throws InterruptedException {
    stop();
    for (RedisBudgetClient c : clients) {
      c.close();
    }
  }
}
