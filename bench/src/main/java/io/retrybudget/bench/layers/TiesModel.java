package io.retrybudget.bench.layers;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.SplittableRandom;

/**
 * {@link TiesBench}'s setting in virtual time, so the cost of a tie claim can be isolated from the
 * machine: two replicas, each a FIFO served by one worker (service U[1, 3] ms; with probability
 * {@code --pause-probability} the worker stalls {@code --pause-ms} before it starts a copy), Poisson
 * arrivals, a one-way network delay, and a tie claim that takes a round trip of {@code claim-ms}
 * (exponentially distributed with that mean; the claim that reaches Redis first wins). Every mode
 * sees the same arrivals, service times, stalls and claim times (common random numbers), so a
 * difference between modes is the modes'. Modes as in {@link TiesBench}: {@code neither},
 * {@code hedged} (second copy after {@code --hedge-ms}; a copy whose call was answered is dropped
 * when it reaches a worker), {@code tied-held} (the worker waits for its copy's claim),
 * {@code tied/k} (the worker is free while the claim is out: claims run ahead of the worker, at most
 * {@code k} copies claimed and not yet executing, {@code --claim-ahead 1,2,4}).
 * A program, not a test; prints and writes {@code -summary.txt}.
 */
public final class TiesModel {
  private TiesModel() {}

  record Settings(double rate, int requests, double pauseProbability, double pauseMs, double hedgeMs, double tieDelayMs,
      double netMs, long seed) {}

  /** What a run measured: latencies (ms) of every request, executions, and worker time by use. */
  record Outcome(double[] latencies, long executions, double busyMs, double heldLostMs, double heldWonMs, double endMs) {}

  /** One event on the timeline: {@code at} ms, then insertion order. */
  record Event(double at, long seq, Runnable action) implements Comparable<Event> {
    @Override
    public int compareTo(Event o) {
      int c = Double.compare(at, o.at);
      return c != 0 ? c : Long.compare(seq, o.seq);
    }
  }

  static final class Sim {
    final PriorityQueue<Event> events = new PriorityQueue<>();
    double now;
    long seq;

    void at(double time, Runnable action) {
      events.add(new Event(time, seq++, action));
    }

    void run() {
      Event e;
      while ((e = events.poll()) != null) {
        now = e.at;
        e.action.run();
      }
    }
  }

  /** The random draws of one request: its arrival, first replica, and per copy service, stall, claim. */
  record Draws(double arrival, int first, double[] service, boolean[] stall, double[] claim) {}

  static List<Draws> draws(Settings s, double claimMeanMs) {
    SplittableRandom r = new SplittableRandom(s.seed());
    List<Draws> all = new ArrayList<>(s.requests());
    double t = 0;
    for (int i = 0; i < s.requests(); i++) {
      t += -Math.log(1 - r.nextDouble()) * 1000.0 / s.rate();
      double[] service = {1 + 2 * r.nextDouble(), 1 + 2 * r.nextDouble()};
      boolean[] stall = {r.nextDouble() < s.pauseProbability(), r.nextDouble() < s.pauseProbability()};
      double[] claim = {-Math.log(1 - r.nextDouble()) * claimMeanMs, -Math.log(1 - r.nextDouble()) * claimMeanMs};
      all.add(new Draws(t, r.nextInt(2), service, stall, claim));
    }
    return all;
  }

  /** A copy of request {@code id} (copy 0 or 1) at a replica. */
  static final class Copy {
    final int id;
    final int copy;

    Copy(int id, int copy) {
      this.id = id;
      this.copy = copy;
    }
  }

  static Outcome run(String mode, Settings s, List<Draws> d, int claimAhead) {
    Sim sim = new Sim();
    int n = d.size();
    double[] answered = new double[n];
    Arrays.fill(answered, Double.NaN);
    boolean[] tieTaken = new boolean[n];
    long[] executions = {0};
    double[] busy = {0};
    double[] heldLost = {0};
    double[] heldWon = {0};
    boolean tied = mode.startsWith("tied");
    boolean held = !mode.equals("tied");
    final class Replica {
      final ArrayDeque<Copy> queue = new ArrayDeque<>();
      final ArrayDeque<Copy> ready = new ArrayDeque<>();
      boolean workerBusy;
      int claiming;

      void arrive(Copy c) {
        queue.add(c);
        pump();
      }

      boolean stalled; // the worker stalls before it starts (claims) a copy: nothing runs meanwhile

      void pump() {
        if (held || !tied) {
          while (!workerBusy) {
            Copy c = queue.poll();
            if (c == null) {
              return;
            }
            workerBusy = true;
            double stall = d.get(c.id).stall()[c.copy] ? s.pauseMs() : 0;
            sim.at(sim.now + stall, () -> {
              busy[0] += stall;
              if (!tied) {
                if (!Double.isNaN(answered[c.id])) { // a hedge whose call was answered: dropped, no work
                  workerBusy = false;
                  pump();
                  return;
                }
                executeHeld(c);
              } else {
                claim(c, true);
              }
            });
          }
          return;
        }
        if (stalled) {
          return;
        }
        if (!workerBusy && !ready.isEmpty()) {
          execute(ready.poll());
        }
        // the claims run ahead of the worker, at most claimAhead copies claimed and not yet executing
        while (!queue.isEmpty() && claiming + ready.size() < claimAhead) {
          Copy c = queue.poll();
          if (d.get(c.id).stall()[c.copy]) {
            stalled = true;
            sim.at(sim.now + s.pauseMs(), () -> {
              busy[0] += s.pauseMs();
              stalled = false;
              claim(c, false);
              pump();
            });
            return;
          }
          claim(c, false);
        }
      }

      /** The claim reaches Redis after half its round trip: the first to arrive wins. */
      void claim(Copy c, boolean holding) {
        double rtt = d.get(c.id).claim()[c.copy];
        double sent = sim.now;
        if (!holding) {
          claiming++;
        }
        sim.at(sent + rtt / 2, () -> {
          boolean won = !tieTaken[c.id];
          tieTaken[c.id] = true;
          sim.at(sent + rtt, () -> {
            if (holding) {
              (won ? heldWon : heldLost)[0] += rtt;
              busy[0] += rtt;
              if (won) {
                executeHeld(c);
              } else {
                workerBusy = false;
                pump();
              }
              return;
            }
            claiming--;
            if (won) {
              ready.add(c);
            }
            pump();
          });
        });
      }

      void execute(Copy c) {
        workerBusy = true;
        executeHeld(c);
      }


      /** The worker (already busy) does the work, answers, takes more. */
      void executeHeld(Copy c) {
        double service = d.get(c.id).service()[c.copy];
        executions[0]++;
        sim.at(sim.now + service, () -> {
          busy[0] += service;
          double back = sim.now + s.netMs();
          sim.at(back, () -> {
            if (Double.isNaN(answered[c.id])) {
              answered[c.id] = back - d.get(c.id).arrival();
            }
          });
          workerBusy = false;
          pump();
        });
      }
    }
    Replica[] replicas = {new Replica(), new Replica()};
    for (int i = 0; i < n; i++) {
      int id = i;
      Draws r = d.get(i);
      sim.at(r.arrival() + s.netMs(), () -> replicas[r.first()].arrive(new Copy(id, 0)));
      if (!mode.equals("neither")) {
        double delay = tied ? s.tieDelayMs() : s.hedgeMs();
        // sent when the call has no answer yet at the delay (the client's timer)
        sim.at(r.arrival() + delay, () -> {
          if (Double.isNaN(answered[id])) {
            sim.at(sim.now + s.netMs(), () -> replicas[1 - r.first()].arrive(new Copy(id, 1)));
          }
        });
      }
    }
    sim.run();
    return new Outcome(answered, executions[0], busy[0], heldLost[0], heldWon[0], sim.now);
  }

  static double pct(double[] sorted, double p) {
    int i = (int) Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1);
    return sorted[Math.max(0, i)];
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> o = LayersBench.options(args);
    Settings s = new Settings(Double.parseDouble(o.getOrDefault("rate", "200")),
        Integer.parseInt(o.getOrDefault("requests", "200000")),
        Double.parseDouble(o.getOrDefault("pause-probability", "0.01")),
        Double.parseDouble(o.getOrDefault("pause-ms", "50")),
        Double.parseDouble(o.getOrDefault("hedge-ms", "10")),
        Double.parseDouble(o.getOrDefault("tie-delay-ms", "1")),
        Double.parseDouble(o.getOrDefault("net-ms", "0.1")),
        Long.parseLong(o.getOrDefault("seed", "42")));
    List<String> modes = List.of(o.getOrDefault("modes", "neither,hedged,tied-held,tied").split(","));
    Path out = Path.of(o.getOrDefault("out", "bench/results/layers/ties-model"));
    if (out.getParent() != null) {
      Files.createDirectories(out.getParent());
    }
    StringBuilder summary = new StringBuilder(String.format("ties in virtual time: 2 replicas, FIFO with 1 worker each, service "
        + "U[1,3] ms, a %.0f ms stall with probability %.3f before a worker starts a copy, Poisson %.0f requests/s, %d requests, "
        + "one-way network %.2f ms, tie delay %.1f ms, hedge delay %.0f ms, seed %d; claim: exponential round trip of the "
        + "mean given; tied/k: claims run ahead of the worker, at most k copies claimed and not executing; busy: worker "
        + "utilization; held: share of worker time waiting for claims, lost / won%n",
        s.pauseMs(), s.pauseProbability(), s.rate(), s.requests(), s.netMs(), s.tieDelayMs(), s.hedgeMs(), s.seed()));
    summary.append(String.format("%-9s %-9s %9s %9s %10s %11s %7s %15s%n", "claim ms", "mode", "p50 ms", "p99 ms", "p99.9 ms",
        "extra work", "busy", "held lost/won"));
    List<Integer> aheads = Arrays.stream(o.getOrDefault("claim-ahead", "1,2,4").split(",")).map(Integer::parseInt).toList();
    for (String c : o.getOrDefault("claim-ms", "0.3,1,2,3,4").split(",")) {
      double claimMs = Double.parseDouble(c);
      List<Draws> d = draws(s, claimMs);
      List<String> labels = new ArrayList<>();
      for (String mode : modes) {
        if (!mode.startsWith("tied") && !c.equals(o.getOrDefault("claim-ms", "0.3,1,2,3,4").split(",")[0])) {
          continue; // untied modes ask no claim: once is enough
        }
        if (mode.equals("tied")) {
          aheads.forEach(k -> labels.add("tied/" + k));
        } else {
          labels.add(mode);
        }
      }
      for (String label : labels) {
        String mode = label.startsWith("tied/") ? "tied" : label;
        int ahead = label.startsWith("tied/") ? Integer.parseInt(label.substring(5)) : 1;
        Outcome r = run(mode, s, d, ahead);
        double[] sorted = Arrays.stream(r.latencies()).filter(x -> !Double.isNaN(x)).sorted().toArray();
        double capacity = 2 * r.endMs();
        String line = String.format("%-9s %-9s %9.2f %9.2f %10.2f %11.3f %6.1f%% %15s%n",
            mode.startsWith("tied") ? c : "-", label, pct(sorted, 0.5), pct(sorted, 0.99), pct(sorted, 0.999),
            r.executions() / (double) s.requests() - 1, 100 * r.busyMs() / capacity,
            mode.equals("tied-held") ? String.format("%.1f%%/%.1f%%", 100 * r.heldLostMs() / capacity,
                100 * r.heldWonMs() / capacity) : "-");
        summary.append(line);
        System.out.print(line);
      }
    }
    Files.writeString(Path.of(out + "-summary.txt"), summary);
  }
}
