package io.retrybudget.bench.relay;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.budget.VirtualFleet;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.SplittableRandom;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;

/**
 * One client process of the real relay run ({@link RealRelayStorm}): {@code clients} clients of budget
 * {@value #BUDGET}, each a {@link RetryBudget} of its own (own counts, flush timer and client id) from
 * this process's one {@link RedisBudgetClient}, whose one connection goes to {@code target} (a relay, or
 * Redis itself), as a service's process would hold it. Each client makes {@value #FIRST_PER_SECOND}
 * first attempts a second at its own phase; in the outage every attempt fails and asks the budget for
 * a retry ({@value #MAX_ATTEMPTS} attempts a call at most, a granted retry 10-100 ms later).
 *
 * <p>Prints {@code LOADED} once every budget is built and the connection is up, waits for {@code GO
 * <warmStartEpochMillis>} on stdin, sends healthy traffic for the warm-up (not recorded; one of 40 s or
 * more holds a 10 s storm that ends 20 s before the record, {@link #WARM_STORM_MS}), then records
 * every second: first attempts scheduled and issued (whether this process kept pace), retries granted,
 * permit decisions and their latency (acquire to answer), script calls its budgets sent, CPU. Writes
 * {@code <prefix>.csv} and {@code <prefix>-made.csv} (first attempts made by each 10 ms since the warm
 * start, for Redis's count lag), prints {@code DONE} and exits. Arguments: {@code <prefix> <target URI>
 * <clients> <warmup s> <healthy s> <outage s> <after s> <call timeout ms> <seed>}.
 */
public final class RelayClientMain {
  static final String BUDGET = "storm";
  static final int FIRST_PER_SECOND = 2;
  static final int MAX_ATTEMPTS = 3;
  static final String COLUMNS = "second,scheduled,issued,late_max_ms,asks,grants,denied,fallback,errors,"
      + "retries_sent,calls,degraded,cpu_ms,latency,waited";
  private static final int PERIOD_MS = 1000 / FIRST_PER_SECOND;
  private static final long TICK_MICROS = 2_000;
  /**
   * A warm-up of 40 s or more holds a storm of this long, as the outage, ending {@link
   * #WARM_STORM_QUIET_MS} before the record: the permit path (asks, leases, refusals, the retries'
   * timer) is compiled before the outage instead of in its first seconds. Without it, at 20,000 clients
   * the client JVMs' CPU went from about 550 to 1,540 ms a second at the outage's onset, decisions
   * waited past the 250 ms call timeout and 4,526 budgets decided from their fallback for a while.
   */
  static final long WARM_STORM_MS = 10_000;
  /** Healthy time between the warm-up's storm and the record: the 10 s window forgets the storm. */
  static final long WARM_STORM_QUIET_MS = 20_000;

  private final RetryBudget[] budgets;
  private final int[][] byPhase;
  private final long warmupMs;
  private final long outageFromMs;
  private final long outageToMs;
  private final long warmStormFromMs; // the warm-up's storm (none in a warm-up under 40 s)
  private final long warmStormToMs;
  private final long endMs;
  private final int seconds;
  // per recorded second (index seconds: after the record)
  private final AtomicLongArray scheduled;
  private final AtomicLongArray issued;
  private final AtomicLongArray lateMax;
  private final AtomicLongArray asks;
  private final AtomicLongArray grants;
  private final AtomicLongArray denied;
  private final AtomicLongArray fallback;
  private final AtomicLongArray errors;
  private final AtomicLongArray retriesSent;
  private final AtomicLongArray waited; // asks not decided when acquire returned: a round trip
  private final long[] calls;
  private final long[] degraded;
  private final long[] cpuMs;
  private final LatencyHistogram[] latency;
  private final long[] madeAt; // cumulative first attempts by each 10 ms since the warm start; ticker only
  private long made; // ticker only
  private long nextDueMs; // ticker only
  private int madeFilled; // ticker only
  private volatile long warmStartNanos;
  private final ScheduledExecutorService retryTimer = Executors.newSingleThreadScheduledExecutor(daemon("retries"));

  private RelayClientMain(RetryBudget[] budgets, long seed, int warmup, int healthy, int outage, int after) {
    this.budgets = budgets;
    this.warmupMs = warmup * 1000L;
    this.outageFromMs = warmupMs + healthy * 1000L;
    this.outageToMs = outageFromMs + outage * 1000L;
    this.warmStormToMs = warmupMs >= 40_000 ? warmupMs - WARM_STORM_QUIET_MS : 0;
    this.warmStormFromMs = warmupMs >= 40_000 ? warmStormToMs - WARM_STORM_MS : 0;
    this.seconds = healthy + outage + after;
    this.endMs = warmupMs + seconds * 1000L;
    SplittableRandom random = new SplittableRandom(seed);
    int[] phase = new int[budgets.length];
    int[] count = new int[PERIOD_MS];
    for (int i = 0; i < budgets.length; i++) {
      phase[i] = random.nextInt(PERIOD_MS);
      count[phase[i]]++;
    }
    this.byPhase = new int[PERIOD_MS][];
    for (int p = 0; p < PERIOD_MS; p++) {
      byPhase[p] = new int[count[p]];
      count[p] = 0;
    }
    for (int i = 0; i < budgets.length; i++) {
      byPhase[phase[i]][count[phase[i]]++] = i;
    }
    int n = seconds + 1;
    scheduled = new AtomicLongArray(n);
    issued = new AtomicLongArray(n);
    lateMax = new AtomicLongArray(n);
    asks = new AtomicLongArray(n);
    grants = new AtomicLongArray(n);
    denied = new AtomicLongArray(n);
    fallback = new AtomicLongArray(n);
    errors = new AtomicLongArray(n);
    retriesSent = new AtomicLongArray(n);
    waited = new AtomicLongArray(n);
    calls = new long[n];
    degraded = new long[n];
    cpuMs = new long[n];
    latency = new LatencyHistogram[n];
    for (int s = 0; s < n; s++) {
      latency[s] = new LatencyHistogram();
    }
    madeAt = new long[(int) (endMs / 10) + 300];
  }

  public static void main(String[] args) throws Exception {
    Path prefix = Path.of(args[0]);
    String target = args[1];
    int clients = Integer.parseInt(args[2]);
    int warmup = Integer.parseInt(args[3]);
    int healthy = Integer.parseInt(args[4]);
    int outage = Integer.parseInt(args[5]);
    int after = Integer.parseInt(args[6]);
    long callTimeout = Long.parseLong(args[7]);
    long seed = Long.parseLong(args[8]);
    RedisBudgetClient client = RedisBudgetClient.builder(RedisConnectionOptions.standalone(target).build())
        .callTimeout(Duration.ofMillis(callTimeout)).build();
    BudgetConfig config = BudgetConfig.builder(BUDGET).ratio(0.1).minRetriesPerSecond(10).windowSeconds(10)
        .maxCallsPerSecond(2_000).build();
    RetryBudget[] budgets = new RetryBudget[clients];
    // processes do not start every budget's timer in the same millisecond: creation spread over 0.5 s
    long gap = TimeUnit.MILLISECONDS.toNanos(500) / clients;
    long next = System.nanoTime();
    for (int i = 0; i < clients; i++) {
      budgets[i] = client.budget(config);
      next += gap;
      LockSupport.parkNanos(next - System.nanoTime());
    }
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (client.isDegraded() && System.nanoTime() < until) {
      Thread.sleep(20);
    }
    System.out.println(client.isDegraded() ? "WARNING: still degraded 30 s after start" : "connected to " + target);
    System.out.println("LOADED");
    System.out.flush();
    String go = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
    if (go == null || !go.startsWith("GO ")) {
      throw new IllegalStateException("expected GO <warmStartEpochMillis> on stdin, got " + go);
    }
    RelayClientMain run = new RelayClientMain(budgets, seed, warmup, healthy, outage, after);
    run.run(Long.parseLong(go.substring(3).trim()));
    run.write(prefix);
    System.out.println("DONE");
    System.out.flush();
    for (RetryBudget b : budgets) {
      b.close();
    }
    client.close();
    System.exit(0);
  }

  private void run(long warmStartEpochMillis) throws InterruptedException {
    warmStartNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(warmStartEpochMillis - System.currentTimeMillis());
    LockSupport.parkNanos(warmStartNanos - System.nanoTime());
    ScheduledExecutorService ticker = Executors.newSingleThreadScheduledExecutor(daemon("ticker"));
    ticker.scheduleAtFixedRate(this::tick, 0, TICK_MICROS, TimeUnit.MICROSECONDS);
    // once a second of the record, on this thread: calls sent, budgets degraded, CPU
    LockSupport.parkNanos(warmStartNanos + TimeUnit.MILLISECONDS.toNanos(warmupMs) - System.nanoTime());
    long prevCalls = callsSent();
    long prevCpu = cpuNanos();
    for (int s = 0; s < seconds; s++) {
      LockSupport.parkNanos(warmStartNanos + TimeUnit.MILLISECONDS.toNanos(warmupMs + (s + 1) * 1000L) - System.nanoTime());
      long c = callsSent();
      long cpu = cpuNanos();
      calls[s] = c - prevCalls;
      cpuMs[s] = (cpu - prevCpu) / 1_000_000;
      prevCalls = c;
      prevCpu = cpu;
      long d = 0;
      for (RetryBudget b : budgets) {
        d += b.isDegraded() ? 1 : 0;
      }
      degraded[s] = d;
      if (s % 5 == 4) {
        System.out.printf("t=%d issued=%d/%d asks=%d grants=%d calls=%d degraded=%d cpu=%d ms late max=%d ms%n", s,
            issued.get(s), scheduled.get(s), asks.get(s), grants.get(s), calls[s], d, cpuMs[s], lateMax.get(s));
      }
    }
    ticker.shutdown();
    ticker.awaitTermination(5, TimeUnit.SECONDS);
    Thread.sleep(500); // the last retries' decisions
    retryTimer.shutdownNow();
  }

  private long elapsedMs() {
    return (System.nanoTime() - warmStartNanos) / 1_000_000;
  }

  /** The recorded second of {@code ms} since the warm start: -1 in the warm-up, {@code seconds} after. */
  private int second(long ms) {
    return ms < warmupMs ? -1 : (int) Math.min(seconds, (ms - warmupMs) / 1000);
  }

  private boolean failing(long ms) {
    return (ms >= outageFromMs && ms < outageToMs) || (ms >= warmStormFromMs && ms < warmStormToMs);
  }

  private void tick() {
    long now = elapsedMs();
    while (nextDueMs <= now && nextDueMs < endMs) {
      int dueSecond = second(nextDueMs);
      int sec = second(now);
      for (int i : byPhase[(int) (nextDueMs % PERIOD_MS)]) {
        budgets[i].recordFirstAttempt();
        made++;
        if (dueSecond >= 0) {
          scheduled.incrementAndGet(dueSecond);
        }
        if (sec >= 0) {
          issued.incrementAndGet(sec);
        }
        if (failing(now)) {
          ask(i, 1);
        }
      }
      if (sec >= 0 && byPhase[(int) (nextDueMs % PERIOD_MS)].length > 0) {
        long late = now - nextDueMs;
        if (late > lateMax.get(sec)) {
          lateMax.set(sec, late);
        }
      }
      nextDueMs++;
    }
    int slot = (int) Math.min(madeAt.length - 1, now / 10);
    while (madeFilled <= slot) {
      madeAt[madeFilled++] = made;
    }
  }

  /** Attempt {@code attempt} of client {@code i} failed: ask for a retry if the call has attempts left. */
  private void ask(int i, int attempt) {
    if (attempt >= MAX_ATTEMPTS) {
      return;
    }
    int asked = second(elapsedMs());
    if (asked >= 0) {
      asks.incrementAndGet(asked);
    }
    long t0 = System.nanoTime();
    java.util.concurrent.CompletableFuture<BudgetDecision> decision = budgets[i].acquire().toCompletableFuture();
    if (asked >= 0 && !decision.isDone()) {
      waited.incrementAndGet(asked);
    }
    decision.whenComplete((d, e) -> {
      long t1 = System.nanoTime();
      int s = second((t1 - warmStartNanos) / 1_000_000);
      if (s < 0) {
        return;
      }
      latency[s].record((t1 - t0) / 1000);
      if (e != null) {
        errors.incrementAndGet(s);
        return;
      }
      boolean fb = d.reason() == BudgetDecision.Reason.GRANTED_FALLBACK || d.reason() == BudgetDecision.Reason.DENIED_FALLBACK;
      if (fb) {
        fallback.incrementAndGet(s);
      }
      if (!d.granted()) {
        denied.incrementAndGet(s);
        return;
      }
      grants.incrementAndGet(s);
      try {
        retryTimer.schedule(() -> {
          long now = elapsedMs();
          int r = second(now);
          if (r >= 0) {
            retriesSent.incrementAndGet(r);
          }
          if (failing(now)) {
            ask(i, attempt + 1);
          }
        }, 10 + ThreadLocalRandom.current().nextInt(91), TimeUnit.MILLISECONDS);
      } catch (java.util.concurrent.RejectedExecutionException over) {
        // the run is over
      }
    });
  }

  private long callsSent() {
    long n = 0;
    for (RetryBudget b : budgets) {
      n += VirtualFleet.callsSent(b);
    }
    return n;
  }

  private static long cpuNanos() {
    return ((com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean())
        .getProcessCpuTime();
  }

  private void write(Path prefix) throws java.io.IOException {
    try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(Path.of(prefix + ".csv")))) {
      w.println(COLUMNS);
      for (int s = 0; s < seconds; s++) {
        w.printf("%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%s,%d%n", s, scheduled.get(s), issued.get(s), lateMax.get(s),
            asks.get(s), grants.get(s), denied.get(s), fallback.get(s), errors.get(s), retriesSent.get(s), calls[s],
            degraded[s], cpuMs[s], latency[s].encode(), waited.get(s));
      }
    }
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < madeFilled; i++) {
      b.append(i == 0 ? "" : ",").append(madeAt[i]);
    }
    Files.writeString(Path.of(prefix + "-made.csv"), b.append('\n'));
  }

  private static ThreadFactory daemon(String name) {
    return r -> {
      Thread t = new Thread(r, name);
      t.setDaemon(true);
      return t;
    };
  }
}
