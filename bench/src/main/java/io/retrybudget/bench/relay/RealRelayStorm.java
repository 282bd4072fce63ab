package io.retrybudget.bench.relay;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;

/**
 * Issue 27's real-process run (bench/README.md, "Relay tier, real processes"): the storm of the
 * virtual-time run ({@link RelayStorm}) with real processes on this machine, one design after the
 * other, each on a fresh redis-server: the clients calling Redis directly (the design before the relay
 * tier) and through relay processes. Options: {@link RealRelayOptions#USAGE}. Writes
 * {@code <name>-summary.md} and {@code <name>-<design>.csv} (one row a recorded second) in the out
 * directory; the processes' logs and files stay in the work directory.
 */
public final class RealRelayStorm {
  private RealRelayStorm() {}

  public static void main(String[] args) throws Exception {
    RealRelayOptions o = RealRelayOptions.parse(args);
    Files.createDirectories(o.outDir());
    if (o.profileDir() != null) {
      Files.createDirectories(o.profileDir());
    }
    Instant started = Instant.now().truncatedTo(ChronoUnit.SECONDS);
    List<RealRelaySummary> summaries = new ArrayList<>();
    for (String design : o.designs()) {
      RealRelayRun run = new RealRelayRun(o, design).run();
      RealRelaySummary s = RealRelaySummary.of(run);
      summaries.add(s);
      RealRelaySummary.writeCsv(o.outDir().resolve(o.name() + "-" + design + ".csv"), run);
      System.out.println(RealRelaySummary.header());
      System.out.println(s.row());
      System.out.println(RealRelaySummary.costHeader());
      System.out.println(s.costRow());
    }
    writeSummary(o, args, started, summaries);
  }

  private static void writeSummary(RealRelayOptions o, String[] args, Instant started, List<RealRelaySummary> rows)
      throws IOException {
    try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(o.outDir().resolve(o.name() + "-summary.md")))) {
      w.printf("# %s: %,d clients in %d JVMs, %d relay processes, one redis-server, real time%n%n", o.name(),
          o.clients(), o.jvms(), o.relays());
      w.printf("Started %s on %d cores; %d s warm-up (not recorded), %d s healthy, %d s total outage, %d s healthy; "
          + "%d first attempts/s a client, at most %d attempts a call, a granted retry 10-100 ms later; ratio 0.1, "
          + "floor %d/s, max_calls_per_s %,d; the SDK's call timeout %d ms; relays take %,d client calls a second "
          + "a budget.%n%n", started,
          Runtime.getRuntime().availableProcessors(), o.warmupSeconds(), o.healthySeconds(), o.outageSeconds(),
          o.afterSeconds(), RelayClientMain.FIRST_PER_SECOND, RelayClientMain.MAX_ATTEMPTS, RealRelaySummary.FLOOR,
          RealRelaySummary.CEILING, o.callTimeoutMillis(), o.relayClientCalls());
      w.println("Command: RealRelayStorm " + String.join(" ", args));
      w.println();
      w.println(RealRelaySummary.header());
      rows.forEach(s -> w.println(s.row()));
      w.println();
      w.println(RealRelaySummary.costHeader());
      rows.forEach(s -> w.println(s.costRow()));
    }
  }

  /** The 1, 5 and 15 minute load averages. */
  static String loadAverage() {
    try {
      String[] f = Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+");
      return f[0] + " " + f[1] + " " + f[2];
    } catch (IOException | RuntimeException e) {
      return "?";
    }
  }
}
