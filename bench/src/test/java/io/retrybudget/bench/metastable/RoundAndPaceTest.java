package io.retrybudget.bench.metastable;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** How a real run's units are grouped into rounds, and when its harness counts as having kept pace. */
class RoundAndPaceTest {
  private static final List<Arm> ALL = Arrays.asList(Arm.values());

  private static List<Round> plan(int together, int... clients) {
    AtomicInteger port = new AtomicInteger(40_000);
    return Round.plan(clients, List.of("capacity", "spike"), ALL, 65, together, port::getAndIncrement);
  }

  private static List<String> tags(Round r) {
    return r.units().stream().map(Round.Unit::tag).toList();
  }

  @Test
  void sixSideBySideIsOneRoundPerScenarioWithEveryArm() {
    List<Round> rounds = plan(6, 300);
    assertEquals(2, rounds.size());
    assertEquals(List.of("capacity-naive", "capacity-aws", "capacity-finagle", "capacity-fleet", "capacity-grpc",
        "capacity-fleet-server"), tags(rounds.get(0)));
    assertEquals("spike-naive", tags(rounds.get(1)).get(0));
    assertEquals(81, rounds.get(0).seconds());
    assertEquals(76, rounds.get(1).seconds());
    // each fleet-budget unit of a round has a Redis of its own; the next round reuses them
    assertEquals(List.of(-1, -1, -1, 0, -1, 1), rounds.get(0).units().stream().map(Round.Unit::redis).toList());
    assertEquals(2, rounds.get(1).redisServers());
  }

  @Test
  void fewerSideBySideSpreadsEachArmsScenariosAndTheUncontrolledArmsOverRounds() {
    List<Round> rounds = plan(4, 300);
    assertEquals(3, rounds.size());
    assertEquals(List.of("capacity-naive", "spike-aws", "capacity-fleet", "spike-grpc"), tags(rounds.get(0)));
    assertEquals(List.of("spike-naive", "capacity-finagle", "spike-fleet", "capacity-fleet-server"),
        tags(rounds.get(1)));
    assertEquals(List.of("capacity-aws", "spike-finagle", "capacity-grpc", "spike-fleet-server"), tags(rounds.get(2)));
    assertEquals(List.of(-1, -1, 0, -1), rounds.get(0).units().stream().map(Round.Unit::redis).toList());
    assertEquals(12, rounds.stream().flatMap(r -> r.units().stream()).map(Round.Unit::port).distinct().count());
    assertEquals(List.of(Arm.NAIVE, Arm.GRPC, Arm.FINAGLE), Round.interleaved(List.of(Arm.GRPC, Arm.NAIVE,
        Arm.FINAGLE)));
    assertThrows(IllegalArgumentException.class, () -> plan(0, 300));
  }

  @Test
  void eachFleetSizeHasRoundsOfItsOwnAndARoundSurvivesItsCommandLine() {
    List<Round> rounds = plan(6, 50, 1000);
    assertEquals(List.of(50, 50, 1000, 1000), rounds.stream().map(Round::clients).toList());
    assertEquals(List.of(0, 1, 2, 3), rounds.stream().map(Round::index).toList());
    for (Round r : rounds) {
      assertEquals(r, Round.decode(r.encode(), 65));
    }
    Map<Integer, Map<String, Map<Arm, Round.Unit>>> by = Round.byScenario(rounds);
    assertEquals(List.of(50, 1000), List.copyOf(by.keySet()));
    assertEquals(Round.interleaved(ALL), List.copyOf(by.get(1000).get("spike").keySet()));
  }

  private static ScenarioRun quietRun() {
    Scenario sc = new Scenario("t", 3, 2, 0.5, 1.0, 5);
    Map<Arm, PerSecond> calls = new LinkedHashMap<>();
    Map<Arm, PerSecond> server = new LinkedHashMap<>();
    for (Arm arm : List.of(Arm.NAIVE, Arm.FLEET)) {
      PerSecond c = new PerSecond(sc.totalSeconds(), CallStats.COLUMNS);
      PerSecond s = new PerSecond(sc.totalSeconds(), ServerCore.COLUMNS);
      for (int t = 0; t < sc.totalSeconds(); t++) {
        c.max(t, c.column("tick_lag_max"), 12);
        c.max(t, c.column("timer_lag_max"), 30);
        c.max(t, c.column("answer_lag_max"), 99);
        s.max(t, s.column("lag_max"), 60);
      }
      calls.put(arm, c);
      server.put(arm, s);
    }
    return new ScenarioRun(sc, Params.defaults(), calls, server, Map.of());
  }

  @Test
  void aDelayOfAServiceTimeAnywhereInTheScheduleMakesTheRunInconclusive() {
    ScenarioRun quiet = quietRun();
    Pace pace = Pace.of(quiet);
    assertTrue(pace.keptPace(), pace.describe());
    assertEquals(List.of(60L, 12L, 30L, 99L), Arrays.stream(pace.worst()).boxed().toList());
    // late in the last observed second, long after the trigger: still the machine's doing
    quiet.server().get(Arm.FLEET).max(9, ServerCore.COLUMNS.indexOf("lag_max"), 100);
    quiet.calls().get(Arm.NAIVE).max(4, CallStats.COLUMNS.indexOf("answer_lag_max"), 250);
    Pace late = Pace.of(quiet);
    assertFalse(late.keptPace());
    assertEquals(2, late.lateSeconds());
    assertTrue(late.describe().contains("naive second 4 (backend loop 60 ms, ticker 12, timers 30, answers 250)"),
        late.describe());
  }

  @Test
  void theFleetsProcessesAddUpTheirCountsAndKeepTheirLargestDelays() {
    PerSecond a = new PerSecond(2, CallStats.COLUMNS);
    PerSecond b = new PerSecond(2, CallStats.COLUMNS);
    a.add(1, a.column("first"), 70);
    b.add(1, b.column("first"), 71);
    a.max(1, a.column("tick_lag_max"), 40);
    b.max(1, b.column("tick_lag_max"), 130);
    b.max(1, b.column("answer_lag_max"), 5);
    a.max(1, a.column("answer_lag_max"), 9);
    a.addAll(b);
    assertEquals(141, a.get(1, "first"));
    assertEquals(130, a.get(1, "tick_lag_max"));
    assertEquals(9, a.get(1, "answer_lag_max"));
  }
}
