package io.retrybudget.bench.metastable;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.retry.FakeTime;
import io.retrybudget.retry.RetryOutcome;
import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;
import org.junit.jupiter.api.Test;

/** The per-client token buckets, the backend's core and the recovery rule, on exact values. */
class PolicyAndCoreTest {

  @Test
  void grpcThrottleCountsTheFailureFirstAndAllowsOnlyAboveHalf() {
    GrpcRetryThrottle t = new GrpcRetryThrottle("b", 10, 0.1);
    // tokens 10 -> 9, 8, 7, 6 allowed; 5 is not above 5
    for (int i = 0; i < 4; i++) {
      assertEquals(BudgetDecision.GRANTED, t.acquireBlocking());
    }
    assertEquals(BudgetDecision.DENIED_EXHAUSTED, t.acquireBlocking());
    assertEquals(5.0, t.tokens(), 1e-9);
    t.listener().onOutcome(RetryOutcome.MAX_ATTEMPTS, 3); // a last attempt that failed
    assertEquals(4.0, t.tokens(), 1e-9);
    for (int i = 0; i < 30; i++) {
      t.listener().onOutcome(RetryOutcome.SUCCESS, 1);
    }
    assertEquals(7.0, t.tokens(), 1e-9);
    assertThrows(IllegalArgumentException.class, () -> new GrpcRetryThrottle("b", 0, 0.1));
  }

  @Test
  void awsQuotaTakesFourteenPerRetryAndRefundsOnSuccess() {
    AwsRetryQuota q = AwsRetryQuota.defaults2026("b");
    for (int i = 0; i < 35; i++) { // 35 * 14 = 490
      assertEquals(BudgetDecision.GRANTED, q.acquireBlocking());
    }
    assertEquals(10, q.tokens());
    assertEquals(BudgetDecision.DENIED_EXHAUSTED, q.acquireBlocking());
    q.listener().onOutcome(RetryOutcome.SUCCESS, 2); // a retry that succeeded gives its cost back
    assertEquals(24, q.tokens());
    q.listener().onOutcome(RetryOutcome.SUCCESS, 1);
    assertEquals(25, q.tokens());
    q.listener().onOutcome(RetryOutcome.MAX_ATTEMPTS, 3);
    assertEquals(25, q.tokens());
    assertThrows(IllegalArgumentException.class, () -> new AwsRetryQuota("b", 10, 14, 1));
  }

  /** Timers on a fake clock for the core. */
  private static final class Clock implements ServerCore.Timers {
    long now;
    private long seq;
    private final PriorityQueue<long[]> due = new PriorityQueue<>((a, b) -> a[0] != b[0] ? Long.compare(a[0], b[0])
        : Long.compare(a[1], b[1]));
    private final List<Runnable> tasks = new ArrayList<>();

    @Override
    public long nowMillis() {
      return now;
    }

    @Override
    public void after(long delayMillis, Runnable task) {
      tasks.add(task);
      due.add(new long[] {now + delayMillis, seq++, tasks.size() - 1});
    }

    void advanceTo(long t) {
      while (!due.isEmpty() && due.peek()[0] <= t) {
        long[] d = due.poll();
        now = d[0];
        tasks.get((int) d[2]).run();
      }
      now = t;
    }
  }

  @Test
  void theCoreServesInOrderRefusesBeyondTheQueueAndCountsStaleAnswersAsWasted() {
    Clock clock = new Clock();
    PerSecond stats = new PerSecond(5, ServerCore.COLUMNS);
    ServerCore core = new ServerCore(new FifoAdmission(1, 1), clock, 0, m -> 100, stats);
    List<String> answers = new ArrayList<>();
    core.arrive(new Job(0, 1000, 1, (s, h) -> answers.add("a" + s)));
    core.arrive(new Job(0, 150, 1, (s, h) -> answers.add("b" + s))); // its caller gives up at 150
    core.arrive(new Job(0, 1000, 1, (s, h) -> answers.add("c" + s))); // the queue holds one
    assertEquals(List.of("c503"), answers);
    clock.advanceTo(1000);
    assertEquals(List.of("c503", "a200", "b200"), answers); // b served at 200, after its caller left
    assertEquals(2, stats.get(0, "processed"));
    assertEquals(1, stats.get(0, "wasted"));
    assertEquals(1, stats.get(0, "refused"));
    assertEquals(3, stats.get(0, "arrived"));
  }

  /**
   * Server-kit's queue in the core: it owns the worker, answers a request whose deadline (less the
   * margin S) passes while it waits 504 do-not-retry without serving it, sheds a request that finds
   * the queue full 503 with a pushback, and serves the rest.
   */
  @Test
  void theServerHalfDropsExpiredRequestsUnservedAndShedsWithPushback() {
    FakeTime time = new FakeTime();
    long t0 = time.nanos();
    ServerCore.Timers timers = new ServerCore.Timers() {
      @Override
      public long nowMillis() {
        return (time.nanos() - t0) / 1_000_000L;
      }

      @Override
      public void after(long delayMillis, Runnable task) {
        time.schedule(task, delayMillis * 1_000_000L);
      }
    };
    Params p = new Params(1, 100, 1, 1000, 0.7, 1, 3, 50, 1000);
    PerSecond stats = new PerSecond(5, ServerCore.COLUMNS);
    ServerCore core = new ServerCore(ServerKitAdmission.of(p, time::nanos, time, () -> 0.5), timers, 0, m -> 100,
        stats);
    List<String> answers = new ArrayList<>();
    core.arrive(new Job(0, 1000, 1, (s, h) -> answers.add("a" + s)));
    // must start by 150 - 100 (the margin): the only worker is busy until 100
    core.arrive(new Job(0, 150, 1, (s, h) -> answers.add("b" + s + " " + h.get("X-Retry-Pushback-Ms"))));
    core.arrive(new Job(0, 1000, 1, (s, h) -> answers.add("c" + s + " " + h.get("X-Retry-Pushback-Ms"))));
    // the queue holds one: c is shed; nothing has finished, so the pushback is the least base (100 ms) spread by 0.5
    assertEquals(List.of("c503 150"), answers);
    time.advance(49_000_000L);
    assertEquals(List.of("c503 150"), answers);
    time.advance(1_000_000L);
    assertEquals(List.of("c503 150", "b504 -1"), answers);
    time.advance(950_000_000L);
    assertEquals(List.of("c503 150", "b504 -1", "a200"), answers);
    assertEquals(1, stats.get(0, "processed"));
    assertEquals(0, stats.get(0, "wasted"));
    assertEquals(2, stats.get(0, "refused"));
    assertEquals(3, stats.get(0, "arrived"));
  }

  @Test
  void recoveryIsTheStartOfFiveHealthySecondsAfterTheTrigger() {
    Scenario sc = new Scenario("t", 2, 2, 0.5, 1.0, 11);
    PerSecond calls = new PerSecond(sc.totalSeconds(), CallStats.COLUMNS);
    long[] good = {100, 100, 0, 0, 0, 96, 95, 100, 100, 94, 100, 100, 100, 100, 100};
    for (int s = 0; s < good.length; s++) {
      calls.add(s, calls.column("first"), 100);
      calls.add(s, calls.column("goodput"), good[s]);
    }
    // seconds 5-8 are healthy, 9 is not (94 %), 10-14 are: recovery starts at 10, 6 s after the trigger ended at 4
    assertEquals(6, ArmSummary.recoverySeconds(sc, calls));
    calls.add(13, calls.column("goodput"), -10);
    assertEquals(-1, ArmSummary.recoverySeconds(sc, calls));
  }

  @Test
  void anArmUnhealthyBeforeTheTriggerMakesTheRunInconclusive() {
    Scenario sc = new Scenario("t", 6, 2, 0.5, 1.0, 65);
    java.util.Map<Arm, PerSecond> calls = new java.util.LinkedHashMap<>();
    java.util.Map<Arm, PerSecond> server = new java.util.LinkedHashMap<>();
    for (Arm arm : List.of(Arm.NAIVE, Arm.FLEET)) {
      PerSecond c = new PerSecond(sc.totalSeconds(), CallStats.COLUMNS);
      for (int s = 0; s < sc.totalSeconds(); s++) {
        c.add(s, c.column("first"), 100);
        c.add(s, c.column("goodput"), 100);
      }
      calls.put(arm, c);
      server.put(arm, new PerSecond(sc.totalSeconds(), ServerCore.COLUMNS));
    }
    calls.get(Arm.FLEET).add(0, 2, -100); // second 0 does not count (start-up)
    ScenarioRun run = new ScenarioRun(sc, Params.defaults(), calls, server, java.util.Map.of());
    assertEquals(List.of(), MetastableExperiment.unhealthyBeforeTrigger(run));
    calls.get(Arm.FLEET).add(5, 2, -6); // 94 % in the last healthy second
    assertEquals(List.of(Arm.FLEET), MetastableExperiment.unhealthyBeforeTrigger(run));
  }
}
