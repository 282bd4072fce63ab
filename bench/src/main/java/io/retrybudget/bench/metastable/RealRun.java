package io.retrybudget.bench.metastable;

import io.retrybudget.testing.CommandStats;
import io.retrybudget.testing.RedisServerProcess;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.StringJoiner;

/**
 * A real run: one backend JVM ({@link BackendMain}, one Vert.x server per unit of every round),
 * {@code jvms} client JVMs ({@link FleetMain}) that share every unit's clients, and as many real
 * {@code redis-server}s as a round has fleet-budget units (each such unit has one of its own, so that
 * its Redis calls are its own). The same JVMs run the rounds one after another; the units of a
 * round run side by side on one schedule, released by one {@code GO <round> <epoch>}. Redis's
 * script calls are read from {@code INFO commandstats} every second.
 */
final class RealRun {
  private RealRun() {}

  /** Runs {@code rounds}; one {@link ScenarioRun} per fleet size and scenario, arms in {@code arms}' order. */
  static List<ScenarioRun> run(Params base, List<Round> rounds, List<Arm> arms, int jvms, Path work)
      throws Exception {
    Files.createDirectories(work);
    int redisCount = rounds.stream().mapToInt(Round::redisServers).max().orElse(0);
    List<RedisServerProcess> redis = new ArrayList<>();
    List<ChildJvm> children = new ArrayList<>();
    Map<Round.Unit, PerSecond> calls = new LinkedHashMap<>();
    Map<Round.Unit, PerSecond> server = new LinkedHashMap<>();
    Map<Round.Unit, long[]> redisCalls = new LinkedHashMap<>();
    try {
      StringJoiner uris = new StringJoiner(",");
      for (int i = 0; i < redisCount; i++) {
        RedisServerProcess r = RedisServerProcess.start();
        redis.add(r);
        uris.add(r.uri());
      }
      int after = rounds.get(0).units().get(0).scenario().afterSeconds();
      List<String> encoded = rounds.stream().map(Round::encode).toList();
      List<String> backendArgs = new ArrayList<>(List.of(work.toString(), Integer.toString(after), base.encode()));
      backendArgs.addAll(encoded);
      ChildJvm backend = new ChildJvm("backend", work.resolve("backend.log"), BackendMain.class, backendArgs);
      children.add(backend);
      for (int i = 0; i < jvms; i++) {
        List<String> a = new ArrayList<>(List.of(work.toString(), Integer.toString(after), base.encode(),
            Integer.toString(i), Integer.toString(jvms), redisCount == 0 ? "-" : uris.toString()));
        a.addAll(encoded);
        children.add(new ChildJvm("fleet-" + i, work.resolve("fleet-" + i + ".log"), FleetMain.class, a));
      }
      backend.await("READY", 120_000); // the client JVMs start meanwhile, and warm up once it listens
      for (ChildJvm c : children.subList(1, children.size())) {
        c.send("WARM");
      }
      for (Round round : rounds) {
        for (ChildJvm c : children.subList(1, children.size())) {
          c.await("LOADED " + round.index(), 120_000);
        }
        long epoch = System.currentTimeMillis() + 1000; // the backend collects the warm-up's garbage meanwhile
        System.out.printf("%s round %d of %d: %d clients, %s%n", Instant.now(), round.index() + 1, rounds.size(),
            round.clients(), round.units().stream().map(Round.Unit::tag).toList());
        for (ChildJvm c : children) {
          c.send("GO " + round.index() + " " + epoch);
        }
        Map<Round.Unit, long[]> rc = sampleRedis(round, redis, epoch);
        redisCalls.putAll(rc);
        for (ChildJvm c : children) {
          c.await("DONE " + round.index(), 60_000);
        }
        server.putAll(read(work.resolve("backend-round" + round.index() + ".csv"), round, ServerCore.COLUMNS));
        for (int i = 0; i < jvms; i++) {
          Map<Round.Unit, PerSecond> one = read(work.resolve("fleet-" + i + "-round" + round.index() + ".csv"), round,
              CallStats.COLUMNS);
          one.forEach((u, t) -> calls.merge(u, t, (a, b) -> {
            a.addAll(b);
            return a;
          }));
        }
      }
      for (ChildJvm c : children) {
        int code = c.waitFor(60_000);
        if (code != 0) {
          throw new IllegalStateException("a child JVM exited with " + code + " (logs in " + work + ")");
        }
      }
    } finally {
      children.forEach(ChildJvm::close);
      redis.forEach(RedisServerProcess::close);
    }
    List<ScenarioRun> runs = new ArrayList<>();
    Round.byScenario(rounds).forEach((clients, byScenario) -> byScenario.forEach((id, units) -> {
      Map<Arm, PerSecond> c = new LinkedHashMap<>();
      Map<Arm, PerSecond> s = new LinkedHashMap<>();
      Map<Arm, long[]> r = new LinkedHashMap<>();
      for (Arm arm : arms) {
        Round.Unit u = units.get(arm);
        c.put(arm, calls.get(u));
        s.put(arm, server.get(u));
        if (redisCalls.containsKey(u)) {
          r.put(arm, redisCalls.get(u));
        }
      }
      Round.Unit any = units.values().iterator().next();
      runs.add(new ScenarioRun(any.scenario(), base.withClients(clients), c, s, r));
    }));
    return runs;
  }

  /**
   * Budget script calls (EVALSHA + EVAL) each fleet-budget unit's Redis served in each second of its
   * schedule; waits the round out.
   */
  private static Map<Round.Unit, long[]> sampleRedis(Round round, List<RedisServerProcess> redis, long epoch)
      throws InterruptedException {
    Map<Round.Unit, long[]> perSecond = new LinkedHashMap<>();
    Map<Round.Unit, Long> prev = new LinkedHashMap<>();
    Thread.sleep(Math.max(0, epoch - System.currentTimeMillis()));
    for (Round.Unit u : round.units()) {
      if (u.redis() >= 0) {
        perSecond.put(u, new long[u.scenario().totalSeconds()]);
        prev.put(u, scriptCalls(redis.get(u.redis())));
      }
    }
    for (int s = 0; s < round.seconds(); s++) {
      Thread.sleep(Math.max(0, epoch + (s + 1) * 1000L - System.currentTimeMillis()));
      for (Map.Entry<Round.Unit, long[]> e : perSecond.entrySet()) {
        long now = s < e.getValue().length ? scriptCalls(redis.get(e.getKey().redis())) : -1;
        if (now >= 0) { // a second Redis did not answer in counts into the next one it does
          long before = prev.get(e.getKey());
          e.getValue()[s] = before < 0 ? 0 : now - before;
          prev.put(e.getKey(), now);
        }
      }
    }
    return perSecond;
  }

  /** EVALSHA + EVAL calls so far; -1 when Redis did not answer within the admin client's timeout. */
  private static long scriptCalls(RedisServerProcess redis) {
    try {
      String stats = String.valueOf(redis.call("INFO", "commandstats"));
      return CommandStats.calls(stats, "evalsha") + CommandStats.calls(stats, "eval");
    } catch (java.io.UncheckedIOException e) {
      return -1;
    }
  }

  /** A child's table of one round: {@code scenario,arm,second,<columns>[,latencies]}, by unit. */
  static Map<Round.Unit, PerSecond> read(Path csv, Round round, List<String> columns) throws IOException {
    Map<String, Round.Unit> byKey = new LinkedHashMap<>();
    Map<Round.Unit, PerSecond> m = new LinkedHashMap<>();
    for (Round.Unit u : round.units()) {
      byKey.put(u.scenario().id() + "," + u.arm().id(), u);
      m.put(u, new PerSecond(u.scenario().totalSeconds(), columns));
    }
    List<String> lines = Files.readAllLines(csv);
    for (String line : lines.subList(1, lines.size())) {
      String[] f = line.split(",", -1);
      PerSecond t = m.get(byKey.get(f[0] + "," + f[1]));
      int s = Integer.parseInt(f[2]);
      for (int c = 0; c < columns.size(); c++) {
        t.add(s, c, Long.parseLong(f[3 + c]));
      }
      if (f.length > 3 + columns.size() && !f[3 + columns.size()].isEmpty()) {
        for (String l : f[3 + columns.size()].split(" ")) {
          t.latency(s, Integer.parseInt(l));
        }
      }
    }
    return m;
  }
}
