package io.retrybudget.bench.relay;

import io.retrybudget.budget.redis.protocol.BudgetKeys;
import io.retrybudget.budget.redis.protocol.WindowRing;
import io.retrybudget.testing.CommandStats;
import io.retrybudget.testing.RedisServerProcess;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * One design of the real relay run: a fresh redis-server, for {@code relay} the relay processes (the
 * coordinator's shaded jar, {@code COORDINATOR_MODE=relay}, as an operator runs it), the client JVMs
 * ({@link RelayClientMain}), released together by one {@code GO}. Once a second from the warm start on,
 * this process reads Redis's bucket ring (the first attempts it has counted), and in the recorded
 * seconds its script calls ({@code INFO commandstats}: EVALSHA and EVAL, less this harness's own ring
 * reads) and the CPU time of Redis and of every relay.
 */
final class RealRelayRun {
  private final RealRelayOptions o;
  private final String design;
  private final int seconds;
  // per recorded second, merged over the client JVMs
  final long[] scheduled;
  final long[] issued;
  final long[] lateMaxMs;
  final long[] asks;
  final long[] grants;
  final long[] denied;
  final long[] fallback;
  final long[] errors;
  final long[] clientCalls;
  final long[] waited; // asks not decided when acquire returned (each a round trip)
  final long[] degraded;
  final long[] clientCpuMs;
  final LatencyHistogram[] latency;
  // per recorded second, read by this process
  final long[] redisCalls;
  final long[] redisCpuMs;
  final long[] relayCpuMs;
  final double[] lagSeconds;
  final double[] sampleAtMs; // ms since the warm start at which each recorded second was read
  final long[] countedAt;
  /** Redis's count of first attempts once every client had closed (flushing) and the relays had sent theirs. */
  long countedAtEnd;
  /** First attempts the fleet made in the whole run, warm-up included. */
  long madeTotal; // first attempts Redis had counted at each of those reads
  String loadBefore = "";
  String loadAfter = "";
  long[] madeBy10Ms = new long[0];
  private long harnessEvals;
  private final Map<Long, Long> requestsByBucket = new HashMap<>();
  private final List<long[]> madeByJvm = new ArrayList<>();

  RealRelayRun(RealRelayOptions o, String design) {
    this.o = o;
    this.design = design;
    this.seconds = o.seconds();
    scheduled = new long[seconds];
    issued = new long[seconds];
    lateMaxMs = new long[seconds];
    asks = new long[seconds];
    grants = new long[seconds];
    denied = new long[seconds];
    fallback = new long[seconds];
    errors = new long[seconds];
    clientCalls = new long[seconds];
    waited = new long[seconds];
    degraded = new long[seconds];
    clientCpuMs = new long[seconds];
    latency = new LatencyHistogram[seconds];
    for (int s = 0; s < seconds; s++) {
      latency[s] = new LatencyHistogram();
    }
    redisCalls = new long[seconds];
    redisCpuMs = new long[seconds];
    relayCpuMs = new long[seconds];
    lagSeconds = new double[seconds];
    sampleAtMs = new double[seconds];
    countedAt = new long[seconds];
  }

  String design() {
    return design;
  }

  RealRelayOptions options() {
    return o;
  }

  RealRelayRun run() throws Exception {
    Path work = o.workDir().resolve(design);
    Files.createDirectories(work);
    loadBefore = RealRelayStorm.loadAverage();
    System.out.printf("%n== %s: %,d clients in %d JVMs%s; load %s%n", design, o.clients(), o.jvms(),
        design.equals("relay") ? " through " + o.relays() + " relays" : " calling Redis directly", loadBefore);
    List<ChildProcess> relays = new ArrayList<>();
    List<ChildProcess> clients = new ArrayList<>();
    try (RedisServerProcess redis = RedisServerProcess.start()) {
      List<String> targets = new ArrayList<>();
      if (design.equals("relay")) {
        for (int r = 0; r < o.relays(); r++) {
          int port = RedisServerProcess.freePort();
          relays.add(startRelay(r, port, redis, work));
          targets.add("redis://127.0.0.1:" + port);
        }
      } else {
        targets.add(redis.uri());
      }
      // Lettuce logs every command it refuses at 4,096 in flight with a stack trace, on the connection's
      // event loop: a client JVM of 5,000 budgets that falls behind then reads its replies slower still
      // (all its budgets stayed degraded, seen at load 15-20). Its protocol logger is kept to SEVERE.
      Path logging = work.resolve("client-logging.properties");
      Files.writeString(logging, "handlers=java.util.logging.ConsoleHandler\n.level=INFO\n"
          + "io.lettuce.core.protocol.level=SEVERE\n");
      for (int j = 0; j < o.jvms(); j++) {
        List<String> jvmOptions = new ArrayList<>(List.of("-Xms256m", "-Xmx" + o.clientHeap(), "-XX:+UseSerialGC",
            "-Xlog:gc:file=" + work.resolve("client-" + j + "-gc.log").toAbsolutePath() + ":time",
            "-Djava.awt.headless=true", "-Djava.util.logging.config.file=" + logging.toAbsolutePath()));
        jvmOptions.addAll(o.profileOptions(design, "client-" + j));
        clients.add(ChildProcess.jvm("client-" + j, work.resolve("client-" + j + ".log"), jvmOptions,
            RelayClientMain.class, List.of(work.resolve("client-" + j).toString(), targets.get(j % targets.size()),
                Integer.toString(o.clientsOf(j)), Integer.toString(o.warmupSeconds()), Integer.toString(o.healthySeconds()),
                Integer.toString(o.outageSeconds()), Integer.toString(o.afterSeconds()),
                Long.toString(o.callTimeoutMillis()), Integer.toString(j + 1))));
      }
      for (ChildProcess c : clients) {
        c.await("LOADED", 180_000);
      }
      long warmStart = System.currentTimeMillis() + 2_000;
      for (ChildProcess c : clients) {
        c.send("GO " + warmStart);
      }
      sample(redis, relays, warmStart);
      loadAfter = RealRelayStorm.loadAverage();
      for (ChildProcess c : clients) {
        int code = c.waitFor(120_000);
        if (code != 0) {
          throw new IllegalStateException("a client JVM exited with " + code + " (logs in " + work + ")");
        }
      }
      // every budget flushed its last counts as it closed; the relays send theirs within 500 ms: what
      // Redis has not counted now, it never will (lost with calls that failed or timed out)
      Thread.sleep(1_500);
      readRing(new WindowRing(redis, new BudgetKeys(RelayClientMain.BUDGET)));
      countedAtEnd = counted();
      for (int j = 0; j < o.jvms(); j++) {
        read(work.resolve("client-" + j));
      }
    } finally {
      clients.forEach(ChildProcess::close);
      relays.forEach(ChildProcess::close);
    }
    computeLag();
    madeTotal = madeBy10Ms.length == 0 ? 0 : madeBy10Ms[madeBy10Ms.length - 1];
    return this;
  }

  /**
   * Starts relay {@code r} and waits until it answers PING. A relay that exits first is started again,
   * twice at most: at load 30 its start-up check of Redis (1 s) can time out.
   */
  private ChildProcess startRelay(int r, int port, RedisServerProcess redis, Path work) throws Exception {
    Map<String, String> env = Map.of("REDIS_URL", redis.uri(), "COORDINATOR_MODE", "relay",
        "COORDINATOR_RELAY_PORT", Integer.toString(port), "COORDINATOR_RELAY_HOST", "127.0.0.1",
        "COORDINATOR_RELAY_CLIENT_CALLS", Integer.toString(o.relayClientCalls()));
    for (int attempt = 1; ; attempt++) {
      Path log = work.resolve("relay-" + r + (attempt == 1 ? "" : "-start" + attempt) + ".log");
      List<String> command = new ArrayList<>(List.of(ChildProcess.java(), "-Xms64m", "-Xmx" + o.relayHeap(),
          "-XX:+UseSerialGC", "-Xlog:gc:file=" + work.resolve("relay-" + r + "-gc.log").toAbsolutePath() + ":time"));
      command.addAll(o.profileOptions(design, "relay-" + r));
      command.addAll(List.of("-jar", o.coordinatorJar().toString()));
      ChildProcess relay = new ChildProcess("relay-" + r, log, command, env);
      try {
        if (relay.answersPing(port, 60_000, log)) {
          return relay;
        }
      } catch (RuntimeException e) {
        relay.close();
        throw new IllegalStateException("relay " + r + ": " + e.getMessage(), e);
      }
      relay.close();
      if (attempt == 3) {
        throw new IllegalStateException("relay " + r + " exited at start three times (see " + log + ")");
      }
      System.out.println("  relay " + r + " exited at start (see " + log + "): starting it again");
    }
  }

  /** Once a second from the warm start to the record's end: Redis's ring; in the record, calls and CPU too. */
  private void sample(RedisServerProcess redis, List<ChildProcess> relays, long warmStartEpochMillis) {
    long warmStartNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(warmStartEpochMillis - System.currentTimeMillis());
    WindowRing ring = new WindowRing(redis, new BudgetKeys(RelayClientMain.BUDGET));
    int warmup = o.warmupSeconds();
    long prevCalls = 0;
    long prevRedisCpu = 0;
    long prevRelayCpu = 0;
    for (int k = 0; k <= warmup + seconds; k++) {
      LockSupport.parkNanos(warmStartNanos + TimeUnit.SECONDS.toNanos(k) - System.nanoTime());
      double atMs = (System.nanoTime() - warmStartNanos) / 1e6;
      readRing(ring);
      long calls = scriptCalls(redis) - harnessEvals;
      long redisCpu = redisCpuMs(redis);
      long relayCpu = 0;
      for (ChildProcess r : relays) {
        relayCpu += Math.max(0, r.cpuMillis());
      }
      int s = k - warmup - 1; // the recorded second that ended at this read
      if (s >= 0) {
        redisCalls[s] = calls - prevCalls;
        redisCpuMs[s] = redisCpu - prevRedisCpu;
        relayCpuMs[s] = relayCpu - prevRelayCpu;
        sampleAtMs[s] = atMs;
        countedAt[s] = counted();
        if (s % 5 == 4) {
          System.out.printf("  t=%2d redis calls=%,d redis cpu=%d ms relays cpu=%d ms counted=%,d%n", s, redisCalls[s],
              redisCpuMs[s], relayCpuMs[s], countedAt[s]);
        }
      }
      prevCalls = calls;
      prevRedisCpu = redisCpu;
      prevRelayCpu = relayCpu;
    }
  }

  private void readRing(WindowRing ring) {
    harnessEvals++;
    for (long[] slot : ring.slots()) {
      if (slot[WindowRing.T] != 0) {
        requestsByBucket.merge(slot[WindowRing.T], slot[WindowRing.Q], Math::max);
      }
    }
  }

  private long counted() {
    long sum = 0;
    for (long q : requestsByBucket.values()) {
      sum += q;
    }
    return sum;
  }

  private static long scriptCalls(RedisServerProcess redis) {
    String stats = String.valueOf(redis.call("INFO", "commandstats"));
    return CommandStats.calls(stats, "evalsha") + CommandStats.calls(stats, "eval");
  }

  private static long redisCpuMs(RedisServerProcess redis) {
    long ms = 0;
    for (String l : String.valueOf(redis.call("INFO", "cpu")).split("\r?\n")) {
      if (l.startsWith("used_cpu_sys:") || l.startsWith("used_cpu_user:")) {
        ms += Math.round(Double.parseDouble(l.substring(l.indexOf(':') + 1).trim()) * 1000);
      }
    }
    return ms;
  }

  /** Adds one client JVM's files: its seconds and its first attempts made by each 10 ms. */
  private void read(Path prefix) throws IOException {
    List<String> lines = Files.readAllLines(Path.of(prefix + ".csv"));
    for (String line : lines.subList(1, lines.size())) {
      String[] f = line.split(",", -1);
      int s = Integer.parseInt(f[0]);
      scheduled[s] += Long.parseLong(f[1]);
      issued[s] += Long.parseLong(f[2]);
      lateMaxMs[s] = Math.max(lateMaxMs[s], Long.parseLong(f[3]));
      asks[s] += Long.parseLong(f[4]);
      grants[s] += Long.parseLong(f[5]);
      denied[s] += Long.parseLong(f[6]);
      fallback[s] += Long.parseLong(f[7]);
      errors[s] += Long.parseLong(f[8]);
      clientCalls[s] += Long.parseLong(f[10]);
      degraded[s] += Long.parseLong(f[11]);
      clientCpuMs[s] += Long.parseLong(f[12]);
      latency[s].decodeInto(f[13]);
      waited[s] += Long.parseLong(f[14]);
    }
    String[] f = Files.readString(Path.of(prefix + "-made.csv")).trim().split(",");
    long[] made = new long[f.length];
    for (int i = 0; i < f.length; i++) {
      made[i] = Long.parseLong(f[i]);
    }
    madeByJvm.add(made);
  }

  /** The fleet's first attempts made by each 10 ms: the JVMs' sums (a JVM whose record ended keeps its count). */
  private void mergeMade() {
    int n = madeByJvm.stream().mapToInt(a -> a.length).max().orElse(0);
    madeBy10Ms = new long[n];
    for (long[] made : madeByJvm) {
      for (int i = 0; i < n; i++) {
        madeBy10Ms[i] += made.length == 0 ? 0 : made[Math.min(i, made.length - 1)];
      }
    }
  }

  private void computeLag() {
    mergeMade();
    for (int s = 0; s < seconds; s++) {
      lagSeconds[s] = lagSeconds(madeBy10Ms, sampleAtMs[s], countedAt[s]);
    }
  }

  /**
   * How far Redis's count lagged at a read {@code atMs} after the warm start, when it had counted
   * {@code counted} first attempts and the fleet had made {@code madeBy10Ms[i]} by {@code 10 i} ms: the
   * read's time less the time by which the fleet had made as many as Redis counted (in steps of 10 ms);
   * 0 when Redis had counted all made by then.
   */
  static double lagSeconds(long[] madeBy10Ms, double atMs, long counted) {
    if (madeBy10Ms.length == 0) {
      return 0;
    }
    int at = (int) Math.min(madeBy10Ms.length - 1, Math.floor(atMs / 10));
    if (at < 0 || madeBy10Ms[at] <= counted) {
      return 0;
    }
    int lo = 0;
    int hi = at;
    while (lo < hi) {
      int mid = (lo + hi) >>> 1;
      if (madeBy10Ms[mid] >= counted) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    return Math.max(0, (atMs - lo * 10.0) / 1000.0);
  }
}
