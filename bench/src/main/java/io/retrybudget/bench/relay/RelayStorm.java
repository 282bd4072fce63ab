package io.retrybudget.bench.relay;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Issue 27's virtual-time experiment: for each fleet size, the clients calling Redis directly (the
 * design before the relay tier) and through relays, side by side, on fake time (bench/README.md,
 * "Relay tier, virtual time"). Options: {@code --sizes 1000,10000,100000} {@code --designs direct,relay}
 * {@code --clients-per-relay 25000} {@code --fault none|kill|restart|cut} {@code --name relay27}
 * {@code --out-dir bench/results/relay}. Writes {@code <name>-summary.md} and, per run,
 * {@code <name>-<clients>-<design>.csv} (one row a recorded second).
 */
public final class RelayStorm {
  private RelayStorm() {}

  public static void main(String[] args) throws IOException {
    List<Integer> sizes = List.of(1_000, 10_000, 100_000);
    List<String> designs = List.of("direct", "relay");
    int perRelay = 25_000;
    String fault = "none";
    String name = "relay27";
    Path out = Path.of("bench/results/relay");
    for (int i = 0; i < args.length; i += 2) {
      String v = i + 1 < args.length ? args[i + 1] : "";
      switch (args[i]) {
        case "--sizes" -> sizes = parseInts(v);
        case "--designs" -> designs = List.of(v.split(","));
        case "--clients-per-relay" -> perRelay = Integer.parseInt(v);
        case "--fault" -> fault = v;
        case "--name" -> name = v;
        case "--out-dir" -> out = Path.of(v);
        default -> throw new IllegalArgumentException("unknown option " + args[i] + " (see RelayStorm's Javadoc)");
      }
    }
    Files.createDirectories(out);
    List<String> rows = new ArrayList<>();
    for (int n : sizes) {
      for (String design : designs) {
        int relays = "direct".equals(design) ? 0 : relaysFor(n, perRelay);
        RelayStormOptions o = RelayStormOptions.storm(n, relays).withFault(fault, 10);
        System.out.printf("%,d clients, %s ...%n", n, o.design());
        RelayStormRun run = new RelayStormRun(o).run();
        RelayStormSummary s = RelayStormSummary.of(run);
        rows.add(s.row());
        System.out.println(RelayStormSummary.header());
        System.out.println(s.row());
        writeCsv(out.resolve(name + "-" + n + "-" + (relays == 0 ? "direct" : "relay") + ".csv"), run);
      }
    }
    try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(out.resolve(name + "-summary.md")))) {
      w.println("# " + name + ": one budget, 2 first attempts/s a client, 30 s total outage, virtual time");
      w.println();
      w.println("Fault: " + fault + ". Relays: max(2, ceil(clients / " + perRelay + ")). Command: RelayStorm "
          + String.join(" ", args));
      w.println();
      w.println(RelayStormSummary.header());
      rows.forEach(w::println);
    }
  }

  /** The relays for {@code clients}: one per {@code perRelay} clients, at least 2 (so a client has a second to go to). */
  static int relaysFor(int clients, int perRelay) {
    return Math.max(2, (clients + perRelay - 1) / perRelay);
  }

  private static List<Integer> parseInts(String v) {
    List<Integer> l = new ArrayList<>();
    for (String s : v.split(",")) {
      l.add(Integer.parseInt(s.trim()));
    }
    return l;
  }

  private static void writeCsv(Path file, RelayStormRun run) throws IOException {
    long[] calls = RelayStormSummary.callsPerRecordedSecond(run);
    try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(file))) {
      w.println("second,first_attempts,retries_granted,ratio,redis_calls,lag_s,local_decisions,remote_decisions");
      for (int s = 0; s < run.first.length; s++) {
        long remote = run.redisDecisions[s];
        for (long[] r : run.relayDecisions) {
          remote += r[s];
        }
        w.printf("%d,%d,%d,%.4f,%d,%.3f,%d,%d%n", s, run.first[s], run.grants[s],
            run.first[s] == 0 ? 0.0 : run.grants[s] / (double) run.first[s], calls[s], run.lagSeconds[s],
            run.localDecisions[s], remote);
      }
    }
  }
}
