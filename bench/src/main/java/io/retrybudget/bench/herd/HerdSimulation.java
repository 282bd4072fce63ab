package io.retrybudget.bench.herd;

import io.retrybudget.retry.Backoff;
import io.retrybudget.retry.Jitter;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.PriorityQueue;
import java.util.SplittableRandom;

/**
 * The contention experiment of "Exponential Backoff And Jitter" (Marc Brooker, AWS Architecture
 * Blog, 2015), as a discrete-event simulation in virtual time, with the delays drawn from the
 * product's own {@link Backoff}.
 *
 * <p>Model (the blog's simulator): one row with a version number on a remote server; N clients
 * start at t = 0 and each wants to update the row once with optimistic concurrency: read the
 * version, then write "if version is still v". A write whose version is stale fails; the client
 * then backs off ({@code Backoff.delayNanos(retry, previousDelay, random)}, retry 0 first) and
 * starts again with a read. Every message crosses the network with a delay |N(mean, sd)|. Counted:
 * writes ("calls", the blog's measure of work), reads, and the time until the last client has
 * its successful answer. Each run has its own seed; a mode's runs use the same seeds as the others.
 */
public final class HerdSimulation {
  private HerdSimulation() {}

  /** A backoff mode: one of our jitters, or the blog's "no backoff" reference. */
  record Mode(String name, Jitter jitter) {
    boolean backsOff() {
      return jitter != null;
    }
  }

  static final List<Mode> MODES = List.of(
      new Mode("none (no jitter)", Jitter.NONE),
      new Mode("equal", Jitter.EQUAL),
      new Mode("full", Jitter.FULL),
      new Mode("decorrelated", Jitter.DECORRELATED),
      new Mode("no backoff (reference)", null));

  record Result(long writes, long reads, long completionNanos, int maxWritesOneClient) {}

  private static final int READ_AT_SERVER = 0;
  private static final int READ_REPLY = 1;
  private static final int WRITE_AT_SERVER = 2;
  private static final int WRITE_REPLY = 3;

  /** One message in flight: arrives at {@code time}; seq breaks ties in send order (determinism). */
  private record Event(long time, long seq, int kind, int client, long payload) {}

  /** One run: {@code clients} clients, all starting at t = 0. Deterministic for a seed. */
  static Result run(int clients, Backoff backoff, long seed, long netMeanNanos, long netSdNanos) {
    SplittableRandom random = new SplittableRandom(seed);
    PriorityQueue<Event> queue = new PriorityQueue<>((a, b) -> a.time != b.time
        ? Long.compare(a.time, b.time) : Long.compare(a.seq, b.seq));
    int[] failures = new int[clients];
    long[] previousDelay = new long[clients];
    long[] seq = {0};
    long version = 0;
    long writes = 0;
    long reads = 0;
    long now = 0;
    int maxWrites = 0;
    for (int c = 0; c < clients; c++) {
      queue.add(new Event(net(random, netMeanNanos, netSdNanos), seq[0]++, READ_AT_SERVER, c, 0));
    }
    while (!queue.isEmpty()) {
      Event e = queue.poll();
      if (e.time < now) {
        throw new IllegalStateException("time went backwards");
      }
      now = e.time;
      long reply = now + net(random, netMeanNanos, netSdNanos);
      switch (e.kind) {
        case READ_AT_SERVER -> {
          reads++;
          queue.add(new Event(reply, seq[0]++, READ_REPLY, e.client, version));
        }
        case READ_REPLY -> queue.add(new Event(reply, seq[0]++, WRITE_AT_SERVER, e.client, e.payload));
        case WRITE_AT_SERVER -> {
          writes++;
          boolean ok = e.payload == version; // compare-and-set on the version read
          if (ok) {
            version++;
          }
          queue.add(new Event(reply, seq[0]++, WRITE_REPLY, e.client, ok ? 1 : 0));
        }
        case WRITE_REPLY -> {
          if (e.payload == 1) {
            maxWrites = Math.max(maxWrites, failures[e.client] + 1);
            break; // this client is done
          }
          int retry = failures[e.client]++; // 0 before the first retry, as RetryPlanner passes it
          long delay = 0;
          if (backoff != null) {
            delay = backoff.delayNanos(retry, previousDelay[e.client], random.nextDouble());
            previousDelay[e.client] = delay;
          }
          queue.add(new Event(reply + delay, seq[0]++, READ_AT_SERVER, e.client, 0));
        }
        default -> throw new IllegalStateException();
      }
    }
    if (version != clients) {
      throw new IllegalStateException("only " + version + " of " + clients + " writes succeeded");
    }
    return new Result(writes, reads, now, maxWrites);
  }

  /** Network delay of one message: |N(mean, sd)|, as in the blog's simulator. */
  private static long net(SplittableRandom random, long meanNanos, long sdNanos) {
    return Math.abs(Math.round(meanNanos + sdNanos * gaussian(random)));
  }

  /** Standard normal (Marsaglia polar method; SplittableRandom has no nextGaussian on Java 17). */
  private static double gaussian(SplittableRandom random) {
    double u;
    double v;
    double s;
    do {
      u = 2 * random.nextDouble() - 1;
      v = 2 * random.nextDouble() - 1;
      s = u * u + v * v;
    } while (s >= 1 || s == 0);
    return u * Math.sqrt(-2 * Math.log(s) / s);
  }

  /** Mean, sample standard deviation, min, max. */
  record Stats(double mean, double sd, double min, double max, int n) {
    static Stats of(double[] xs) {
      double sum = 0;
      double min = Double.MAX_VALUE;
      double max = -Double.MAX_VALUE;
      for (double x : xs) {
        sum += x;
        min = Math.min(min, x);
        max = Math.max(max, x);
      }
      double mean = sum / xs.length;
      double sq = 0;
      for (double x : xs) {
        sq += (x - mean) * (x - mean);
      }
      return new Stats(mean, Math.sqrt(sq / Math.max(1, xs.length - 1)), min, max, xs.length);
    }

    double standardError() {
      return sd / Math.sqrt(n);
    }
  }

  public static void main(String[] args) throws IOException {
    int clients = 100;
    int runs = 100;
    long seed = 1;
    double baseMs = 5;
    double capMs = 2000;
    double netMeanMs = 10;
    double netSdMs = 2;
    String out = "bench/results/herd/herd";
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      if (a.equals("--help") || a.equals("-h")) {
        System.out.println("""
            HerdSimulation [options]
              --clients N       clients contending at t=0 (100)
              --runs N          runs (seeds) per mode, at least 30 (100)
              --seed S          first seed; run k uses seed S+k, the same for every mode (1)
              --base-ms X       backoff base (5)
              --cap-ms X        backoff cap (2000)
              --net-mean-ms X   one-way network delay mean (10)
              --net-sd-ms X     its standard deviation (2)
              --out PREFIX      writes PREFIX-summary.txt and PREFIX-runs.csv (bench/results/herd/herd)""");
        return;
      }
      if (i + 1 >= args.length) {
        throw new IllegalArgumentException("missing value for " + a);
      }
      String v = args[++i];
      switch (a) {
        case "--clients" -> clients = Integer.parseInt(v);
        case "--runs" -> runs = Integer.parseInt(v);
        case "--seed" -> seed = Long.parseLong(v);
        case "--base-ms" -> baseMs = Double.parseDouble(v);
        case "--cap-ms" -> capMs = Double.parseDouble(v);
        case "--net-mean-ms" -> netMeanMs = Double.parseDouble(v);
        case "--net-sd-ms" -> netSdMs = Double.parseDouble(v);
        case "--out" -> out = v;
        default -> throw new IllegalArgumentException("unknown option " + a + " (--help)");
      }
    }
    if (runs < 30) {
      throw new IllegalArgumentException("--runs must be at least 30, was " + runs);
    }
    if (clients < 1) {
      throw new IllegalArgumentException("--clients must be positive, was " + clients);
    }
    Duration base = Duration.ofNanos(Math.round(baseMs * 1e6));
    Duration cap = Duration.ofNanos(Math.round(capMs * 1e6));
    long netMean = Math.round(netMeanMs * 1e6);
    long netSd = Math.round(netSdMs * 1e6);

    StringBuilder csv = new StringBuilder("mode,run,seed,writes,reads,completion_ms,max_writes_one_client\n");
    List<Stats[]> stats = new ArrayList<>();
    long wallStart = System.nanoTime();
    for (Mode mode : MODES) {
      Backoff backoff = mode.backsOff() ? Backoff.of(base, cap, mode.jitter()) : null;
      double[] writes = new double[runs];
      double[] reads = new double[runs];
      double[] timeMs = new double[runs];
      double[] maxWrites = new double[runs];
      for (int r = 0; r < runs; r++) {
        Result res = run(clients, backoff, seed + r, netMean, netSd);
        writes[r] = res.writes();
        reads[r] = res.reads();
        timeMs[r] = res.completionNanos() / 1e6;
        maxWrites[r] = res.maxWritesOneClient();
        csv.append(String.format(Locale.ROOT, "%s,%d,%d,%d,%d,%.3f,%d%n", mode.name(), r, seed + r, res.writes(),
            res.reads(), timeMs[r], res.maxWritesOneClient()));
      }
      stats.add(new Stats[] {Stats.of(writes), Stats.of(timeMs), Stats.of(reads), Stats.of(maxWrites)});
    }
    double wallMs = (System.nanoTime() - wallStart) / 1e6;

    StringWriter sw = new StringWriter();
    PrintWriter p = new PrintWriter(sw);
    p.printf(Locale.ROOT, "HerdSimulation %s%n", String.join(" ", args));
    p.printf(Locale.ROOT, "%d clients at t=0, one OCC row (read version, then write if unchanged), network |N(%.1f, %.1f)| ms"
        + " per message (every attempt is one read and one write),%nbackoff io.retrybudget.retry.Backoff base %s ms cap %s ms (retry 0 first), %d runs per mode"
        + " (seeds %d..%d, the same for every mode)%n%n", clients, netMeanMs, netSdMs, fmt(baseMs), fmt(capMs), runs,
        seed, seed + runs - 1);
    p.println("| mode | total calls (writes), mean | sd | min | max | time until all finish (ms), mean | sd | min | max"
        + " | most writes by one client, mean |");
    p.println("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (int m = 0; m < MODES.size(); m++) {
      Stats[] s = stats.get(m);
      p.printf(Locale.ROOT, "| %s | %.1f | %.1f | %.0f | %.0f | %.1f | %.1f | %.1f | %.1f | %.1f |%n",
          MODES.get(m).name(), s[0].mean(), s[0].sd(), s[0].min(), s[0].max(), s[1].mean(), s[1].sd(), s[1].min(),
          s[1].max(), s[3].mean());
    }
    Stats fullCalls = stats.get(2)[0];
    Stats equalCalls = stats.get(1)[0];
    double diff = equalCalls.mean() - fullCalls.mean();
    double se = Math.sqrt(Math.pow(fullCalls.standardError(), 2) + Math.pow(equalCalls.standardError(), 2));
    boolean fullBeatsEqual = fullCalls.mean() < equalCalls.mean();
    p.printf(Locale.ROOT, "%nCheck: full jitter does fewer total calls than equal jitter: %s (full %.1f vs equal %.1f,"
        + " difference %.1f = %.1f standard errors)%n", fullBeatsEqual ? "YES" : "NO", fullCalls.mean(),
        equalCalls.mean(), diff, diff / se);
    p.printf(Locale.ROOT, "Simulated in %.0f ms of wall time.%n", wallMs);
    p.flush();
    System.out.print(sw);

    Path summary = Path.of(out + "-summary.txt");
    if (summary.getParent() != null) {
      Files.createDirectories(summary.getParent());
    }
    Files.writeString(summary, sw.toString());
    Files.writeString(Path.of(out + "-runs.csv"), csv.toString());
    System.out.println("Wrote " + summary + " and " + out + "-runs.csv");
    if (!fullBeatsEqual) {
      System.exit(1);
    }
  }

  private static String fmt(double ms) {
    return ms == Math.rint(ms) ? Long.toString((long) ms) : Double.toString(ms);
  }
}
