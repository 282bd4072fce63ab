package io.retrybudget.bench.storm;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.budget.LocalRetryBudget;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
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
  // per second: Redis CPU (INFO cpu used_cpu_sys + used_cpu_user, summed over the live masters, us)
  private final long[] redisCpuMicros;
  // per second: CPU of this JVM (the simulated fleet, the SDK's threads and the harness), us
  private final long[] harnessCpuMicros;
  // per second: how long the sampling interval really was (us); the figures above are scaled to 1 s
  private final long[] sampleIntervalMicros;
  // per second: first attempts sent so far less those Redis's bucket ring counted (-1: not read)
  private final long[] countLag;
  // per second: the latest a 2 ms tick started after its due time, and the longest tick (us)
  private final AtomicLong[] tickLagMaxMicros;
  private final AtomicLong[] tickRunMaxMicros;
  // per second: grants and refusals from the SDK's fallback (Redis not asked or not in time)
  private final LongAdder[] fallbackGrants;
  private final LongAdder[] fallbackDenials;
  // the simulated processes' tickers: each drives its own clients on its own thread
  private final List<Shard> shards = new ArrayList<>();
  // how late the backoff timers of retries fire (us), in the buckets of LAG_BOUNDS_MICROS
  private static final long[] LAG_BOUNDS_MICROS = {100, 250, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, Long.MAX_VALUE};
  private final LongAdder[] timerLag = adders(LAG_BOUNDS_MICROS.length);
  private final AtomicLong timerLagMax = new AtomicLong();
  // the harness's own EVALs (reading the window ring), not the budget's script calls
  private final AtomicLong harnessEvals = new AtomicLong();
  // what the simulated fleet costs this JVM once built
  long heapBytesBefore;
  long heapBytesAfter;
  int threadsAfterBuild;
  int peakThreads;
  double buildSeconds;
  double closeSeconds;
  String loadBefore = "";
  String loadAfter = "";
  int budgetClients;
  double connectWaitSeconds;
  long connectedAtStart;
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
  // t=0 of the recorded run; the tickers start warmupNanos before it (healthy, not recorded)
  private volatile long startNanos;
  private volatile long warmStartNanos;
  private final long warmupNanos;

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
    this.warmupNanos = TimeUnit.SECONDS.toNanos(o.warmupSeconds);
    this.perClientRate = o.rate / o.clients;
    this.first = adders(seconds + 2);
    this.retries = adders(seconds + 2);
    this.redisEvalsha = new long[seconds + 2];
    this.redisAll = new long[seconds + 2];
    this.redisCpuMicros = new long[seconds + 2];
    this.harnessCpuMicros = new long[seconds + 2];
    this.sampleIntervalMicros = new long[seconds + 2];
    this.countLag = new long[seconds + 2];
    java.util.Arrays.fill(countLag, -1);
    this.tickLagMaxMicros = new AtomicLong[seconds + 2];
    this.tickRunMaxMicros = new AtomicLong[seconds + 2];
    for (int i = 0; i <= seconds + 1; i++) {
      tickLagMaxMicros[i] = new AtomicLong();
      tickRunMaxMicros[i] = new AtomicLong();
    }
    this.fallbackGrants = adders(seconds + 2);
    this.fallbackDenials = adders(seconds + 2);
    this.maxDegraded = new AtomicLong[seconds + 2];
    for (int i = 0; i <= seconds + 1; i++) {
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
      List<RedisBudgetClient> budgetClientList = new ArrayList<>();
      List<SimClient> clients = new ArrayList<>(o.clients);
      Random random = new Random(o.seed);
      loadBefore = loadAverage();
      System.gc();
      heapBytesBefore = heapUsed();
      long buildStart = System.nanoTime();
      try {
        if (strategy == Strategy.FLEET) {
          // One RedisBudgetClient per simulated process (its own Lettuce connection, event loops
          // and timer thread), each with its share of the clients' budgets.
          budgetClients = o.budgetClients;
          for (int p = 0; p < budgetClients; p++) {
            RedisBudgetClient.Builder builder = RedisBudgetClient.builder(redis.options());
            if (o.callTimeoutMillis != null) {
              builder.callTimeout(java.time.Duration.ofMillis(o.callTimeoutMillis));
            }
            if (o.fallback != null) {
              builder.fallbackPolicy(io.retrybudget.budget.FallbackPolicy.valueOf(o.fallback));
            }
            budgetClientList.add(builder.build());
          }
          // Separate processes do not start their flush timers in the same millisecond: spread
          // the budgets' creation over one flush interval (500 ms by default).
          long gap = TimeUnit.MILLISECONDS.toNanos(500) / o.clients;
          BudgetConfig config = BudgetConfig.builder(BUDGET_NAME).ratio(o.ratio)
              .minRetriesPerSecond(o.minRetriesPerSecond).windowSeconds(o.windowSeconds).build();
          long next = System.nanoTime();
          for (int i = 0; i < o.clients; i++) {
            // client i lives in process i % budgetClients
            clients.add(new SimClient(budgetClientList.get(i % budgetClients).budget(config), random.nextDouble()));
            next += gap;
            long wait = next - System.nanoTime();
            if (wait > 0) {
              LockSupport.parkNanos(wait);
            }
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
        buildSeconds = (System.nanoTime() - buildStart) / 1e9;
        // A fleet is connected before its storm: wait (at most 20 s) until every RedisBudgetClient
        // has reached Redis; on a loaded machine the first connect can miss its 2 s timeout.
        long connectStart = System.nanoTime();
        long connectUntil = connectStart + TimeUnit.SECONDS.toNanos(20);
        while (budgetClientList.stream().anyMatch(RedisBudgetClient::isDegraded) && System.nanoTime() < connectUntil) {
          LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
        }
        connectWaitSeconds = (System.nanoTime() - connectStart) / 1e9;
        connectedAtStart = budgetClientList.stream().filter(bc -> !bc.isDegraded()).count();
        System.gc();
        heapBytesAfter = heapUsed();
        threadsAfterBuild = java.lang.management.ManagementFactory.getThreadMXBean().getThreadCount();
        java.lang.management.ManagementFactory.getThreadMXBean().resetPeakThreadCount();
        drive(redis, clients);
        peakThreads = java.lang.management.ManagementFactory.getThreadMXBean().getPeakThreadCount();
        loadAfter = loadAverage();
      } finally {
        long closeStart = System.nanoTime();
        for (SimClient c : clients) {
          if (c.budget != null) {
            c.budget.close();
          }
        }
        for (RedisBudgetClient bc : budgetClientList) {
          bc.close();
        }
        closeSeconds = (System.nanoTime() - closeStart) / 1e9;
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
      // every key of the budget carries the hash tag {storm}: the tag alone names their slot
      return standalone != null ? standalone : cluster.masterFor("{" + BUDGET_NAME + "}");
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

    /** INFO cpu used_cpu_sys + used_cpu_user summed over the live masters, in microseconds. */
    long cpuMicros() {
      long sum = 0;
      for (RedisServerProcess m : masters()) {
        String cpu = info(m, "cpu");
        sum += cpuField(cpu, "used_cpu_sys:") + cpuField(cpu, "used_cpu_user:");
      }
      return sum;
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

  /**
   * The clients of one simulated process, driven by one ticker thread of their own (so a slow SDK
   * call in one process does not hold back the others), every 2 ms.
   */
  private final class Shard {
    final int index;
    final List<SimClient> clients = new ArrayList<>();
    final long[] lags = new long[(int) (runNanos / TICK_NANOS) + 1000]; // this ticker's thread only
    int count; // ticks run; this ticker's thread only (a fixed-rate task never overlaps itself)
    int recorded; // ticks of the recorded run (t >= 0) in lags; this ticker's thread only
    final ScheduledThreadPoolExecutor ticker;

    Shard(int index) {
      this.index = index;
      this.ticker = new ScheduledThreadPoolExecutor(1, r -> {
        Thread t = new Thread(r, "storm-ticker-" + index);
        t.setDaemon(true);
        return t;
      });
    }
  }

  private java.util.concurrent.atomic.AtomicLongArray degradedByShard;

  private void drive(Redis redis, List<SimClient> clients) throws InterruptedException {
    scheduler = new ScheduledThreadPoolExecutor(2, r -> {
      Thread t = new Thread(r, "storm-" + strategy.id);
      t.setDaemon(true);
      return t;
    });
    scheduler.setRemoveOnCancelPolicy(true);
    // one ticker per simulated process (fleet: per RedisBudgetClient; else one per 1,000 clients)
    int shardCount = strategy == Strategy.FLEET ? Math.max(1, budgetClients) : o.budgetClients;
    for (int i = 0; i < shardCount; i++) {
      shards.add(new Shard(i));
    }
    for (int i = 0; i < clients.size(); i++) {
      shards.get(i % shardCount).clients.add(clients.get(i));
    }
    degradedByShard = new java.util.concurrent.atomic.AtomicLongArray(shardCount);
    CountDownLatch done = new CountDownLatch(shardCount);
    warmStartNanos = System.nanoTime();
    startNanos = warmStartNanos + warmupNanos;
    List<ScheduledFuture<?>> tickers = new ArrayList<>();
    for (Shard shard : shards) {
      tickers.add(shard.ticker.scheduleAtFixedRate(() -> tick(shard, done), 0, TICK_NANOS, TimeUnit.NANOSECONDS));
    }
    // warm-up: healthy traffic, not recorded (JIT, connections, every client's first calls, and a
    // budget window that holds healthy traffic when the recorded run starts), then t=0
    long untilStart;
    while ((untilStart = startNanos - System.nanoTime()) > 0) {
      LockSupport.parkNanos(untilStart);
    }
    redis.resetStats();
    harnessEvals.set(0);
    // Redis command statistics once a second, on this thread
    long prevEval = 0;
    long prevAll = 0;
    long prevCpu = redis.cpuMicros();
    long prevHarness = processCpuMicros();
    long prevSample = System.nanoTime();
    for (int s = 1; s <= seconds; s++) {
      long at = startNanos + TimeUnit.SECONDS.toNanos(s);
      long wait;
      while ((wait = at - System.nanoTime()) > 0) {
        LockSupport.parkNanos(wait);
      }
      String stats = redis.commandstats();
      long cpu = redis.cpuMicros();
      long harness = processCpuMicros();
      // a starved sampler reads late: every figure of the interval is scaled to one second
      long sampledAt = System.nanoTime();
      long interval = Math.max(1, sampledAt - prevSample);
      sampleIntervalMicros[s - 1] = interval / 1000;
      prevSample = sampledAt;
      redisCpuMicros[s - 1] = perSecond(Math.max(0, cpu - prevCpu), interval);
      harnessCpuMicros[s - 1] = perSecond(Math.max(0, harness - prevHarness), interval);
      prevCpu = cpu;
      prevHarness = harness;
      long ev = scriptCalls(stats) - harnessEvals.get();
      long all = appCalls(stats);
      // a master killed takes its counts with it: never a negative second
      redisEvalsha[s - 1] = perSecond(Math.max(0, ev - prevEval), interval);
      redisAll[s - 1] = perSecond(Math.max(0, all - prevAll), interval);
      prevEval = ev;
      prevAll = all;
      if (strategy == Strategy.FLEET) {
        long sent = first[seconds + 1].sum(); // the warm-up's, which Redis counted too
        for (int i = 0; i < s; i++) {
          sent += first[i].sum();
        }
        if (sampleWindow(redis) && !windowRingGone) {
          countLag[s - 1] = sent - redisRequests();
        }
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
        System.out.printf("  t=%2ds first=%6d retries=%6d redis evalsha=%6d redis cpu=%4d ms harness cpu=%5d ms tick lag max=%6d us%n", s - 1,
            first[s - 1].sum(), retries[s - 1].sum(), redisEvalsha[s - 1], redisCpuMicros[s - 1] / 1000,
            harnessCpuMicros[s - 1] / 1000, tickLagMaxMicros[s - 1].get());
      }
    }
    done.await(5, TimeUnit.SECONDS);
    for (ScheduledFuture<?> t : tickers) {
      t.cancel(false);
    }
    for (Shard shard : shards) {
      shard.ticker.shutdown();
      shard.ticker.awaitTermination(5, TimeUnit.SECONDS);
    }
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
    evalshaCalls = scriptCalls(stats) - harnessEvals.get();
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

  private void tick(Shard shard, CountDownLatch done) {
    long now0 = System.nanoTime();
    long elapsed = now0 - startNanos;
    if (elapsed >= runNanos) {
      if (shard.count >= 0) {
        shard.count = -shard.count - 1; // finished: counted down once
        done.countDown();
      }
      return;
    }
    // a fixed-rate tick n is due at warm start + n x 2 ms; how late it starts is the harness's own lag
    long sinceWarmStart = now0 - warmStartNanos;
    long lagMicros = Math.max(0, (sinceWarmStart - shard.count * TICK_NANOS) / 1000);
    if (elapsed >= 0 && shard.recorded < shard.lags.length) {
      shard.lags[shard.recorded++] = lagMicros;
    }
    shard.count++;
    List<SimClient> clients = shard.clients;
    tickLagMaxMicros[second(elapsed)].accumulateAndGet(lagMicros, Math::max);
    // clients are paced from the warm start, so the warm-up sends at the same rate
    double elapsedSeconds = sinceWarmStart / 1e9;
    long degradedNow = 0;
    for (SimClient c : clients) {
      if (c.budget != null && c.budget.isDegraded()) {
        degradedNow++;
        if (!c.everDegraded && elapsed >= 0) {
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
    degradedByShard.set(shard.index, degradedNow);
    long now = 0;
    for (int i = 0; i < degradedByShard.length(); i++) {
      now += degradedByShard.get(i);
    }
    maxDegraded[second(elapsed)].accumulateAndGet(now, Math::max);
    tickRunMaxMicros[second(elapsed)].accumulateAndGet((System.nanoTime() - now0) / 1000, Math::max);
  }

  private boolean failing(long elapsed) {
    return elapsed >= outageStartNanos && elapsed < outageEndNanos;
  }

  /** The per-second slot: 0..seconds-1, {@code seconds} after the run, {@code seconds + 1} the warm-up (never reported). */
  private int second(long elapsed) {
    if (elapsed < 0) {
      return seconds + 1;
    }
    return (int) Math.min(seconds, elapsed / 1_000_000_000L);
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
        if (decision.reason() == BudgetDecision.Reason.GRANTED_FALLBACK) {
          fallbackGrants[second(System.nanoTime() - startNanos)].increment();
        } else if (decision.reason() == BudgetDecision.Reason.DENIED_FALLBACK) {
          fallbackDenials[second(System.nanoTime() - startNanos)].increment();
        }
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
    long due = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(delay);
    try {
      scheduler.schedule(() -> {
        try {
          long lateMicros = Math.max(0, (System.nanoTime() - due) / 1000);
          int b = 0;
          while (lateMicros >= LAG_BOUNDS_MICROS[b]) {
            b++;
          }
          timerLag[b].increment();
          timerLagMax.accumulateAndGet(lateMicros, Math::max);
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
  private boolean sampleWindow(Redis redis) {
    if (windowRingGone) {
      return false;
    }
    long[][] slots;
    try {
      slots = readWindowRing(redis.budgetNode());
    } catch (ReflectiveOperationException | LinkageError e) {
      // the design under test has no such ring (another layout): not measured
      windowRingGone = true;
      return false;
    } catch (RuntimeException e) {
      return false; // the node is failing over: sample next second
    }
    for (long[] slot : slots) {
      if (slot[0] != 0) {
        redisGrantedByBucket.merge(slot[0], slot[2], Math::max);
        redisRequestsByBucket.merge(slot[0], slot[1], Math::max);
      }
    }
    return true;
  }

  // first attempts Redis counted per bucket (the largest count read: a bucket only grows)
  private final java.util.Map<Long, Long> redisRequestsByBucket = new java.util.HashMap<>();

  /** First attempts Redis counted over the run so far (every bucket is read while it is in the ring). */
  private long redisRequests() {
    long sum = 0;
    for (long q : redisRequestsByBucket.values()) {
      sum += q;
    }
    return sum;
  }

  /**
   * First attempts the fleet had sent by the end of {@code second} and Redis had not counted when it
   * was sampled: how far Redis's counts lag the truth (-1: not read that second).
   */
  long countLag(int second) {
    return countLag[second];
  }

  private volatile boolean windowRingGone;

  /**
   * The budget's bucket ring, through client-sdk's test helper {@code WindowRing} (slots of {t, q,
   * g, ...}). Found by reflection, so that this harness also builds and runs against a design
   * without that ring; it reads with one EVAL, which is taken out of the script calls.
   */
  private long[][] readWindowRing(RedisServerProcess node) throws ReflectiveOperationException {
    Class<?> keysType = Class.forName("io.retrybudget.budget.redis.protocol.BudgetKeys");
    Object keys = keysType.getConstructor(String.class).newInstance(BUDGET_NAME);
    Class<?> ringType = Class.forName("io.retrybudget.budget.redis.protocol.WindowRing");
    Object ring = ringType.getConstructor(RedisServerProcess.class, keysType).newInstance(node, keys);
    harnessEvals.incrementAndGet();
    try {
      return (long[][]) ringType.getMethod("slots").invoke(ring);
    } catch (java.lang.reflect.InvocationTargetException e) {
      if (e.getCause() instanceof RuntimeException re) {
        if (re instanceof java.io.UncheckedIOException) {
          harnessEvals.decrementAndGet(); // never reached Redis
        } else if (!(re instanceof IllegalStateException)) {
          windowRingGone = true; // the script failed on a value of another layout
        }
        throw re;
      }
      throw e;
    }
  }

  /** Whether the grants Redis counted were read (the design under test has the v2 bucket ring). */
  boolean redisGrantedKnown() {
    return !windowRingGone;
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

  static long cpuField(String info, String name) {
    for (String l : info.split("\r?\n")) {
      if (l.startsWith(name)) {
        return Math.round(Double.parseDouble(l.substring(name.length()).trim()) * 1_000_000);
      }
    }
    return 0;
  }

  static long processCpuMicros() {
    java.lang.management.OperatingSystemMXBean os = java.lang.management.ManagementFactory.getOperatingSystemMXBean();
    if (os instanceof com.sun.management.OperatingSystemMXBean sun) {
      return sun.getProcessCpuTime() / 1000;
    }
    return 0;
  }

  static long heapUsed() {
    Runtime rt = Runtime.getRuntime();
    return rt.totalMemory() - rt.freeMemory();
  }

  static String loadAverage() {
    try {
      String[] f = java.nio.file.Files.readString(java.nio.file.Path.of("/proc/loadavg")).trim().split("\\s+");
      return f[0] + " " + f[1] + " " + f[2];
    } catch (java.io.IOException | RuntimeException e) {
      double l = java.lang.management.ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage();
      return l < 0 ? "?" : String.format(java.util.Locale.ROOT, "%.2f", l);
    }
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

  long redisCpuMicros(int second) {
    return redisCpuMicros[second];
  }

  static long perSecond(long delta, long intervalNanos) {
    return Math.round(delta * 1e9 / intervalNanos);
  }

  long sampleIntervalMicros(int second) {
    return sampleIntervalMicros[second];
  }

  long harnessCpuMicros(int second) {
    return harnessCpuMicros[second];
  }

  long tickLagMaxMicros(int second) {
    return tickLagMaxMicros[second].get();
  }

  long tickRunMaxMicros(int second) {
    return tickRunMaxMicros[second].get();
  }

  long fallbackGrants(int second) {
    return fallbackGrants[second].sum();
  }

  long fallbackDenials(int second) {
    return fallbackDenials[second].sum();
  }

  /** Percentiles of how late the 2 ms ticks started: p50 / p99 / p99.9 / max, in microseconds. */
  long[] tickLagPercentiles() {
    int n = 0;
    for (Shard shard : shards) {
      n += Math.min(ticksOf(shard), shard.lags.length);
    }
    long[] sorted = new long[n];
    int at = 0;
    for (Shard shard : shards) {
      int k = Math.min(ticksOf(shard), shard.lags.length);
      System.arraycopy(shard.lags, 0, sorted, at, k);
      at += k;
    }
    java.util.Arrays.sort(sorted);
    if (n == 0) {
      return new long[4];
    }
    return new long[] {sorted[(int) (0.5 * (n - 1))], sorted[(int) (0.99 * (n - 1))], sorted[(int) (0.999 * (n - 1))], sorted[n - 1]};
  }

  int ticks() {
    int n = 0;
    for (Shard shard : shards) {
      n += ticksOf(shard);
    }
    return n;
  }

  int tickers() {
    return shards.size();
  }

  private static int ticksOf(Shard shard) {
    return shard.recorded;
  }

  String timerLagHistogram() {
    StringBuilder sb = new StringBuilder();
    long prev = 0;
    for (int i = 0; i < LAG_BOUNDS_MICROS.length; i++) {
      long bound = LAG_BOUNDS_MICROS[i];
      String range = bound == Long.MAX_VALUE ? ">=" + prev / 1000.0 + "ms" : "<" + (bound < 1000 ? bound + "us" : bound / 1000 + "ms");
      sb.append(range).append(':').append(timerLag[i].sum()).append(' ');
      prev = bound;
    }
    return sb.toString().trim() + " (max " + timerLagMax.get() / 1000.0 + " ms)";
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
