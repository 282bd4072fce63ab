package io.retrybudget.bench.metastable;

import io.retrybudget.testing.CommandStats;
import io.retrybudget.testing.RedisServerProcess;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.StringJoiner;

/**
 * One scenario with real parts: a backend JVM ({@link BackendMain}, one Vert.x server per arm),
 * {@code jvms} client JVMs ({@link FleetMain}) that share every arm's clients, and for each arm
 * with the fleet budget a real {@code redis-server} of the caller's, one per arm so that each arm's
 * Redis calls are its own. All arms run side by side on the same schedule, released by one
 * {@code GO <epoch>}; Redis's script calls are read from {@code INFO commandstats} every second.
 */
final class RealRun {
  private RealRun() {}

  static ScenarioRun run(Params p, Scenario sc, List<Arm> arms, int jvms, Map<Arm, RedisServerProcess> redis,
      Path work) throws Exception {
    Files.createDirectories(work);
    String tag = sc.id() + "-c" + p.clients();
    StringJoiner ports = new StringJoiner(",");
    for (Arm arm : arms) {
      ports.add(arm.id() + "=" + RedisServerProcess.freePort());
    }
    StringJoiner redisUris = new StringJoiner(",");
    for (Map.Entry<Arm, RedisServerProcess> e : redis.entrySet()) {
      e.getValue().call("FLUSHALL");
      redisUris.add(e.getKey().id() + "=" + e.getValue().uri());
    }
    List<ChildJvm> children = new ArrayList<>();
    try {
      Path backendCsv = work.resolve("backend-" + tag + ".csv");
      ChildJvm backend = new ChildJvm("backend", work.resolve("backend-" + tag + ".log"), BackendMain.class,
          List.of(backendCsv.toString(), sc.id(), Integer.toString(sc.afterSeconds()), p.encode(), ports.toString()));
      children.add(backend);
      List<Path> fleetCsvs = new ArrayList<>();
      for (int i = 0; i < jvms; i++) {
        Path csv = work.resolve("fleet-" + i + "-" + tag + ".csv");
        fleetCsvs.add(csv);
        children.add(new ChildJvm("fleet-" + i, work.resolve("fleet-" + i + "-" + tag + ".log"), FleetMain.class,
            List.of(csv.toString(), sc.id(), Integer.toString(sc.afterSeconds()), p.encode(), Integer.toString(i),
                Integer.toString(jvms), redis.isEmpty() ? "-" : redisUris.toString(), ports.toString())));
      }
      backend.await("READY", 120_000);
      for (ChildJvm c : children.subList(1, children.size())) {
        c.await("LOADED", 120_000);
      }
      long epoch = System.currentTimeMillis() + 2000;
      for (ChildJvm c : children) {
        c.send("GO " + epoch);
      }
      Map<Arm, long[]> redisCalls = new LinkedHashMap<>();
      redis.keySet().forEach(arm -> redisCalls.put(arm, new long[sc.totalSeconds()]));
      sampleRedis(redis, epoch, sc.totalSeconds(), redisCalls);
      for (ChildJvm c : children) {
        int code = c.waitFor(60_000);
        if (code != 0) {
          throw new IllegalStateException("a child JVM exited with " + code + " (logs in " + work + ")");
        }
      }
      Map<Arm, PerSecond> server = read(backendCsv, sc.totalSeconds(), ServerCore.COLUMNS, arms);
      Map<Arm, PerSecond> calls = null;
      for (Path csv : fleetCsvs) {
        Map<Arm, PerSecond> one = read(csv, sc.totalSeconds(), CallStats.COLUMNS, arms);
        if (calls == null) {
          calls = one;
        } else {
          for (Arm arm : arms) {
            calls.get(arm).addAll(one.get(arm));
          }
        }
      }
      return new ScenarioRun(sc, p, calls, server, redisCalls);
    } finally {
      children.forEach(ChildJvm::close);
    }
  }

  /** Budget script calls (EVALSHA + EVAL) each arm's Redis served in each second of the run; waits the run out. */
  private static void sampleRedis(Map<Arm, RedisServerProcess> redis, long epoch, int seconds,
      Map<Arm, long[]> perSecond) throws InterruptedException {
    Thread.sleep(Math.max(0, epoch - System.currentTimeMillis()));
    Map<Arm, Long> prev = new LinkedHashMap<>();
    redis.forEach((arm, r) -> prev.put(arm, scriptCalls(r)));
    for (int s = 0; s < seconds; s++) {
      Thread.sleep(Math.max(0, epoch + (s + 1) * 1000L - System.currentTimeMillis()));
      for (Map.Entry<Arm, RedisServerProcess> e : redis.entrySet()) {
        long now = scriptCalls(e.getValue());
        perSecond.get(e.getKey())[s] = now - prev.get(e.getKey());
        prev.put(e.getKey(), now);
      }
    }
  }

  private static long scriptCalls(RedisServerProcess redis) {
    String stats = String.valueOf(redis.call("INFO", "commandstats"));
    return CommandStats.calls(stats, "evalsha") + CommandStats.calls(stats, "eval");
  }

  /** A child's table: {@code arm,second,<columns>[,latencies]}. */
  static Map<Arm, PerSecond> read(Path csv, int seconds, List<String> columns, List<Arm> arms) throws IOException {
    Map<Arm, PerSecond> m = new LinkedHashMap<>();
    for (Arm arm : arms) {
      m.put(arm, new PerSecond(seconds, columns));
    }
    List<String> lines = Files.readAllLines(csv);
    for (String line : lines.subList(1, lines.size())) {
      String[] f = line.split(",", -1);
      PerSecond t = m.get(Arm.byId(f[0]));
      int s = Integer.parseInt(f[1]);
      for (int c = 0; c < columns.size(); c++) {
        t.add(s, c, Long.parseLong(f[2 + c]));
      }
      if (f.length > 2 + columns.size() && !f[2 + columns.size()].isEmpty()) {
        for (String l : f[2 + columns.size()].split(" ")) {
          t.latency(s, Integer.parseInt(l));
        }
      }
    }
    return m;
  }
}
