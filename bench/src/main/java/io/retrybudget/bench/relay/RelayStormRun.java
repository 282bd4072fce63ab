package io.retrybudget.bench.relay;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.budget.VirtualFleet;
import io.retrybudget.budget.VirtualRedis;
import io.retrybudget.budget.WheelTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

/**
 * One virtual-time storm ({@link RelayStormOptions}): the SDK's real engines ({@link VirtualFleet}) in
 * processes of {@code clientsPerProcess}, each process sending to Redis directly or through its home
 * relay ({@link RoutedPort}, {@link VirtualRelay}: the real relay core), one budget in Redis modelled
 * by the parity-tested Java arithmetic ({@link VirtualRedis}), all on one {@link WheelTime}. Every
 * client makes a first attempt every {@code 1000 / firstPerSecond} ms at its own phase; in the outage
 * every attempt fails, and each failure asks the budget for a retry (at most {@code maxAttempts}
 * attempts a call), a granted retry going 10-100 ms later.
 */
final class RelayStormRun {
  static final long CALL_TIMEOUT_MILLIS = 20;
  private final RelayStormOptions o;
  private final WheelTime time = new WheelTime(0);
  private final SplittableRandom random;
  private final VirtualRedis redis;
  private final VirtualRelay[] relays;
  private final RetryBudget[] clients;
  private final RoutedPort[] portOf; // by client
  private final long t0;
  private final long outageFrom;
  private final long outageTo;
  private final long end;
  // per recorded second
  final long[] first;
  final long[] grants;
  final long[] localDecisions;
  final long[] redisDecisions;
  final long[][] relayDecisions;
  final double[] lagSeconds;
  // the first attempts made, cumulative, at each ms (for the lag)
  private final long[] madeAt;
  private long made;
  long lostAtKilledRelays; // first attempts a killed relay held
  private long killedAt = -1;
  final long[] fleetLearned = new long[2]; // min, max of what a sample of clients learned at the outage's start
  double cpuSeconds; // CPU time of the run (the machine is shared: wall time says little)

  RelayStormRun(RelayStormOptions o) {
    this.o = o;
    this.random = new SplittableRandom(o.seed());
    VirtualFleet fleet = new VirtualFleet(time, CALL_TIMEOUT_MILLIS, random::nextDouble);
    this.redis = new VirtualRedis(time, fleet.flushTimeoutMillis(), 0);
    redis.configure(o.ratioPpm(), 10, o.floor(), o.maxCallsPerSecond());
    int seconds = o.seconds();
    this.t0 = o.warmupSeconds() * 1000L;
    this.outageFrom = t0 + o.healthySeconds() * 1000L + o.outageOffsetMillis();
    this.outageTo = outageFrom + o.outageSeconds() * 1000L;
    this.end = t0 + seconds * 1000L;
    this.first = new long[seconds];
    this.grants = new long[seconds];
    this.localDecisions = new long[seconds];
    this.redisDecisions = new long[seconds];
    this.relayDecisions = new long[Math.max(1, o.relays())][seconds];
    this.lagSeconds = new double[seconds];
    this.madeAt = new long[(int) end + 1];
    this.relays = new VirtualRelay[o.relays()];
    for (int i = 0; i < relays.length; i++) {
      relays[i] = new VirtualRelay(i, time, redis, o.relay(), o.seed() * 1_000 + i, seconds);
    }
    this.clients = new RetryBudget[o.clients()];
    this.portOf = new RoutedPort[o.clients()];
    BudgetConfig seed = BudgetConfig.builder("storm").ratioPpm(o.ratioPpm()).minRetriesPerSecond(o.floor())
        .windowSeconds(10).maxCallsPerSecond(o.maxCallsPerSecond()).build();
    int processes = (o.clients() + o.clientsPerProcess() - 1) / o.clientsPerProcess();
    for (int p = 0; p < processes; p++) {
      RoutedPort port = new RoutedPort(time, route(p), redis, true, this::second);
      VirtualFleet.Process process = fleet.process(port);
      for (int c = p * o.clientsPerProcess(); c < Math.min(o.clients(), (p + 1) * o.clientsPerProcess()); c++) {
        clients[c] = process.budget(seed);
        portOf[c] = port;
      }
    }
  }

  /** Process {@code p}'s relays in order: its home relay (p mod R), then the next one. */
  private VirtualRelay[] route(int p) {
    if (relays.length == 0) {
      return new VirtualRelay[0];
    }
    if (relays.length == 1) {
      return new VirtualRelay[] {relays[0]};
    }
    return new VirtualRelay[] {relays[p % relays.length], relays[(p + 1) % relays.length]};
  }

  private int second() {
    return (int) Math.floorDiv(time.millis() - t0, 1000);
  }

  RelayStormRun run() {
    long started = java.lang.management.ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime();
    int period = 1000 / o.firstPerSecond();
    int[][] byPhase = phases(period);
    scheduleFault();
    time.at(0, () -> driver(byPhase, period));
    for (long s = 1; s * 1000 <= end; s++) {
      time.advanceTo(s * 1000 - 1);
      madeAt[(int) (s * 1000 - 1)] = made;
      if (s * 1000 == outageFrom - o.outageOffsetMillis()) {
        sampleLearnedFleet();
      }
      time.advanceTo(s * 1000);
      int sec = (int) ((s * 1000 - t0) / 1000) - 1;
      if (sec >= 0 && sec < lagSeconds.length) {
        lagSeconds[sec] = lag(s * 1000 - 1);
      }
    }
    cpuSeconds = (java.lang.management.ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime() - started) / 1e9;
    return this;
  }

  /** The clients by phase: client i makes its first attempts at ms phase(i) + k * period. */
  private int[][] phases(int period) {
    int[] phase = new int[clients.length];
    int[] count = new int[period];
    for (int i = 0; i < clients.length; i++) {
      phase[i] = random.nextInt(period);
      count[phase[i]]++;
    }
    int[][] by = new int[period][];
    for (int p = 0; p < period; p++) {
      by[p] = new int[count[p]];
      count[p] = 0;
    }
    for (int i = 0; i < clients.length; i++) {
      by[phase[i]][count[phase[i]]++] = i;
    }
    return by;
  }

  private void driver(int[][] byPhase, int period) {
    long now = time.millis();
    if (now >= end) {
      return;
    }
    for (int i : byPhase[(int) (now % period)]) {
      firstAttempt(i, now);
    }
    madeAt[(int) now] = made;
    time.at(1, () -> driver(byPhase, period));
  }

  private boolean failing(long now) {
    return now >= outageFrom && now < outageTo;
  }

  private void firstAttempt(int i, long now) {
    clients[i].recordFirstAttempt();
    made++;
    int sec = second();
    if (sec >= 0 && sec < first.length) {
      first[sec]++;
    }
    if (failing(now)) {
      ask(i, 1);
    }
  }

  /** Attempt {@code attempt} of client {@code i} failed: ask for a retry, if the call has attempts left. */
  private void ask(int i, int attempt) {
    if (attempt >= o.maxAttempts()) {
      return;
    }
    RoutedPort port = portOf[i];
    long before = port.permitCalls;
    long beforeRedis = port.redisPermitCalls;
    int sec = second();
    long ahead = VirtualFleet.decidedAhead(clients[i]);
    java.util.concurrent.CompletionStage<BudgetDecision> decision = clients[i].acquire();
    if (sec >= 0 && sec < localDecisions.length) {
      // a decision is local when it made no call, or was decided ahead (its call went in the background)
      if (port.permitCalls == before || VirtualFleet.decidedAhead(clients[i]) > ahead) {
        localDecisions[sec]++;
      } else if (port.redisPermitCalls > beforeRedis) {
        redisDecisions[sec]++;
      } else {
        relayDecisions[homeIndex(i, port.currentWay())][sec]++;
      }
    }
    decision.thenAccept(d -> {
      if (!d.granted()) {
        return;
      }
      int s = second();
      if (s >= 0 && s < grants.length) {
        grants[s]++;
      }
      time.at(10 + random.nextInt(91), () -> {
        if (failing(time.millis())) {
          ask(i, attempt + 1);
        }
      });
    });
  }

  /** The relay index of way {@code way} of client {@code i}'s route. */
  private int homeIndex(int i, int way) {
    int p = i / o.clientsPerProcess();
    return relays.length <= 1 ? 0 : (p + way) % relays.length;
  }

  private void scheduleFault() {
    if ("none".equals(o.fault()) || relays.length == 0) {
      return;
    }
    long at = outageFrom + o.faultAtOutageSecond() * 1000L;
    time.at(at, () -> {
      switch (o.fault()) {
        case "cut" -> relays[0].cutFromRedis(true);
        case "kill", "restart" -> {
          lostAtKilledRelays += relays[0].core().pendingRequests();
          relays[0].kill();
          watchServedAgain(at);
          if ("restart".equals(o.fault())) {
            time.at(2_000, relays[0]::restart);
          }
        }
        default -> throw new IllegalArgumentException("fault must be none, kill, restart or cut, was " + o.fault());
      }
    });
  }

  /** From {@code at} on, each client whose home relay was killed is watched until it is answered again. */
  private void watchServedAgain(long at) {
    killedAt = at;
    for (RoutedPort port : portOf) {
      port.watch(at);
    }
  }

  /**
   * The longest a client whose home relay was killed waited for its next answer (from any way), ms;
   * -1 when there was no kill, {@code Long.MAX_VALUE} when one was never answered again.
   */
  long servedAgainMillis() {
    if (killedAt < 0) {
      return -1;
    }
    long worst = 0;
    for (int i = 0; i < clients.length; i++) {
      if (homeIndex(i, 0) == 0) {
        long at = portOf[i].answeredSince(VirtualFleet.clientId(clients[i]));
        worst = Math.max(worst, at < 0 ? Long.MAX_VALUE : at - killedAt);
      }
    }
    return worst;
  }

  private void sampleLearnedFleet() {
    long min = Long.MAX_VALUE;
    long max = 0;
    for (int k = 0; k < Math.min(1_000, clients.length); k++) {
      long n = VirtualFleet.learnedFleet(clients[(int) ((long) k * clients.length / Math.min(1_000, clients.length))]);
      min = Math.min(min, n);
      max = Math.max(max, n);
    }
    fleetLearned[0] = min;
    fleetLearned[1] = max;
  }

  /** How far Redis's count of first attempts at {@code now} lags those made: now less the time they were all made by. */
  private double lag(long now) {
    long counted = redis.requestsCounted();
    int lo = 0;
    int hi = (int) now;
    if (madeAt[hi] < counted) {
      return 0;
    }
    while (lo < hi) {
      int mid = (lo + hi) >>> 1;
      if (madeAt[mid] >= counted) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    return (now - lo) / 1000.0;
  }

  VirtualRedis redis() {
    return redis;
  }

  VirtualRelay[] relays() {
    return relays;
  }

  RelayStormOptions options() {
    return o;
  }

  long made() {
    return made;
  }

  /** First attempts of client calls that failed (their engines count them lost, never send them again). */
  long lostAtClients() {
    long lost = 0;
    java.util.Set<RoutedPort> seen = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
    for (RoutedPort p : portOf) {
      if (seen.add(p)) {
        lost += p.lostRequests;
      }
    }
    return lost;
  }

  long t0() {
    return t0;
  }

  long tasksRun() {
    return time.tasksRun();
  }

  static long[] copy(long[] a) {
    return Arrays.copyOf(a, a.length);
  }
}
