package io.retrybudget.bench.relay;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.budget.VirtualFleet;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import io.retrybudget.testing.RedisServerProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * One permit decision's round trip in isolation (bench/README.md, "Relay tier, real processes"): one
 * budget of the SDK's {@link RedisBudgetClient} in this JVM, one relay process (the coordinator's shaded
 * jar, {@code COORDINATOR_MODE=relay}) or Redis itself, one redis-server; permit requests one at a
 * time, {@code --gap-us} apart, each a round trip (a budget with a floor far above the asks: every ask
 * goes out for one permit and is granted). The asks go round {@code --budgets} budgets of one name (by
 * default enough that each asks once in 4 s, more than {@code AskAhead}'s 3 s: a relay's client asking
 * more often decides from what it holds, without a round trip). Prints the round trips' latency
 * (acquire to answer; a decision answered when {@code acquire} returned is counted as local, not
 * timed) and the CPU this JVM and the relay spent per decision, after {@code --warmup-calls} not
 * recorded. What the storm's p99 adds to this is the machine's scheduling, not the protocol.
 *
 * <p>Options: {@code --coordinator-jar <jar> --target relay|direct --calls 20000 --warmup-calls 20000
 * --gap-us 1000 --budgets <n> --work-dir bench/target/relay-round-trip}.
 */
public final class RelayRoundTrip {
  private RelayRoundTrip() {}

  public static void main(String[] args) throws Exception {
    Path jar = null;
    String target = "relay";
    int calls = 20_000;
    int warmup = 20_000;
    long gapMicros = 1_000;
    int budgets = -1;
    Path work = Path.of("bench/target/relay-round-trip");
    for (int i = 0; i + 1 < args.length; i += 2) {
      String v = args[i + 1];
      switch (args[i]) {
        case "--coordinator-jar" -> jar = Path.of(v);
        case "--target" -> target = v;
        case "--calls" -> calls = Integer.parseInt(v);
        case "--warmup-calls" -> warmup = Integer.parseInt(v);
        case "--gap-us" -> gapMicros = Long.parseLong(v);
        case "--budgets" -> budgets = Integer.parseInt(v);
        case "--work-dir" -> work = Path.of(v);
        default -> throw new IllegalArgumentException("unknown option " + args[i]);
      }
    }
    if (!target.equals("relay") && !target.equals("direct")) {
      throw new IllegalArgumentException("--target takes relay or direct, was " + target);
    }
    if (target.equals("relay") && (jar == null || !Files.isRegularFile(jar))) {
      throw new IllegalArgumentException("--coordinator-jar must name the coordinator's shaded jar, was " + jar);
    }
    if (budgets < 0) {
      budgets = (int) (4 * VirtualFleet.ASK_AHEAD_MILLIS * 1000 / 3 / Math.max(1, gapMicros)) + 1; // each asks once in 4 s
    }
    Files.createDirectories(work);
    String load = RealRelayStorm.loadAverage();
    int relayPort = RedisServerProcess.freePort();
    try (RedisServerProcess redis = RedisServerProcess.start();
         ChildProcess relay = target.equals("relay") ? startRelay(jar, relayPort, redis, work) : null) {
      String uri = relay == null ? redis.uri() : "redis://127.0.0.1:" + relayPort;
      RedisBudgetClient client = RedisBudgetClient.builder(RedisConnectionOptions.standalone(uri).build())
          .callTimeout(Duration.ofMillis(250)).build();
      // one client, a floor far above its asks: every ask is a round trip for one permit, granted
      BudgetConfig config = BudgetConfig.builder("round-trip").ratio(1.0).minRetriesPerSecond(1_000_000)
          .maxCallsPerSecond(1_000_000).windowSeconds(10).build();
      RetryBudget[] budget = new RetryBudget[Math.max(1, budgets)];
      for (int i = 0; i < budget.length; i++) {
        budget[i] = client.budget(config);
        LockSupport.parkNanos(1_000_000); // one a millisecond: their first calls do not all go at once
      }
      run(budget, warmup, gapMicros, null);
      LatencyHistogram h = new LatencyHistogram();
      long cpu0 = cpuNanos();
      long relayCpu0 = relay == null ? 0 : relay.cpuMillis();
      long t0 = System.nanoTime();
      long[] counted = run(budget, calls, gapMicros, h);
      long wall = System.nanoTime() - t0;
      long cpu = cpuNanos() - cpu0;
      long relayCpu = relay == null ? 0 : relay.cpuMillis() - relayCpu0;
      client.close();
      System.out.printf("%s: %,d asks %d µs apart over %,d budgets, %,d round trips (%,d decided locally); latency µs p50 %d, p90 %d, "
              + "p99 %d, p99.9 %d, max %d; this JVM's CPU %.1f µs an ask; the relay's %.1f µs an answer; "
              + "%.1f s; load before %s, after %s%n", target, calls, gapMicros, budget.length, counted[0], counted[1],
          h.percentile(0.5), h.percentile(0.9), h.percentile(0.99), h.percentile(0.999), h.percentile(1.0),
          cpu / 1000.0 / calls, relay == null ? 0.0 : relayCpu * 1000.0 / Math.max(1, counted[0]), wall / 1e9, load,
          RealRelayStorm.loadAverage());
    }
    System.exit(0);
  }

  /** {@code n} asks one at a time, round the budgets; returns the round trips and the decisions made locally. */
  private static long[] run(RetryBudget[] budgets, int n, long gapMicros, LatencyHistogram h) {
    long remote = 0;
    long local = 0;
    long next = System.nanoTime();
    for (int i = 0; i < n; i++) {
      next += gapMicros * 1000;
      LockSupport.parkNanos(next - System.nanoTime());
      long t0 = System.nanoTime();
      java.util.concurrent.CompletableFuture<BudgetDecision> f = budgets[i % budgets.length].acquire().toCompletableFuture();
      boolean roundTrip = !f.isDone();
      BudgetDecision d = f.join();
      long micros = (System.nanoTime() - t0) / 1000;
      roundTrip &= d.reason() == BudgetDecision.Reason.GRANTED || d.reason() == BudgetDecision.Reason.DENIED_EXHAUSTED;
      if (roundTrip) {
        remote++;
        if (h != null) {
          h.record(micros);
        }
      } else {
        local++;
      }
    }
    return new long[] {remote, local};
  }

  private static ChildProcess startRelay(Path jar, int relayPort, RedisServerProcess redis, Path work) throws Exception {
    ChildProcess relay = new ChildProcess("relay", work.resolve("relay.log"), List.of(ChildProcess.java(), "-Xms64m",
        "-Xmx384m", "-XX:+UseSerialGC", "-jar", jar.toString()), Map.of("REDIS_URL", redis.uri(), "COORDINATOR_MODE",
        "relay", "COORDINATOR_RELAY_PORT", Integer.toString(relayPort), "COORDINATOR_RELAY_HOST", "127.0.0.1"));
    try {
      if (relay.answersPing(relayPort, 60_000, work.resolve("relay.log"))) {
        return relay;
      }
    } catch (RuntimeException e) {
      relay.close();
      throw e;
    }
    relay.close();
    throw new IllegalStateException("the relay exited at start (see " + work.resolve("relay.log") + ")");
  }

  private static long cpuNanos() {
    return ((com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean())
        .getProcessCpuTime();
  }
}
