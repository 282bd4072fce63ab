package io.retrybudget.bench.relay;

import java.nio.file.Path;
import java.util.List;

/**
 * The real-process relay run ({@link RealRelayStorm}): {@code clients} clients in {@code jvms} client
 * JVMs, {@code relays} relay processes (the coordinator's shaded jar run with {@code COORDINATOR_MODE=relay})
 * and one redis-server; each design in {@code designs} ({@code direct}: the clients' connections go to
 * Redis; {@code relay}: client JVM j's goes to relay j mod relays) runs alone on a fresh Redis.
 *
 * <p>The SDK's call timeout is 250 ms by default here (the SDK's own default is 20 ms): on this shared
 * 2-core machine a client JVM of 5,000 budgets waits longer than 20 ms for its event loop at load 15
 * and up, and a fleet deciding from its LOCAL fallback is not what this run measures (the decisions'
 * latency is measured all the same; {@code --call-timeout-ms 20} runs the default).
 *
 * <p>{@code --relay-client-calls} is each relay's {@code COORDINATOR_RELAY_CLIENT_CALLS} (default
 * 4,000 here; the relay's own default, 100,000, is for a host of its own): the calls a second a relay
 * takes from one budget's clients, which sets how often they flush and how many of their asks they
 * send. At 100,000 the 20,000 clients' 500 ms ticks alone made 40,000 calls a second, more than this
 * machine's 2 cores answer; at 5,000 (18,000 a second) the outage's onset fell behind, at 4,000 (14,300)
 * it kept pace. The warm-up (default 60 s) lets the JIT compile the flush path before the
 * record starts (with 10 s its compilers took 1.1-1.3 of the 2 cores in the recorded seconds).
 */
record RealRelayOptions(int clients, int jvms, int relays, List<String> designs, int warmupSeconds,
    int healthySeconds, int outageSeconds, int afterSeconds, long callTimeoutMillis, String name, Path outDir,
    Path workDir, Path coordinatorJar, String clientHeap, String relayHeap, Path profileDir, int relayClientCalls) {

  static final String USAGE = "options: --clients 20000 --jvms 4 --relays 4 --designs direct,relay --warmup 60 "
      + "--healthy 10 --outage 30 --after 10 --call-timeout-ms 250 --name relay27-real --out-dir bench/results/relay "
      + "--work-dir bench/target/relay-real --coordinator-jar <coordinator's shaded jar> --client-heap 768m --relay-heap 384m --relay-client-calls 4000 [--profile-dir <dir>: a JFR recording of every client JVM and relay]";

  static RealRelayOptions parse(String[] args) {
    int clients = 20_000;
    int jvms = 4;
    int relays = 4;
    List<String> designs = List.of("direct", "relay");
    int warmup = 60;
    int healthy = 10;
    int outage = 30;
    int after = 10;
    long timeout = 250;
    String name = "relay27-real";
    Path out = Path.of("bench/results/relay");
    Path work = Path.of("bench/target/relay-real");
    Path jar = null;
    String clientHeap = "768m";
    String relayHeap = "384m";
    Path profile = null;
    int relayClientCalls = 4_000;
    for (int i = 0; i < args.length; i += 2) {
      if (i + 1 >= args.length) {
        throw new IllegalArgumentException(args[i] + " needs a value; " + USAGE);
      }
      String v = args[i + 1];
      switch (args[i]) {
        case "--clients" -> clients = positive("--clients", v);
        case "--jvms" -> jvms = positive("--jvms", v);
        case "--relays" -> relays = positive("--relays", v);
        case "--designs" -> designs = List.of(v.split(","));
        case "--warmup" -> warmup = positive("--warmup", v);
        case "--healthy" -> healthy = positive("--healthy", v);
        case "--outage" -> outage = positive("--outage", v);
        case "--after" -> after = positive("--after", v);
        case "--call-timeout-ms" -> timeout = positive("--call-timeout-ms", v);
        case "--name" -> name = v;
        case "--out-dir" -> out = Path.of(v);
        case "--work-dir" -> work = Path.of(v);
        case "--coordinator-jar" -> jar = Path.of(v);
        case "--client-heap" -> clientHeap = v;
        case "--relay-heap" -> relayHeap = v;
        case "--profile-dir" -> profile = Path.of(v);
        case "--relay-client-calls" -> relayClientCalls = positive("--relay-client-calls", v);
        default -> throw new IllegalArgumentException("unknown option " + args[i] + "; " + USAGE);
      }
    }
    for (String d : designs) {
      if (!d.equals("direct") && !d.equals("relay")) {
        throw new IllegalArgumentException("--designs takes direct and relay, was " + d);
      }
    }
    if (designs.contains("relay") && (jar == null || !java.nio.file.Files.isRegularFile(jar))) {
      throw new IllegalArgumentException("--coordinator-jar must name the coordinator's shaded jar, was " + jar);
    }
    return new RealRelayOptions(clients, jvms, relays, designs, warmup, healthy, outage, after, timeout, name, out,
        work, jar, clientHeap, relayHeap, profile, relayClientCalls);
  }

  private static int positive(String option, String v) {
    int n = Integer.parseInt(v);
    if (n < 1) {
      throw new IllegalArgumentException(option + " must be at least 1, was " + v);
    }
    return n;
  }

  /**
   * The JVM options that record a child JVM with Java Flight Recorder ({@code settings=profile}) into
   * {@code <profile dir>/<design>-<process>.jfr}, none without {@code --profile-dir}. A profiled run
   * is for finding where CPU goes; its figures are not the product's (the recorder costs CPU too).
   */
  java.util.List<String> profileOptions(String design, String process) {
    if (profileDir == null) {
      return List.of();
    }
    Path file = profileDir.toAbsolutePath().resolve(design + "-" + process + ".jfr");
    return List.of("-XX:StartFlightRecording=filename=" + file + ",settings=profile,dumponexit=true");
  }

  /** Recorded seconds (the warm-up not included). */
  int seconds() {
    return healthySeconds + outageSeconds + afterSeconds;
  }

  /** Clients of client JVM {@code j}. */
  int clientsOf(int j) {
    return clients / jvms + (j < clients % jvms ? 1 : 0);
  }
}
