package io.retrybudget.bench.metastable;

import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import io.retrybudget.retry.RetryScheduler;
import io.retrybudget.retry.http.RetryingHttpClient;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * One client process of a real run: for every round in turn, its share of each unit's clients
 * ({@code clients / jvms}), each a {@link RetryingHttpClient} of its own with its own budget
 * ({@link Arm#clientBudget}: its own counters, flush timer and client id); a fleet-budget unit's
 * budgets come from one {@link RedisBudgetClient} of this process per Redis. The clients of a unit
 * share one {@code java.net.http.HttpClient} (its connections, one selector thread, which also
 * runs the completions: no hand-off to a thread pool), and all clients share the retry timers, as
 * one process's clients would. A ticker releases first attempts every {@value ModelRun#TICK_MILLIS}
 * ms at this process's share of the rate, round robin over the unit's clients.
 *
 * <p>Once told {@code WARM} on stdin (the backend listens), it warms up for {@value #WARM_UP_SECONDS} s
 * against the first round's backends, whose answers are counted nowhere ({@link #warmUp}), so that
 * the JIT has compiled the paths of calls and budgets before the clock starts. Per round it prints
 * {@code LOADED <round>} once the clients are built and every fleet budget has reached Redis, waits
 * for {@code GO <round> <epochMillis>} on stdin, runs the schedule, writes
 * {@code scenario,arm,second,<CallStats.COLUMNS>,latencies} to {@code fleet-<jvm>-round<r>.csv} in the
 * output folder and prints {@code DONE <round>}. Arguments:
 * {@code <outDir> <afterSeconds> <Params.encode> <jvmIndex> <jvms> <redisUri>,...|- <Round.encode>...}.
 */
public final class FleetMain {
  /** Seconds of warm-up traffic before the first round. */
  static final int WARM_UP_SECONDS = 13;
  private static final long PROBE_MILLIS = 10;

  private FleetMain() {}

  public static void main(String[] args) throws Exception {
    Path outDir = Path.of(args[0]);
    int after = Integer.parseInt(args[1]);
    Params base = Params.decode(args[2]);
    int index = Integer.parseInt(args[3]);
    int jvms = Integer.parseInt(args[4]);
    List<String> redisUris = args[5].equals("-") ? List.of() : List.of(args[5].split(","));
    List<Round> rounds = new ArrayList<>();
    for (int i = 6; i < args.length; i++) {
      rounds.add(Round.decode(args[i], after));
    }
    java.util.concurrent.ScheduledThreadPoolExecutor timers = new java.util.concurrent.ScheduledThreadPoolExecutor(2,
        daemon("retry-timers"));
    timers.setRemoveOnCancelPolicy(true); // an attempt answered in time drops its timeout (and what it holds) at once
    RetryScheduler scheduler = RetryScheduler.of(timers);
    ScheduledExecutorService ticker = Executors.newSingleThreadScheduledExecutor(daemon("ticker"));
    Map<Integer, RedisBudgetClient> redis = new LinkedHashMap<>();
    Map<Integer, HttpClient> http = new LinkedHashMap<>();
    for (Round round : rounds) {
      for (Round.Unit u : round.units()) {
        // HTTP/1.1: java.net.http would try an h2c upgrade on every new connection; completions
        // run on the client's selector thread (a direct executor): no pool, no hand-off
        http.put(u.port(), HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).executor(Runnable::run).build());
        if (u.arm().fleetBudget() && !redis.containsKey(u.redis())) {
          // a budget call may take 250 ms (the SDK's default is 20 ms): on a shared 2-core machine a
          // budget answering from its fallback is not what is measured
          redis.put(u.redis(), RedisBudgetClient.builder(RedisConnectionOptions.standalone(redisUris.get(u.redis()))
              .build()).callTimeout(Duration.ofMillis(250)).build());
        }
      }
    }
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String warm = in.readLine(); // the backend is listening
    if (!"WARM".equals(warm == null ? null : warm.trim())) {
      throw new IllegalStateException("expected WARM on stdin, got " + warm);
    }
    Round first = rounds.get(0);
    warmUp(first, base.withClients(first.clients()), jvms, http, redis, scheduler, ticker);
    for (Round round : rounds) {
      if (round.index() > 0) {
        // this round's backends listen on ports of their own, so its HTTP clients have no connection
        // yet: opening them all in its second 0 held one JVM's ticker 194 ms (the first round's were
        // opened by the warm-up)
        warmPhase(round, base.withClients(round.clients()), base.firstRate() / jvms, 1,
            base.attemptTimeoutMillis() + 2L * base.serviceMillis(), http, redis, scheduler, ticker);
      }
      FleetRound r = new FleetRound(round, base.withClients(round.clients()), index, jvms, http, redis, scheduler);
      r.awaitBudgets();
      System.gc(); // the round's clients, and what the warm-up and the last round left, before the clock starts
      System.out.println("LOADED " + round.index());
      System.out.flush();
      long epoch = awaitGo(in, round.index());
      r.run(epoch, ticker, timers, PROBE_MILLIS);
      r.write(outDir.resolve("fleet-" + index + "-round" + round.index() + ".csv"));
      r.close();
      System.out.println("DONE " + round.index());
      System.out.flush();
    }
    redis.values().forEach(RedisBudgetClient::close);
    System.exit(0);
  }

  /** Reads {@code GO <round> <epochMillis>} from the harness; fails on anything else. */
  static long awaitGo(BufferedReader in, int round) throws IOException {
    String go = in.readLine();
    String[] f = go == null ? new String[0] : go.trim().split(" ");
    if (f.length != 3 || !f[0].equals("GO") || Integer.parseInt(f[1]) != round) {
      throw new IllegalStateException("expected GO " + round + " <epochMillis> on stdin, got " + go);
    }
    return Long.parseLong(f[2]);
  }

  /**
   * {@value #WARM_UP_SECONDS} s of warm-up to each unit of the round, through one client per unit with
   * the unit's kind of budget (under a budget name of its own), on the run's HTTP clients and
   * timers, in two halves: the run's policy at the base rate (the healthy paths), then the base rate
   * with a per-attempt timeout of S / 3, so that every attempt times out while the backend still
   * serves it: a storm (timeouts and cancelled exchanges, new connections, backoff, retries, budgets
   * that deny, a full FIFO queue's 503s and wasted work) whose attempts stop with its first attempts.
   * Then the last retries end and a full queue drains before the clock starts. (Three times the base
   * rate with the run's policy left the naive backend's queue full and its event loop seconds late
   * when the clock started; with only the healthy half, or a third of the rate in the second, the
   * first round's trigger ran 116-300 ms late in its storm's first seconds, the JVMs' first.)
   */
  private static void warmUp(Round round, Params params, int jvms, Map<Integer, HttpClient> http,
      Map<Integer, RedisBudgetClient> redis, RetryScheduler scheduler, ScheduledExecutorService ticker)
      throws InterruptedException {
    int half = 5; // the healthy half; the storm takes the rest
    // the last calls end: healthy ones within T; timed-out ones after up to two backoffs of at most the cap
    long failed = warmPhase(round, params, params.firstRate() / jvms, half,
        params.attemptTimeoutMillis() + 2L * params.serviceMillis(), http, redis, scheduler, ticker);
    Params storm = params.withAttemptTimeout(Math.max(1, params.serviceMillis() / 3));
    // a full queue (the backend's limit) drains in queue / capacity once the attempts stop
    long queueDrain = 1000L * params.queueLimit() * params.serviceMillis() / (1000L * params.workers());
    failed += warmPhase(round, storm, params.firstRate() / jvms, WARM_UP_SECONDS - half,
        2L * params.backoffCapMillis() + 2L * params.serviceMillis() + queueDrain, http, redis, scheduler, ticker);
    System.out.println("warm-up: " + failed + " calls without a 200");
  }

  /**
   * {@code seconds} of {@code rate} first attempts a second to each unit of the round with the policy
   * of {@code params}, then {@code drainMillis} for the last calls to end; returns the calls that
   * did not end in a 200.
   */
  private static long warmPhase(Round round, Params params, double rate, int seconds, long drainMillis,
      Map<Integer, HttpClient> http,
      Map<Integer, RedisBudgetClient> redis, RetryScheduler scheduler, ScheduledExecutorService ticker)
      throws InterruptedException {
    Map<Round.Unit, RetryingHttpClient> clients = new LinkedHashMap<>();
    Map<Round.Unit, Pacer> pacers = new LinkedHashMap<>();
    List<RetryBudget> budgets = new ArrayList<>();
    Scenario flat = new Scenario("warm-up", seconds, 1, 1.0, 1.0, 1);
    for (Round.Unit u : round.units()) {
      RedisBudgetClient rc = redis.get(u.redis());
      Arm.ClientBudget cb = u.arm().clientBudget("metastable-warm-up", System::currentTimeMillis,
          () -> rc.budget(Arm.fleetConfig("metastable-warm-up")));
      RetryingHttpClient.Builder b = RetryingHttpClient.builder(http.get(u.port())).policy(ModelRun.policy(params))
          .listener(cb.listener()).executor(x -> x.scheduler(scheduler));
      if (cb.budget() != null) {
        b.budget(cb.budget());
        budgets.add(cb.budget());
      }
      clients.put(u, b.build());
      pacers.put(u, new Pacer(flat, rate));
    }
    long start = System.currentTimeMillis();
    long[] failed = new long[1];
    ScheduledFuture<?> tick = ticker.scheduleAtFixedRate(() -> {
      long now = System.currentTimeMillis() - start;
      for (Round.Unit u : round.units()) {
        URI target = target(u);
        for (int k = pacers.get(u).due(now); k > 0; k--) {
          clients.get(u).sendAsync(HttpRequest.newBuilder(target).GET().build(), HttpResponse.BodyHandlers.discarding())
              .whenComplete((r, e) -> {
                if (r == null || r.statusCode() != 200) {
                  synchronized (failed) {
                    failed[0]++;
                  }
                }
              });
        }
      }
    }, 0, ModelRun.TICK_MILLIS, TimeUnit.MILLISECONDS);
    Thread.sleep(seconds * 1000L);
    tick.cancel(false);
    Thread.sleep(drainMillis);
    budgets.forEach(RetryBudget::close);
    synchronized (failed) {
      return failed[0];
    }
  }

  static URI target(Round.Unit u) {
    return URI.create("http://127.0.0.1:" + u.port() + "/work");
  }

  static java.util.concurrent.ThreadFactory daemon(String name) {
    return r -> {
      Thread t = new Thread(r, name);
      t.setDaemon(true);
      return t;
    };
  }
}
