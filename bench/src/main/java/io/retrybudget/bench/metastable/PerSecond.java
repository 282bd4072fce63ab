package io.retrybudget.bench.metastable;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Counters per second of a run, one column each, and the latencies of successful calls per second.
 * Seconds outside [0, seconds) are dropped (a late answer after the run's end). Thread-safe.
 */
final class PerSecond {
  private final List<String> columns;
  private final long[][] counts;
  private final List<List<Integer>> latencies;

  PerSecond(int seconds, List<String> columns) {
    this.columns = List.copyOf(columns);
    this.counts = new long[seconds][columns.size()];
    this.latencies = new ArrayList<>(seconds);
    for (int s = 0; s < seconds; s++) {
      latencies.add(new ArrayList<>());
    }
  }

  int seconds() {
    return counts.length;
  }

  List<String> columns() {
    return columns;
  }

  int column(String name) {
    int i = columns.indexOf(name);
    if (i < 0) {
      throw new IllegalArgumentException("no column " + name + " in " + columns);
    }
    return i;
  }

  synchronized void add(int second, int column, long n) {
    if (second >= 0 && second < counts.length) {
      counts[second][column] += n;
    }
  }

  synchronized void max(int second, int column, long value) {
    if (second >= 0 && second < counts.length) {
      counts[second][column] = Math.max(counts[second][column], value);
    }
  }

  synchronized void latency(int second, int millis) {
    if (second >= 0 && second < counts.length) {
      latencies.get(second).add(millis);
    }
  }

  synchronized long get(int second, int column) {
    return counts[second][column];
  }

  synchronized long get(int second, String column) {
    return counts[second][column(column)];
  }

  /** The latencies recorded in {@code second}, sorted. */
  synchronized int[] latencies(int second) {
    int[] l = latencies.get(second).stream().mapToInt(Integer::intValue).toArray();
    Arrays.sort(l);
    return l;
  }

  /**
   * Adds another table of the same shape into this one (the fleet's JVMs into one): counts add up,
   * a column whose name ends in {@code _max} keeps the larger value.
   */
  synchronized void addAll(PerSecond other) {
    for (int s = 0; s < Math.min(seconds(), other.seconds()); s++) {
      for (int c = 0; c < columns.size(); c++) {
        int o = other.columns.indexOf(columns.get(c));
        if (o >= 0 && columns.get(c).endsWith("_max")) {
          counts[s][c] = Math.max(counts[s][c], other.get(s, o));
        } else if (o >= 0) {
          counts[s][c] += other.get(s, o);
        }
      }
      for (int l : other.latencies(s)) {
        latencies.get(s).add(l);
      }
    }
  }

  /** The {@code p}-quantile (0..1) of sorted values by nearest rank; -1 when empty. */
  static int quantile(int[] sorted, double p) {
    if (sorted.length == 0) {
      return -1;
    }
    int rank = (int) Math.ceil(p * sorted.length);
    return sorted[Math.max(0, Math.min(sorted.length - 1, rank - 1))];
  }
}
