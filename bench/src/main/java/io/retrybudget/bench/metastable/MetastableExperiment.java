package io.retrybudget.bench.metastable;

import io.retrybudget.testing.RedisServerProcess;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A retry storm against an overloaded backend, end to end: every arm side by side on one schedule,
 * each scenario in turn; per-second CSV, a summary and a chart per scenario. Exits 2 when the naive
 * arm recovers within 60 s of a trigger's end: then the scenario is not metastable and proves
 * nothing; 3 when an arm was not healthy before the trigger (the machine, not the scenario,
 * decided the run). See bench/metastable/README.md for the flags and the figures.
 */
public final class MetastableExperiment {
  private MetastableExperiment() {}

  public static void main(String[] args) throws Exception {
    Options o = Options.parse(args);
    Files.createDirectories(o.out);
    String load = uptime();
    List<ScenarioRun> runs = new ArrayList<>();
    if (o.model) {
      for (int clients : o.clients) {
        Params p = o.params.withClients(clients);
        for (String id : o.scenarios) {
          Scenario sc = Scenario.byId(id, o.after);
          System.out.printf("%s %s, %s, arms %s%n", Instant.now(), sc.id(), p, o.arms);
          runs.add(ScenarioRun.model(p, sc, o.arms, o.seed));
        }
      }
    } else {
      List<Round> rounds = Round.plan(o.clients, o.scenarios, o.arms, o.after, o.together,
          RedisServerProcess::freePort);
      System.out.printf("%s %d rounds, %s, arms %s%n", Instant.now(), rounds.size(), o.params, o.arms);
      runs.addAll(RealRun.run(o.params, rounds, o.arms, o.jvms, o.out.resolve("logs")));
    }
    runs.forEach(r -> System.out.println(Report.table(r)));
    String loadAfter = uptime();
    Report.csv(o.out.resolve(o.name + ".csv"), runs);
    StringBuilder summary = new StringBuilder("# " + o.name + "\n\n");
    summary.append("Command: `").append(o.command).append("`  \n");
    summary.append("Finished ").append(Instant.now()).append(", ").append(o.model ? "fake-time model" : "real run: "
        + o.jvms + " client JVMs, a backend JVM, a redis-server per fleet-budget arm; at most " + o.together
        + " units (an arm after a trigger) side by side").append("  \n");
    summary.append("Load before: `").append(load).append("`; after: `").append(loadAfter).append("`  \n");
    summary.append("Parameters: ").append(o.params).append("\n\n");
    int code = 0;
    for (ScenarioRun r : runs) {
      summary.append(Report.table(r)).append('\n');
      String tag = r.scenario().id() + (o.clients.length > 1 ? "-c" + r.params().clients() : "");
      Report.chart(o.out.resolve(o.name + "-" + tag + ".png"), r, o.model ? "fake-time model" : "real run");
      Map<Arm, ArmSummary> s = r.summaries();
      if (!o.model) {
        Pace pace = Pace.of(r);
        summary.append(pace.describe()).append("\n\n");
        if (!pace.keptPace()) {
          String msg = "INCONCLUSIVE: in " + r.scenario().id() + " with " + r.params().clients() + " clients the harness"
              + " ran late by " + Pace.BOUND_MILLIS + " ms or more in " + pace.lateSeconds() + " unit-seconds: the machine,"
              + " not the scenario, decided the run (load " + loadAfter + ").";
          summary.append("**").append(msg).append("**\n\n");
          System.err.println(msg);
          code = Math.max(code, 3);
        }
      }
      List<Arm> unhealthy = unhealthyBeforeTrigger(r);
      if (!unhealthy.isEmpty()) {
        String msg = "INCONCLUSIVE: in " + r.scenario().id() + " with " + r.params().clients() + " clients " + unhealthy
            + " did not serve 95 % of the offered calls in every second from 2 to the trigger, before anything went"
            + " wrong: the harness did not keep pace (load " + loadAfter + "), and this run measures the machine.";
        summary.append("**").append(msg).append("**\n\n");
        System.err.println(msg);
        code = Math.max(code, 3);
      }
      ArmSummary naive = s.get(Arm.NAIVE);
      if (naive != null && naive.recoveredWithin(Scenario.RECOVERY_LIMIT_SECONDS)) {
        String msg = "NOT METASTABLE: in " + r.scenario().id() + " with " + r.params().clients()
            + " clients the naive arm recovered " + naive.recoverySeconds()
            + " s after the trigger; the scenario proves nothing.";
        summary.append("**").append(msg).append("**\n\n");
        System.err.println(msg);
        code = 2;
      }
      ArmSummary fleet = s.get(Arm.FLEET);
      if (fleet != null) {
        List<String> missed = fleet.fleetMisses();
        summary.append("Fleet budget targets (recovery <= 2 s, amplification in the trigger <= 1.15): ")
            .append(missed.isEmpty() ? "met" : "MISSED: " + String.join("; ", missed)).append(".\n\n");
      }
      ArmSummary server = s.get(Arm.FLEET_SERVER);
      if (server != null) {
        List<String> missed = server.serverHalfMisses(r.params());
        summary.append("Fleet budget + server half targets (goodput in the trigger >= 90 % of the reduced capacity, "
            + "wasted <= 5 %, recovery <= 1 s, p99 of successes <= 2 T): ")
            .append(missed.isEmpty() ? "met" : "MISSED: " + String.join("; ", missed)).append(".\n\n");
      }
    }
    Files.writeString(o.out.resolve(o.name + "-summary.md"), summary.toString());
    System.out.println("wrote " + o.out.resolve(o.name + "-summary.md"));
    System.exit(code);
  }

  /** Arms with a second in [2, trigger) whose goodput was under 95 % of the offered calls. */
  static List<Arm> unhealthyBeforeTrigger(ScenarioRun r) {
    List<Arm> bad = new ArrayList<>();
    for (Map.Entry<Arm, PerSecond> e : r.calls().entrySet()) {
      for (int t = 2; t < r.scenario().triggerStart(); t++) {
        if (!ArmSummary.healthy(e.getValue(), t)) {
          bad.add(e.getKey());
          break;
        }
      }
    }
    return bad;
  }

  static String uptime() {
    try {
      return Files.readString(Path.of("/proc/loadavg")).trim();
    } catch (IOException e) {
      return "unknown";
    }
  }

  /** The command line: see bench/metastable/README.md. */
  static final class Options {
    Params params = Params.defaults();
    List<Arm> arms = List.of(Arm.values());
    List<String> scenarios = List.of("capacity", "spike");
    int[] clients = {300};
    int jvms = 3;
    int together = 4;
    int after = 65;
    long seed = 42;
    boolean model;
    Path out = Path.of("bench/results/metastable");
    String name = "metastable";
    String command;

    static Options parse(String[] args) {
      Options o = new Options();
      o.command = "MetastableExperiment " + String.join(" ", args);
      int k = o.params.workers();
      int s = o.params.serviceMillis();
      int q = o.params.queueLimit();
      int t = o.params.attemptTimeoutMillis();
      double load = o.params.load();
      for (int i = 0; i < args.length; i++) {
        String a = args[i];
        if (a.equals("--model")) {
          o.model = true;
          continue;
        }
        if (i + 1 >= args.length) {
          throw new IllegalArgumentException(a + " needs a value");
        }
        String v = args[++i];
        switch (a) {
          case "--arms" -> o.arms = Arrays.stream(v.split(",")).map(Arm::byId).toList();
          case "--scenarios" -> o.scenarios = Arrays.stream(v.split(",")).map(String::trim).toList();
          case "--clients" -> o.clients = Arrays.stream(v.split(",")).mapToInt(x -> Integer.parseInt(x.trim())).toArray();
          case "--jvms" -> o.jvms = Integer.parseInt(v);
          case "--together" -> o.together = Integer.parseInt(v);
          case "--after-seconds" -> o.after = Integer.parseInt(v);
          case "--seed" -> o.seed = Long.parseLong(v);
          case "--out" -> o.out = Path.of(v);
          case "--name" -> o.name = v;
          case "--workers" -> k = Integer.parseInt(v);
          case "--service-ms" -> s = Integer.parseInt(v);
          case "--queue" -> q = Integer.parseInt(v);
          case "--timeout-ms" -> t = Integer.parseInt(v);
          case "--load" -> load = Double.parseDouble(v);
          default -> throw new IllegalArgumentException("unknown flag " + a + " (see bench/metastable/README.md)");
        }
      }
      if (o.jvms < 3 && !o.model) {
        throw new IllegalArgumentException("jvms must be at least 3, was " + o.jvms);
      }
      if (o.together < 1) {
        throw new IllegalArgumentException("together must be at least 1, was " + o.together);
      }
      if (o.after < Scenario.RECOVERY_LIMIT_SECONDS + Scenario.RECOVERED_SECONDS) {
        throw new IllegalArgumentException("after-seconds must be at least 65 to tell whether a recovery starts within"
            + " 60 s, was " + o.after);
      }
      Params d = o.params;
      o.params = new Params(k, s, q, t, load, o.clients[0], d.maxAttempts(), d.backoffBaseMillis(),
          d.backoffCapMillis());
      for (String sc : o.scenarios) {
        Scenario.byId(sc, o.after);
      }
      return o;
    }
  }
}
