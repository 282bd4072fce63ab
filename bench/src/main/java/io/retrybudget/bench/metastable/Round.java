package io.retrybudget.bench.metastable;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The (scenario, arm) units of a real run that run side by side, on one schedule released by one
 * {@code GO}: each unit has a backend server of its own ({@code port}) and, for a fleet-budget
 * arm, a redis-server of its own for the round ({@code redis}, an index into the run's servers;
 * -1 for none). A run is a list of rounds, one after another, in the same JVMs.
 *
 * @param clients clients of each unit's arm in the whole fleet
 */
record Round(int index, int clients, List<Unit> units) {

  /** One arm after one trigger, with its own backend server and Redis. */
  record Unit(Scenario scenario, Arm arm, int port, int redis) {
    String encode() {
      return scenario.id() + "~" + arm.id() + "~" + port + "~" + redis;
    }

    static Unit decode(String s, int afterSeconds) {
      String[] f = s.split("~");
      if (f.length != 4) {
        throw new IllegalArgumentException("unit must be scenario~arm~port~redis, was " + s);
      }
      return new Unit(Scenario.byId(f[0], afterSeconds), Arm.byId(f[1]), Integer.parseInt(f[2]),
          Integer.parseInt(f[3]));
    }

    /** The unit's name in file names and logs, e.g. {@code capacity-naive}. */
    String tag() {
      return scenario.id() + "-" + arm.id();
    }
  }

  Round {
    units = List.copyOf(units);
    if (units.isEmpty()) {
      throw new IllegalArgumentException("a round needs at least one unit");
    }
  }

  /** Seconds from the round's start to the end of its longest schedule. */
  int seconds() {
    return units.stream().mapToInt(u -> u.scenario().totalSeconds()).max().orElse(0);
  }

  /** Redis servers the round uses (the largest index + 1). */
  int redisServers() {
    return units.stream().mapToInt(Unit::redis).max().orElse(-1) + 1;
  }

  /** On one line, for a child's command line ({@link #decode}). */
  String encode() {
    StringBuilder b = new StringBuilder().append(index).append('@').append(clients).append('@');
    for (int i = 0; i < units.size(); i++) {
      b.append(i == 0 ? "" : ",").append(units.get(i).encode());
    }
    return b.toString();
  }

  static Round decode(String s, int afterSeconds) {
    String[] f = s.split("@");
    if (f.length != 3) {
      throw new IllegalArgumentException("round must be index@clients@units, was " + s);
    }
    List<Unit> units = new ArrayList<>();
    for (String u : f[2].split(",")) {
      units.add(Unit.decode(u, afterSeconds));
    }
    return new Round(Integer.parseInt(f[0]), Integer.parseInt(f[1]), units);
  }

  /**
   * The rounds that run every arm after every scenario, for each fleet size in turn, at most
   * {@code together} units side by side. The units of one fleet size are listed arm by arm
   * (each arm's scenarios next to each other; the arms in {@link #interleaved} order) and dealt
   * round robin over the fewest rounds that hold them: with {@code together} at least the number
   * of arms and two scenarios, that is one round per scenario with every arm side by side; with
   * fewer, an arm's two scenarios land in different rounds. Ports come from {@code ports}, one per
   * unit.
   */
  static List<Round> plan(int[] clients, List<String> scenarios, List<Arm> arms, int afterSeconds, int together,
      java.util.function.IntSupplier ports) {
    if (together < 1) {
      throw new IllegalArgumentException("together must be at least 1, was " + together);
    }
    List<Round> rounds = new ArrayList<>();
    for (int n : clients) {
      List<Scenario> all = new ArrayList<>();
      for (String id : scenarios) {
        all.add(Scenario.byId(id, afterSeconds));
      }
      int units = all.size() * arms.size();
      int count = (units + together - 1) / together;
      List<List<Unit>> dealt = new ArrayList<>();
      for (int r = 0; r < count; r++) {
        dealt.add(new ArrayList<>());
      }
      int i = 0;
      for (Arm arm : interleaved(arms)) {
        for (Scenario sc : all) {
          dealt.get(i++ % count).add(new Unit(sc, arm, 0, -1));
        }
      }
      for (List<Unit> us : dealt) {
        List<Unit> placed = new ArrayList<>();
        int redis = 0;
        for (Unit u : us) {
          placed.add(new Unit(u.scenario(), u.arm(), ports.getAsInt(), u.arm().fleetBudget() ? redis++ : -1));
        }
        rounds.add(new Round(rounds.size(), n, placed));
      }
    }
    return rounds;
  }

  /**
   * The arms with the first and the second half of the list alternating ({@code naive, aws,
   * finagle, fleet, grpc, fleet-server} for all six): the arms are declared from the least retry
   * control to the most, so dealing in this order spreads the arms whose storms may last (and
   * cost the machine the most) over the rounds instead of putting them together.
   */
  static List<Arm> interleaved(List<Arm> arms) {
    List<Arm> sorted = new ArrayList<>(arms);
    sorted.sort(java.util.Comparator.naturalOrder());
    List<Arm> out = new ArrayList<>();
    int half = (sorted.size() + 1) / 2;
    for (int i = 0; i < half; i++) {
      out.add(sorted.get(i));
      if (half + i < sorted.size()) {
        out.add(sorted.get(half + i));
      }
    }
    return out;
  }

  /** The units of {@code rounds} by fleet size, then scenario, then arm (in the order given). */
  static Map<Integer, Map<String, Map<Arm, Unit>>> byScenario(List<Round> rounds) {
    Map<Integer, Map<String, Map<Arm, Unit>>> m = new LinkedHashMap<>();
    for (Round r : rounds) {
      for (Unit u : r.units()) {
        m.computeIfAbsent(r.clients(), k -> new LinkedHashMap<>())
            .computeIfAbsent(u.scenario().id(), k -> new LinkedHashMap<>()).put(u.arm(), u);
      }
    }
    return m;
  }
}
