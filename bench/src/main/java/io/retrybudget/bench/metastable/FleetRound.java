package io.retrybudget.bench.metastable;

import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.retry.RetryScheduler;
import io.retrybudget.retry.http.RetryingHttpClient;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * One round in one client process ({@link FleetMain}): this process's share of each unit's clients,
 * each with a budget of its own, built fresh for the round (a fleet budget's name is the round's
 * own, so nothing carries over from an earlier round), and each unit's {@link CallStats}, which
 * also get the process's lag: how late the ticker and a probe on the retry timers ran.
 */
final class FleetRound {
  private final Round round;
  private final Params params;
  private final Map<Round.Unit, List<RetryingHttpClient>> clients = new LinkedHashMap<>();
  private final Map<Round.Unit, CallStats> stats = new LinkedHashMap<>();
  private final List<RetryBudget> budgets = new ArrayList<>();
  private final List<RedisBudgetClient> redis = new ArrayList<>();
  private final int jvms;
  private final long[] epoch = {Long.MAX_VALUE};
  private final LongSupplier sinceStart = () -> System.currentTimeMillis() - epoch[0];

  FleetRound(Round round, Params params, int jvm, int jvms, Map<Integer, HttpClient> http,
      Map<Integer, RedisBudgetClient> redisClients, RetryScheduler scheduler) {
    this.round = round;
    this.params = params;
    this.jvms = jvms;
    int perJvm = params.clients() / jvms + (jvm < params.clients() % jvms ? 1 : 0);
    for (Round.Unit u : round.units()) {
      RedisBudgetClient rc = redisClients.get(u.redis());
      if (rc != null) {
        redis.add(rc);
      }
      CallStats cs = new CallStats(new PerSecond(u.scenario().totalSeconds(), CallStats.COLUMNS), sinceStart);
      stats.put(u, cs);
      String budgetName = "metastable-" + u.scenario().id() + "-c" + params.clients() + "-r" + round.index();
      List<RetryingHttpClient> list = new ArrayList<>();
      for (int i = 0; i < perJvm; i++) {
        Arm.ClientBudget cb = u.arm().clientBudget(budgetName, System::currentTimeMillis,
            () -> rc.budget(Arm.fleetConfig(budgetName)));
        RetryingHttpClient.Builder b = RetryingHttpClient.builder(http.get(u.port())).policy(ModelRun.policy(params))
            .listener(cs.listener()).listener(cb.listener()).executor(x -> x.scheduler(scheduler));
        if (cb.budget() != null) {
          b.budget(cb.budget());
          budgets.add(cb.budget());
        }
        list.add(b.build());
      }
      clients.put(u, list);
    }
  }

  /** Waits (at most 30 s) until every fleet budget of the round answers from Redis, not its fallback. */
  void awaitBudgets() throws InterruptedException {
    for (RedisBudgetClient rc : redis) {
      long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (rc.isDegraded() && System.nanoTime() < until) {
        Thread.sleep(50);
      }
      if (rc.isDegraded()) {
        System.out.println("WARNING: a fleet budget still answered from its fallback 30 s after start");
      }
    }
  }

  /** Runs the round's schedule from {@code startMillis} (epoch millis) to its end plus a grace second. */
  void run(long startMillis, ScheduledExecutorService ticker, ScheduledExecutorService timers, long probeMillis)
      throws InterruptedException {
    epoch[0] = startMillis;
    Thread.sleep(Math.max(0, startMillis - System.currentTimeMillis()));
    Map<Round.Unit, Pacer> pacers = new LinkedHashMap<>();
    Map<Round.Unit, int[]> next = new LinkedHashMap<>();
    for (Round.Unit u : round.units()) {
      pacers.put(u, new Pacer(u.scenario(), params.firstRate() / jvms));
      next.put(u, new int[1]);
    }
    long[] lastTick = {System.currentTimeMillis()};
    ScheduledFuture<?> tick = ticker.scheduleAtFixedRate(() -> {
      long wall = System.currentTimeMillis();
      lag("tick_lag_max", wall - lastTick[0] - ModelRun.TICK_MILLIS);
      lastTick[0] = wall;
      long now = sinceStart.getAsLong();
      for (Round.Unit u : round.units()) {
        if (now >= u.scenario().totalSeconds() * 1000L) {
          continue;
        }
        int due = pacers.get(u).due(now);
        List<RetryingHttpClient> list = clients.get(u);
        int[] n = next.get(u);
        for (int k = 0; k < due && !list.isEmpty(); k++) {
          send(list.get(n[0]), FleetMain.target(u), stats.get(u));
          n[0] = (n[0] + 1) % list.size();
        }
      }
    }, 0, ModelRun.TICK_MILLIS, TimeUnit.MILLISECONDS);
    long[] lastProbe = {System.currentTimeMillis()};
    ScheduledFuture<?> probe = timers.scheduleAtFixedRate(() -> {
      long wall = System.currentTimeMillis();
      lag("timer_lag_max", wall - lastProbe[0] - probeMillis);
      lastProbe[0] = wall;
    }, probeMillis, probeMillis, TimeUnit.MILLISECONDS);
    ScheduledFuture<?> progress = ticker.scheduleAtFixedRate(this::progress, 5000, 5000, TimeUnit.MILLISECONDS);
    Thread.sleep(Math.max(0, startMillis + round.seconds() * 1000L + 1000 - System.currentTimeMillis()));
    tick.cancel(false);
    probe.cancel(false);
    progress.cancel(false);
  }

  private void lag(String column, long millis) {
    for (CallStats cs : stats.values()) {
      cs.lag(column, Math.max(0, millis));
    }
  }

  /** Progress in the log, every 5 s: what the last whole second saw per unit. */
  private void progress() {
    int s = (int) (sinceStart.getAsLong() / 1000) - 1;
    StringBuilder b = new StringBuilder("t=" + s);
    stats.forEach((u, cs) -> {
      if (s >= 0 && s < cs.table().seconds()) {
        b.append(' ').append(u.tag()).append(" first=").append(cs.table().get(s, "first")).append(" retries=")
            .append(cs.table().get(s, "retries")).append(" goodput=").append(cs.table().get(s, "goodput"))
            .append(" lag=").append(cs.table().get(s, "tick_lag_max")).append('/')
            .append(cs.table().get(s, "timer_lag_max")).append('/').append(cs.table().get(s, "answer_lag_max"));
      }
    });
    System.out.println(b);
  }

  private void send(RetryingHttpClient client, URI target, CallStats cs) {
    long started = sinceStart.getAsLong();
    client.sendAsync(HttpRequest.newBuilder(target).GET().build(), HttpResponse.BodyHandlers.discarding())
        .whenComplete((r, e) -> cs.ended(started, r != null && r.statusCode() == 200));
  }

  /** {@code scenario,arm,second,<CallStats.COLUMNS>,latencies}, one line per unit and second. */
  void write(Path out) throws IOException {
    try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(out))) {
      w.println("scenario,arm,second," + String.join(",", CallStats.COLUMNS) + ",latencies");
      for (Map.Entry<Round.Unit, CallStats> e : stats.entrySet()) {
        PerSecond t = e.getValue().table();
        for (int s = 0; s < t.seconds(); s++) {
          StringBuilder b = new StringBuilder(e.getKey().scenario().id()).append(',').append(e.getKey().arm().id())
              .append(',').append(s);
          for (int c = 0; c < t.columns().size(); c++) {
            b.append(',').append(t.get(s, c));
          }
          b.append(',');
          int[] l = t.latencies(s);
          for (int i = 0; i < l.length; i++) {
            b.append(i == 0 ? "" : " ").append(l[i]);
          }
          w.println(b);
        }
      }
    }
  }

  /** Closes the round's budgets (their last flush); the Redis clients stay for the next round. */
  void close() {
    budgets.forEach(RetryBudget::close);
  }
}
