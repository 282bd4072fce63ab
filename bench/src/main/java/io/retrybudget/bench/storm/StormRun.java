package io.retrybudget.bench.storm;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.budget.LocalRetryBudget;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.budget.redis.BudgetKeys;
import io.retrybudget.budget.redis.RedisConnectionOptions;
import io.retrybudget.budget.redis.WindowRing;
import io.retrybudget.testing.CommandStats;
import io.retrybudget.testing.RedisServerProcess;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;

/**
 * One strategy through one storm: healthy traffic, a total outage (every attempt fails at once),
 * healthy traffic again. Wall-clock time throughout, because the Redis budget counts in Redis
 * TIME. Every strategy gets a fresh redis-server, so its command statistics are its own.
 */
final class StormRun {
  static final String BUDGET_NAME = "storm";
  private static final long TICK_NANOS = TimeUnit.MILLISECONDS.toNanos(2);

  private final Options o;
  private final Strategy strategy;
  private final int seconds;
  private final long outageStartNanos;
  private final long outageEndNanos;
  private final long runNanos;
  private final double perClientRate;

  // per second of the run, counted when an attempt is actually sent
  private final LongAdder[] first;
  private final LongAdder[] retries;
  private final long[] redisEvalsha;
  private final long[] redisAll;
  private final LongAdder[] decisions = new LongAdder[BudgetDecision.Reason.values().length];
  private final LongAdder acquireErrors = new LongAdder();
  private static final long[] LATENCY_BOUNDS_MICROS = {100, 500, 1_000, 5_000, 10_000, 20_000, 50_000, Long.MAX_VALUE};
  private final LongAdder[] acquireLatency = adders(LATENCY_BOUNDS_MICROS.length);
  private final AtomicLong inFlight = new AtomicLong();
  // budgets (clients) seen degraded at least once, checked every tick (2 ms)
  private final AtomicLong everDegraded = new AtomicLong();
  long faultAtSecond = -1;
  // per second of the run: the most clients degraded at the same tick
  private final AtomicLong[] maxDegraded;

  private ScheduledThreadPoolExecutor scheduler;
  private volatile long startNanos;

  // whole-run Redis figures
  long evalshaCalls;
  long allCalls;
  long evalshaCallsOutage;
  long allCallsOutage;
  double measuredSeconds;
  String redisVersion = "";
  String evalshaUsecPerCall = "-";
  // fleet: retries Redis counted as granted, per window bucket (bucket number -> count)
  private final java.util.Map<Long, Long> redisGrantedByBucket = new java.util.HashMap<>();

  StormRun(Options o, Strategy strategy) {
    this.o = o;
    this.strategy = strategy;
    this.seconds = 2 * o.healthySeconds + o.outageSeconds;
    this.outageStartNanos = TimeUnit.SECONDS.toNanos(o.healthySeconds);
    this.outageEndNanos = TimeUnit.SECONDS.toNanos(o.healthySeconds + o.outageSeconds);
    this.runNanos = TimeUnit.SECONDS.toNanos(seconds);
    this.perClientRate = o.rate / o.clients;
    this.first = adders(seconds + 1);
    this.retries = adders(seconds + 1);
    this.redisEvalsha = new long[seconds + 1];
    this.redisAll = new long[seconds + 1];
    this.maxDegraded = new AtomicLong[seconds + 1];
    for (int i = 0; i <= seconds; i++) {
      maxDegraded[i] = new AtomicLong();
    }
    for (int i = 0; i < decisions.length; i++) {
      decisions[i] = new LongAdder();
    }
  }

  private static LongAdder[] adders(int n) {
    LongAdder[] a = new LongAdder[n];
    for (int i = 0; i < n; i++) {
      a[i] = new LongAdder();
    }
    return a;
  }

  /** A simulated client: its own budget state, its own pacing phase. */
  private static final class SimClient {
    final RetryBudget budget; // null: no budget
    final double phase;
    long sent; // first attempts started; ticker thread only
    boolean everDegraded; // ticker thread only

    SimClient(RetryBudget budget, double phase) {
      this.budget = budget;
      this.phase = phase;
    }
  }

  void run() throws InterruptedException {
    System.out.printf("%n== %s: %d clients, %.0f first attempts/s (%.2f per client), %d s healthy, %d s outage, %d s healthy%n",
        strategy.label, o.clients, o.rate, perClientRate, o.healthySeconds, o.outageSeconds, o.healthySeconds);
    try (Redis redis = o.redis.equals("cluster") ? Redis.cluster() : Redis.standalone()) {
      redisVersion = info(redis.budgetNode(), "server").lines().filter(l -> l.startsWith("redis_version:"))
          .map(l -> l.substring("redis_version:".length()).trim()).findFirst().orElse("?");
      RedisBudgetClient budgetClient = null;
      List<SimClient> clients = new ArrayList<>(o.clients);
      Random random = new Random(o.seed);
      try {
        if (strategy == Strategy.FLEET) {
          RedisBudgetClient.Builder builder = RedisBudgetClient.builder(redis.options());
          if (o.callTimeoutMillis != null) {
            builder.callTimeout(java.time.Duration.ofMillis(o.callTimeoutMillis));
          }
          if (o.fallback != null) {
            builder.fallbackPolicy(io.retrybudget.budget.FallbackPolicy.valueOf(o.fallback));
          }
          budgetClient = builder.build();
          // Separate processes do not start their flush timers in the same millisecond: spread
          // the budgets' creation over one flush interval (500 ms by default).
          long gap = TimeUnit.MILLISECONDS.toNanos(500) / o.clients;
          BudgetConfig config = BudgetConfig.builder(BUDGET_NAME).build();
          for (int i = 0; i < o.clients; i++) {
            clients.add(new SimClient(budgetClient.budget(config), random.nextDouble()));
            LockSupport.parkNanos(gap);
          }
        } else if (strategy == Strategy.LOCAL) {
          BudgetConfig finagle = BudgetConfig.builder(BUDGET_NAME)
              .ratio(0.20).minRetriesPerSecond(10).windowSeconds(10).build();
          for (int i = 0; i < o.clients; i++) {
            clients.add(new SimClient(new LocalRetryBudget(finagle), random.nextDouble()));
          }
        } else {
          for (int i = 0; i < o.clients; i++) {
            clients.add(new SimClient(null, random.nextDouble()));
          }
        }
        drive(redis, clients);
      } finally {
        for (SimClient c : clients) {
          if (c.budget != null) {
            c.budget.close();
          }
        }
        if (budgetClient != null) {
          budgetClient.close();
        }
      }
    }
  }

  /** The Redis of a run: one process, or a 3-master Cluster with a replica per master. */
  static final class Redis implements AutoCloseable {
    private final RedisServerProcess standalone;
    private final io.retrybudget.testing.RedisClusterProcesses cluster;

    private Redis(RedisServerProcess standalone, io.retrybudget.testing.RedisClusterProcesses cluster) {
      this.standalone = standalone;
      this.cluster = cluster;
    }

    static Redis standalone() {
      return new Redis(RedisServerProcess.start(), null);
    }

    static Redis cluster() {
      return new Redis(null, io.retrybudget.testing.RedisClusterProcesses.start(3, 1));
    }

    RedisConnectionOptions options() {
      return standalone != null ? RedisConnectionOptions.standalone(standalone.uri()).build()
          : RedisConnectionOptions.cluster(cluster.nodes()).build();
    }

    /** The process serving the budget's keys now (after a failover: the promoted replica). */
    RedisServerProcess budgetNode() {
      return standalone != null ? standalone : cluster.masterFor(new BudgetKeys(BUDGET_NAME, true).config());
    }

    /** Every live master. */
    List<RedisServerProcess> masters() {
      if (standalone != null) {
        return List.of(standalone);
      }
      List<RedisServerProcess> all = new ArrayList<>(cluster.masters());
      all.addAll(cluster.replicas());
      List<RedisServerProcess> out = new ArrayList<>();
      for (RedisServerProcess p : all) {
        if (p.isAlive() && String.valueOf(p.call("ROLE")).startsWith("[master")) {
          out.add(p);
        }
      }
      return out;
    }

    /** INFO commandstats summed over the live masters, as one text of cmdstat lines. */
    String commandstats() {
      java.util.Map<String, long[]> sums = new java.util.TreeMap<>();
      for (RedisServerProcess m : masters()) {
        for (String line : info(m, "commandstats").split("\r?\n")) {
          if (!line.startsWith("cmdstat_")) {
            continue;
          }
          String name = line.substring(0, line.indexOf(':'));
          long calls = Long.parseLong(field(line + ",", name + ":", "calls="));
          sums.computeIfAbsent(name, k -> new long[1])[0] += calls;
        }
      }
      StringBuilder sb = new StringBuilder();
      sums.forEach((name, c) -> sb.append(name).append(":calls=").append(c[0]).append(",usec_per_call=-\n"));
      return sb.toString();
    }

    void resetStats() {
      for (RedisServerProcess m : masters()) {
        m.call("CONFIG", "RESETSTAT");
      }
    }

    @Override
    public void close() {
      if (standalone != null) {
        standalone.close();
      } else {
        cluster.close();
      }
    }
  }

  private void drive(Redis redis, List<SimClient> clients) throws InterruptedException {
    scheduler = new ScheduledThreadPoolExecutor(2, r -> {
      Thread t = new Thread(r, "storm-" + strategy.id);
      t.setDaemon(true);
      return t;
    });
    scheduler.setRemoveOnCancelPolicy(true);
    redis.resetStats();
    CountDownLatch done = new CountDownLatch(1);
    startNanos = System.nanoTime();
    ScheduledFuture<?> ticker = scheduler.scheduleAtFixedRate(() -> tick(clients, done), 0, TICK_NANOS, TimeUnit.NANOSECONDS);
    // Redis command statistics once a second, on this thread
    long prevEval = 0;
    long prevAll = 0;
    for (int s = 1; s <= seconds; s++) {
      long at = startNanos + TimeUnit.SECONDS.toNanos(s);
      long wait;
      while ((wait = at - System.nanoTime()) > 0) {
        LockSupport.parkNanos(wait);
      }
      String stats = redis.commandstats();
      long ev = scriptCalls(stats);
      long all = appCalls(stats);
      // a master killed takes its counts with it: never a negative second
      redisEvalsha[s - 1] = Math.max(0, ev - prevEval);
      redisAll[s - 1] = Math.max(0, all - prevAll);
      prevEval = ev;
      prevAll = all;
      if (strategy == Strategy.FLEET) {
        sampleWindow(redis);
      }
      if (s == o.healthySeconds + o.faultAtOutageSecond && o.fault.equals("scriptflush")) {
        for (RedisServerProcess m : redis.masters()) {
          m.call("SCRIPT", "FLUSH");
        }
        faultAtSecond = s;
        System.out.printf("  t=%2ds SCRIPT FLUSH%n", s);
      } else if (s == o.healthySeconds + o.faultAtOutageSecond && o.fault.equals("killmaster")) {
        RedisServerProcess victim = redis.budgetNode();
        victim.kill();
        faultAtSecond = s;
        System.out.printf("  t=%2ds kill -9 of the budget's master (port %d)%n", s, victim.port());
      }
      if (s % 5 == 0 || s == seconds) {
        System.out.printf("  t=%2ds first=%5d retries=%5d redis evalsha=%5d%n", s - 1,
            first[s - 1].sum(), retries[s - 1].sum(), redisEvalsha[s - 1]);
      }
    }
    done.await(5, TimeUnit.SECONDS);
    ticker.cancel(false);
    // let retries already granted finish (there are none once the backend is healthy again)
    long drainUntil = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
    while (inFlight.get() > 0 && System.nanoTime() < drainUntil) {
      Thread.sleep(10);
    }
    measuredSeconds = (System.nanoTime() - startNanos) / 1e9;
    if (strategy == Strategy.FLEET) {
      sampleWindow(redis);
    }
    String stats = redis.commandstats();
    evalshaCalls = scriptCalls(stats);
    String own = info(redis.budgetNode(), "commandstats");
    evalshaUsecPerCall = field(own, "cmdstat_evalsha:", "usec_per_call=");
    allCalls = appCalls(stats);
    for (int s = o.healthySeconds; s < o.healthySeconds + o.outageSeconds; s++) {
      evalshaCallsOutage += redisEvalsha[s];
      allCallsOutage += redisAll[s];
    }
    scheduler.shutdownNow();
    scheduler.awaitTermination(5, TimeUnit.SECONDS);
  }

  private void tick(List<SimClient> clients, CountDownLatch done) {
    long elapsed = System.nanoTime() - startNanos;
    if (elapsed >= runNanos) {
      done.countDown();
      return;
    }
    double elapsedSeconds = elapsed / 1e9;
    long degradedNow = 0;
    for (SimClient c : clients) {
      if (c.budget != null && c.budget.isDegraded()) {
        degradedNow++;
        if (!c.everDegraded) {
          c.everDegraded = true;
          everDegraded.incrementAndGet();
        }
      }
      long owed = (long) Math.floor(elapsedSeconds * perClientRate + c.phase);
      while (c.sent < owed) {
        c.sent++;
        firstAttempt(c);
      }
    }
    long now = degradedNow;
    maxDegraded[second(elapsed)].accumulateAndGet(now, Math::max);
  }

  private boolean failing(long elapsed) {
    return elapsed >= outageStartNanos && elapsed < outageEndNanos;
  }

  private int second(long elapsed) {
    return (int) Math.min(seconds, Math.max(0, elapsed / 1_000_000_000L));
  }

  private void firstAttempt(SimClient c) {
    long elapsed = System.nanoTime() - startNanos;
    first[second(elapsed)].increment();
    if (c.budget != null) {
      c.budget.recordFirstAttempt();
    }
    if (failing(elapsed)) {
      afterFailure(c, 1);
    }
  }

  /** The backend failed attempt number {@code attempts}: ask for a retry, if any is left. */
  private void afterFailure(SimClient c, int attempts) {
    if (attempts >= o.maxAttempts) {
      return;
    }
    if (c.budget == null) {
      scheduleRetry(c, attempts + 1);
      return;
    }
    inFlight.incrementAndGet();
    long asked = System.nanoTime();
    c.budget.acquire().whenComplete((decision, error) -> {
      try {
        long micros = (System.nanoTime() - asked) / 1000;
        int b = 0;
        while (micros >= LATENCY_BOUNDS_MICROS[b]) {
          b++;
        }
        acquireLatency[b].increment();
        if (error != null) {
          acquireErrors.increment();
          return;
        }
        decisions[decision.reason().ordinal()].increment();
        if (decision.granted()) {
          // the permit is counted now, before the backoff, as the SDK does
          scheduleRetry(c, attempts + 1);
        }
      } finally {
        inFlight.decrementAndGet();
      }
    });
  }

  private void scheduleRetry(SimClient c, int attempt) {
    long delay = o.backoffMinMillis
        + (o.backoffMaxMillis > o.backoffMinMillis ? ThreadLocalRandom.current().nextInt(o.backoffMaxMillis - o.backoffMinMillis + 1) : 0);
    inFlight.incrementAndGet();
    try {
      scheduler.schedule(() -> {
        try {
          retry(c, attempt);
        } finally {
          inFlight.decrementAndGet();
        }
      }, delay, TimeUnit.MILLISECONDS);
    } catch (RuntimeException rejected) {
      inFlight.decrementAndGet(); // run over
    }
  }

  private void retry(SimClient c, int attempt) {
    long elapsed = System.nanoTime() - startNanos;
    retries[second(elapsed)].increment();
    if (failing(elapsed)) {
      afterFailure(c, attempt);
    }
  }

  /** Reads the budget's bucket ring; a bucket stays in it for a whole window after it closes. */
  private void sampleWindow(Redis redis) {
    long[][] slots;
    try {
      slots = new WindowRing(redis.budgetNode(), new BudgetKeys(BUDGET_NAME)).slots();
    } catch (RuntimeException e) {
      return; // the node is failing over: sample next second
    }
    for (long[] slot : slots) {
      if (slot[WindowRing.T] != 0) {
        redisGrantedByBucket.merge(slot[WindowRing.T], slot[WindowRing.G], Math::max);
      }
    }
  }

  /** Retries Redis counted as granted over the whole run (fleet strategy). */
  long redisGranted() {
    long sum = 0;
    for (long g : redisGrantedByBucket.values()) {
      sum += g;
    }
    return sum;
  }

  static String field(String info, String line, String name) {
    for (String l : info.split("\r?\n")) {
      if (l.startsWith(line)) {
        for (String part : l.substring(line.length()).split(",")) {
          if (part.startsWith(name)) {
            return part.substring(name.length());
          }
        }
      }
    }
    return "-";
  }

  static String info(RedisServerProcess redis, String section) {
    return String.valueOf(redis.call("INFO", section));
  }

  /** Script calls: EVALSHA, plus EVAL (sent once after a NOSCRIPT). */
  static long scriptCalls(String commandstats) {
    return CommandStats.calls(commandstats, "evalsha") + CommandStats.calls(commandstats, "eval");
  }

  /**
   * Every command Redis counted, without the harness's own INFO and CONFIG. Redis counts the
   * commands a script runs with redis.call too, so this is more than the client's round trips.
   */
  static long appCalls(String commandstats) {
    return CommandStats.totalCalls(commandstats)
        - CommandStats.calls(commandstats, "info")
        - CommandStats.calls(commandstats, "config|resetstat")
        - CommandStats.calls(commandstats, "config");
  }

  // ---- results

  Strategy strategy() {
    return strategy;
  }

  int seconds() {
    return seconds;
  }

  long first(int second) {
    return first[second].sum();
  }

  long retries(int second) {
    return retries[second].sum();
  }

  long redisEvalsha(int second) {
    return redisEvalsha[second];
  }

  long redisAll(int second) {
    return redisAll[second];
  }

  long firstTotal(int fromSecond, int toSecondExclusive) {
    long sum = 0;
    for (int s = fromSecond; s < toSecondExclusive; s++) {
      sum += first[s].sum();
    }
    return sum;
  }

  long retriesTotal(int fromSecond, int toSecondExclusive) {
    long sum = 0;
    for (int s = fromSecond; s < toSecondExclusive; s++) {
      sum += retries[s].sum();
    }
    return sum;
  }

  long decisions(BudgetDecision.Reason reason) {
    return decisions[reason.ordinal()].sum();
  }

  String acquireLatencyHistogram() {
    StringBuilder sb = new StringBuilder();
    long prev = 0;
    for (int i = 0; i < LATENCY_BOUNDS_MICROS.length; i++) {
      long bound = LATENCY_BOUNDS_MICROS[i];
      String range = bound == Long.MAX_VALUE ? ">=" + prev / 1000.0 + "ms" : "<" + (bound < 1000 ? bound + "us" : bound / 1000 + "ms");
      sb.append(range).append(':').append(acquireLatency[i].sum()).append(' ');
      prev = bound;
    }
    return sb.toString().trim();
  }

  long maxDegraded(int second) {
    return maxDegraded[second].get();
  }

  long everDegraded() {
    return everDegraded.get();
  }

  long acquireErrors() {
    return acquireErrors.sum();
  }
}
