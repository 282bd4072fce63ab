package io.retrybudget.budget;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.redis.protocol.BudgetReply;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

/**
 * Review of {@link AskAhead}'s sampled-out rule: random schedules of one client's asks through a
 * relay-like port (sampled fleets of various sizes, pools said to hold 0, a few or what the store
 * says), with replies refused, late or lost, window changes and closes; each step checked against the
 * history of decisions and what the store handed out and counted.
 */
class SampledAheadReviewTest {
  private static final int[] FLEETS = {0, 500, 5_000, 20_000};
  private static final int[] CEILINGS = {1_000, 4_000};
  private static final long[] AVAILABLE = {-1, 0, 3};
  private static final int[] FLOORS = {0, 1, 5, 100};

  enum Faults { NONE, REFUSED, LATE_AND_LOST }

  /** One schedule's history. */
  private static final class History {
    final List<BudgetDecision> decisions = new ArrayList<>();
    long plainGrants; // GRANTED: a permit the store handed out
    long refusals; // not granted, or GRANTED_SHADOW (a refusal in shadow mode)
    long grantedAfterClose;
    String first; // the first broken invariant

    void fail(String what) {
      if (first == null) {
        first = what;
      }
    }
  }

  private static long[] delivery(SplittableRandom r, Faults f) {
    int x = r.nextInt(100);
    if (f == Faults.REFUSED && x < 6) {
      return new long[] {ModelStore.Delivery.REFUSED.ordinal(), r.nextInt(0, 5)};
    }
    if (f == Faults.LATE_AND_LOST && x < 4) {
      return new long[] {ModelStore.Delivery.LOST.ordinal(), 0};
    }
    if (f == Faults.LATE_AND_LOST && x < 10) {
      return new long[] {ModelStore.Delivery.LATE.ordinal(), r.nextInt(25, 400)};
    }
    return new long[] {ModelStore.Delivery.FAST.ordinal(), r.nextInt(0, 15)};
  }

  /** A random schedule; {@code shadow}: replies as a relay in shadow mode says. Returns its history. */
  private static History schedule(long seed, Faults faults, boolean sampled, boolean shadow, boolean close) {
    SplittableRandom r = new SplittableRandom(seed);
    SplittableRandom engineRandom = new SplittableRandom(seed * 7919 + 17);
    FakeEngine e = new FakeEngine(20, FallbackPolicy.LOCAL, engineRandom::nextDouble);
    int fleet = sampled ? FLEETS[1 + r.nextInt(FLEETS.length - 1)] : 0;
    RelayLikePort relay = new RelayLikePort(e.store, fleet, CEILINGS[r.nextInt(CEILINGS.length)],
        fleet == 0 ? -1 : AVAILABLE[r.nextInt(AVAILABLE.length)]);
    e.portInstead = shadow ? new ShadowPort(relay) : relay;
    int window = r.nextBoolean() ? 10 : 60;
    e.store.configure(r.nextInt(20_000, 200_000), window, FLOORS[r.nextInt(FLOORS.length)],
        BudgetConfig.DEFAULT_MAX_CALLS_PER_SECOND);
    SplittableRandom faultRandom = new SplittableRandom(seed * 31 + 5);
    e.store.faults(() -> delivery(faultRandom, faults));
    RedisRetryBudget b = e.budget(BudgetConfig.builder("review").ratio(0.1).windowSeconds(window).build());
    e.advanceMillis(1_000);
    long deniedBefore = e.store.deniedCounted;
    History h = new History();
    int closeAt = close ? r.nextInt(50, 300) : Integer.MAX_VALUE;
    boolean closed = false;
    for (int step = 0; step < 300; step++) {
      if (step == closeAt) {
        b.beginClose(); // with whatever ask is on its way
        closed = true;
      }
      if (r.nextInt(60) == 0) { // the operator changes the window mid-flight
        e.store.configure(e.store.ratioPpm, r.nextBoolean() ? 10 : 60, e.store.minRetriesPerSecond,
            e.store.maxCallsPerSecond);
      }
      int firsts = r.nextInt(0, 4);
      for (int i = 0; i < firsts; i++) {
        b.recordFirstAttempt();
      }
      int burst = r.nextInt(10) == 0 ? r.nextInt(2, 6) : 1;
      List<CompletableFuture<BudgetDecision>> asks = new ArrayList<>();
      for (int i = 0; i < burst; i++) {
        asks.add(b.acquire().toCompletableFuture());
      }
      int gap = r.nextInt(10);
      e.advanceMillis(gap < 6 ? r.nextInt(30, 400) : gap < 9 ? r.nextInt(400, 2_900) : r.nextInt(3_000, 6_000));
      for (CompletableFuture<BudgetDecision> d : asks) {
        if (!d.isDone()) {
          h.fail("step " + step + ": an acquire still open");
          continue;
        }
        BudgetDecision decision = d.join();
        h.decisions.add(decision);
        if (decision.reason() == BudgetDecision.Reason.GRANTED) {
          h.plainGrants++;
          if (closed) {
            h.grantedAfterClose++;
          }
        }
        if (!decision.granted() || decision.reason() == BudgetDecision.Reason.GRANTED_SHADOW) {
          h.refusals++;
        }
        if (shadow && !decision.granted()) {
          h.fail("step " + step + ": shadow mode answered " + decision);
        }
      }
      if (h.plainGrants > e.store.permitsGranted) {
        h.fail("step " + step + ": " + h.plainGrants + " grants used of " + e.store.permitsGranted + " handed out");
      }
      if (h.grantedAfterClose > 0) {
        h.fail("step " + step + ": granted after close");
      }
    }
    // settle: every reply in time again, the last counts flushed
    e.store.faults(() -> new long[] {ModelStore.Delivery.FAST.ordinal(), 0});
    e.advanceMillis(30_000);
    if (!closed) {
      b.close();
      e.advanceMillis(5_000);
    }
    long denied = e.store.deniedCounted - deniedBefore;
    // each refusal counted once, or dropped with counts kept longer than the window; and each denial
    // the relay counted for an ask in the background that no decision stood for and no later refusal
    // was set against, once more
    long[] accounts = b.refusalAccounts();
    if (!closed && faults != Faults.LATE_AND_LOST && denied + accounts[0] != h.refusals + accounts[1]) {
      h.fail(denied + " denials counted (" + accounts[0] + " dropped as stale) for " + h.refusals + " refusals ("
          + accounts[1] + " denials no refusal stood for; decided ahead " + b.decidedAhead() + ")");
    }
    return h;
  }

  private static void check(String name, Faults faults, boolean sampled, boolean shadow, boolean close, int seeds) {
    int failed = 0;
    StringBuilder examples = new StringBuilder();
    for (long seed = 0; seed < seeds; seed++) {
      History h = schedule(seed, faults, sampled, shadow, close);
      if (h.first != null && failed++ < 4) {
        examples.append("seed ").append(seed).append(": ").append(h.first).append('\n');
      }
    }
    assertEquals(0, failed, name + ": " + failed + " of " + seeds + " schedules broke a promise, e.g.\n" + examples);
  }

  @Test
  void unsampledRelayWithoutFaults() {
    check("unsampled, no faults", Faults.NONE, false, false, false, 150);
  }

  @Test
  void sampledFleetsWithoutFaults() {
    check("sampled, no faults", Faults.NONE, true, false, false, 150);
  }

  @Test
  void unsampledRelayWithRefusedCalls() {
    check("unsampled, refused calls", Faults.REFUSED, false, false, false, 150);
  }

  @Test
  void sampledFleetsWithRefusedCalls() {
    check("sampled, refused calls", Faults.REFUSED, true, false, false, 150);
  }

  @Test
  void sampledFleetsWithLateAndLostRepliesNeverUseMoreGrantsThanHandedOut() {
    check("sampled, late and lost", Faults.LATE_AND_LOST, true, false, false, 150);
  }

  @Test
  void sampledFleetsClosedMidFlightGrantNothingAfterTheClose() {
    check("sampled, closed", Faults.LATE_AND_LOST, true, false, true, 150);
  }

  @Test
  void sampledFleetsInShadowModeNeverRefuse() {
    check("sampled, shadow", Faults.NONE, true, true, false, 100);
  }

  /** A relay-like port whose budget is in shadow mode: refusals come back as shadow grants. */
  private static final class ShadowPort implements FleetRegistry.Port {
    private final RelayLikePort relay;

    ShadowPort(RelayLikePort relay) {
      this.relay = relay;
    }

    private static BudgetReply shadow(BudgetReply r) {
      boolean denied = BudgetReply.DENIED.equals(r.status());
      return new BudgetReply(denied ? BudgetReply.SHADOW : r.status(), denied ? 1 : r.granted(), r.requests(), r.retries(),
          r.denied(), r.allowance(), r.activeClients(), r.ratioPpm(), r.windowSeconds(), r.minRetriesPerSecond(),
          BudgetMode.SHADOW.wireName(), r.available(), r.nextGrantMillis(), r.refillPpm(), r.maxCallsPerSecond(),
          r.callCeiling());
    }

    @Override
    public CompletableFuture<BudgetReply> budget(io.retrybudget.budget.redis.protocol.BudgetCall call,
        io.retrybudget.budget.redis.protocol.ClientSequence sequence) {
      return relay.budget(call, sequence).thenApply(ShadowPort::shadow);
    }

    @Override
    public FleetRegistry.Sent send(io.retrybudget.budget.redis.protocol.BudgetCall call,
        io.retrybudget.budget.redis.protocol.ClientSequence sequence, CallsInDoubt offered,
        java.util.function.IntFunction<io.retrybudget.budget.redis.protocol.RelayHeld.Offer> held) {
      FleetRegistry.Sent s = relay.send(call, sequence, offered, held);
      CompletableFuture<BudgetReply> reply = s.reply().thenApply(ShadowPort::shadow);
      return new FleetRegistry.Sent(reply, s.way(), s.number(), s.carried(), s.judged(), s.held(), s.tag(), s.connection());
    }
  }

  // ---- the lone retry and the client of Redis directly

  /** A port as Redis directly (no relay tag) telling a fleet of {@code clients} (so asks are sampled). */
  private static FleetRegistry.Port direct(ModelStore store, long clients) {
    UnaryOperator<BudgetReply> big = r -> new BudgetReply(r.status(), r.granted(), r.requests(), r.retries(), r.denied(),
        r.allowance(), clients, r.ratioPpm(), r.windowSeconds(), r.minRetriesPerSecond(), r.mode(), r.available(),
        r.nextGrantMillis(), r.refillPpm(), r.maxCallsPerSecond());
    return (call, sequence) -> store.budget(call, sequence).thenApply(big);
  }

  @Test
  void aSampledClientOfRedisDirectlyNeverDecidesAhead() {
    for (long seed = 0; seed < 50; seed++) {
      SplittableRandom r = new SplittableRandom(seed);
      FakeEngine e = new FakeEngine(20, FallbackPolicy.LOCAL, new SplittableRandom(seed + 99)::nextDouble);
      e.portInstead = direct(e.store, 5_000);
      e.store.configure(100_000, 10, FLOORS[r.nextInt(FLOORS.length)], 4_000);
      e.store.replyAfter(5);
      RedisRetryBudget b = e.budget(BudgetConfig.builder("direct").ratio(0.1).windowSeconds(10).build());
      e.advanceMillis(1_000);
      int sampledOut = 0;
      for (int i = 0; i < 200; i++) {
        b.recordFirstAttempt();
        CompletableFuture<BudgetDecision> d = b.acquire().toCompletableFuture();
        boolean atOnce = d.isDone();
        e.advanceMillis(r.nextInt(50, 500));
        if (atOnce && d.join().reason() == BudgetDecision.Reason.DENIED_EXHAUSTED_CACHED) {
          sampledOut++;
        }
      }
      assertTrue(sampledOut > 0, "seed " + seed + ": the schedule sampled");
      assertEquals(0, b.decidedAhead(), "seed " + seed + ": a client of Redis directly decided ahead");
    }
  }

  @Test
  void aLoneRetryThroughASampledRelayIsNeverDecidedAhead() {
    for (long seed = 0; seed < 50; seed++) {
      SplittableRandom r = new SplittableRandom(seed);
      FakeEngine e = new FakeEngine(20, FallbackPolicy.LOCAL, new SplittableRandom(seed + 7)::nextDouble);
      e.portInstead = new RelayLikePort(e.store, 5_000, 4_000, -1);
      e.store.configure(100_000, 10, 100, 4_000); // permits to spare
      e.store.replyAfter(5);
      RedisRetryBudget b = e.budget(BudgetConfig.builder("lone").ratio(0.1).windowSeconds(10).build());
      e.advanceMillis(1_000);
      for (int i = 0; i < 40; i++) {
        for (int k = r.nextInt(0, 5); k > 0; k--) {
          b.recordFirstAttempt();
        }
        CompletableFuture<BudgetDecision> d = b.acquire().toCompletableFuture();
        e.advanceMillis(AskAhead.ACTIVE_MILLIS + r.nextInt(0, 2_000));
        assertTrue(d.isDone());
      }
      assertEquals(0, b.decidedAhead(), "seed " + seed + ": a client asking less often than once in 3 s decided ahead");
    }
  }

  /** With permits to spare and a fleet whose asks are not sampled, every lone retry is granted. */
  @Test
  void aLoneRetryOnABudgetWithPermitsToSpareIsGranted() {
    for (long seed = 0; seed < 50; seed++) {
      SplittableRandom r = new SplittableRandom(seed);
      FakeEngine e = new FakeEngine(20, FallbackPolicy.LOCAL, new SplittableRandom(seed + 3)::nextDouble);
      e.portInstead = new RelayLikePort(e.store, 50, 4_000, -1);
      e.store.configure(100_000, 10, 100, 4_000);
      e.store.replyAfter(5);
      RedisRetryBudget b = e.budget(BudgetConfig.builder("lone").ratio(0.1).windowSeconds(10).build());
      e.advanceMillis(1_000);
      for (int i = 0; i < 40; i++) {
        b.recordFirstAttempt();
        CompletableFuture<BudgetDecision> d = b.acquire().toCompletableFuture();
        e.advanceMillis(AskAhead.ACTIVE_MILLIS + r.nextInt(0, 2_000));
        assertEquals(BudgetDecision.Reason.GRANTED, d.join().reason(), "seed " + seed + " ask " + i);
      }
    }
  }
}
