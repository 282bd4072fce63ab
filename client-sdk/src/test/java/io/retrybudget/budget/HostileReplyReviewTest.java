package io.retrybudget.budget;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.retrybudget.budget.redis.protocol.BudgetCall;
import io.retrybudget.budget.redis.protocol.BudgetReply;
import io.retrybudget.budget.redis.protocol.ClientSequence;
import io.retrybudget.budget.redis.protocol.RelayHeld;
import io.retrybudget.budget.redis.protocol.RelayTag;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.function.IntFunction;
import org.junit.jupiter.api.Test;

/**
 * Review: a reply is input like any other. Random hostile values in every field of budget.lua's reply
 * (ratio, floor, fleet, ceilings, available, next_ms, refill, granted; an unknown status), through a
 * plain port and through a relay-like port (tagged replies, so AskAhead acts): every acquire() completes
 * normally within the call timeout, no flush or timer task throws.
 */
class HostileReplyReviewTest {
  private static final long[] LONGS = {-1, -5, 0, 1, 3, Long.MAX_VALUE, Long.MIN_VALUE, Long.MAX_VALUE / 2,
      Integer.MAX_VALUE, Integer.MIN_VALUE, 1_000_000_000_000L};
  private static final int[] INTS = {-1, -5, 0, 1, 7, Integer.MAX_VALUE, Integer.MIN_VALUE, 3_601};
  private static final String[] STATUSES = {BudgetReply.GRANTED, BudgetReply.DENIED, BudgetReply.SHADOW,
      BudgetReply.COUNTED, BudgetReply.STALE, BudgetReply.MISSING};

  /** Which fields are made hostile. */
  enum Field { STATUS, GRANTED, ACTIVE, RATIO, WINDOW, MIN_RPS, MODE, AVAILABLE, NEXT, REFILL, MAX_CALLS, CEILING }

  private static final class HostilePort implements FleetRegistry.Port {
    final ModelStore store;
    final Random rnd;
    final List<Field> fields;
    final boolean relay;
    final double hostileShare;
    long batch;
    final List<String> told = new ArrayList<>();

    HostilePort(ModelStore store, Random rnd, List<Field> fields, boolean relay, double hostileShare) {
      this.store = store;
      this.rnd = rnd;
      this.fields = fields;
      this.relay = relay;
      this.hostileShare = hostileShare;
    }

    long l(Field f, long v) {
      return fields.contains(f) && rnd.nextDouble() < hostileShare ? LONGS[rnd.nextInt(LONGS.length)] : v;
    }

    int i(Field f, int v) {
      return fields.contains(f) && rnd.nextDouble() < hostileShare ? INTS[rnd.nextInt(INTS.length)] : v;
    }

    BudgetReply hostile(BudgetReply r) {
      String status = fields.contains(Field.STATUS) && rnd.nextDouble() < hostileShare
          ? (rnd.nextBoolean() ? STATUSES[rnd.nextInt(STATUSES.length)] : "weird") : r.status();
      String mode = fields.contains(Field.MODE) && rnd.nextDouble() < hostileShare
          ? (rnd.nextBoolean() ? "shadow" : "") : r.mode();
      BudgetReply h = new BudgetReply(status, l(Field.GRANTED, r.granted()), r.requests(), r.retries(), r.denied(),
          r.allowance(), l(Field.ACTIVE, r.activeClients()), l(Field.RATIO, r.ratioPpm()),
          i(Field.WINDOW, r.windowSeconds()), i(Field.MIN_RPS, r.minRetriesPerSecond()), mode,
          l(Field.AVAILABLE, r.available()), l(Field.NEXT, r.nextGrantMillis()), l(Field.REFILL, r.refillPpm()),
          i(Field.MAX_CALLS, r.maxCallsPerSecond()), i(Field.CEILING, r.callCeiling()));
      if (told.size() < 10_000) {
        told.add(h.toString());
      }
      return h;
    }

    @Override
    public CompletableFuture<BudgetReply> budget(BudgetCall call, ClientSequence sequence) {
      return store.budget(call, sequence).thenApply(this::hostile);
    }

    @Override
    public FleetRegistry.Sent send(BudgetCall call, ClientSequence sequence, CallsInDoubt offered,
        IntFunction<RelayHeld.Offer> held) {
      if (!relay) {
        return FleetRegistry.Port.super.send(call, sequence, offered, held);
      }
      CompletableFuture<BudgetReply> reply = budget(call, sequence);
      long b = ++batch;
      RelayTag tag = new RelayTag("relay-model", b, b, true);
      return new FleetRegistry.Sent(reply, 0, () -> FleetRegistry.Sent.UNKNOWN, false, () -> false,
          RelayHeld.Offer.NONE, () -> reply.isDone() && !reply.isCompletedExceptionally() ? tag : null, () -> -1);
    }
  }

  /** One schedule; a description of the first failure, or null. */
  private static String run(long seed, List<Field> fields, boolean relay, FallbackPolicy policy) {
    Random rnd = new Random(seed);
    FakeEngine e = new FakeEngine(20, policy, () -> rnd.nextDouble());
    HostilePort port = new HostilePort(e.store, rnd, fields, relay, 0.3 + 0.7 * rnd.nextDouble());
    e.portInstead = port;
    List<RedisRetryBudget> budgets = new ArrayList<>();
    for (int k = 0; k < 3; k++) {
      budgets.add(e.budget(BudgetConfig.builder("hostile").ratio(0.2).windowSeconds(10).minRetriesPerSecond(2).build()));
    }
    try {
      e.advanceMillis(600);
      for (int step = 0; step < 300; step++) {
        RedisRetryBudget b = budgets.get(rnd.nextInt(budgets.size()));
        int firsts = rnd.nextInt(4);
        for (int f = 0; f < firsts; f++) {
          b.recordFirstAttempt();
        }
        List<CompletableFuture<BudgetDecision>> asks = new ArrayList<>();
        int n = rnd.nextInt(3);
        for (int a = 0; a < n; a++) {
          try {
            asks.add(b.acquire().toCompletableFuture());
          } catch (RuntimeException ex) {
            return "step " + step + ": acquire() threw " + ex + " after " + last(port);
          }
        }
        try {
          e.advanceMillis(1 + rnd.nextInt(300));
        } catch (RuntimeException ex) {
          return "step " + step + ": a timer task threw " + ex + " after " + last(port);
        }
        for (CompletableFuture<BudgetDecision> d : asks) {
          if (!d.isDone()) {
            return "step " + step + ": an acquire() still open after the call timeout, after " + last(port);
          }
          if (d.isCompletedExceptionally()) {
            Throwable t = d.handle((v, x) -> x).join();
            return "step " + step + ": acquire() completed exceptionally: " + t + " after " + last(port);
          }
        }
        if (rnd.nextInt(50) == 0) {
          BudgetDecision d = b.acquireBlocking(); // must not throw either
          if (d == null) {
            return "step " + step + ": acquireBlocking() null";
          }
        }
      }
    } finally {
      // (no close(): it waits on real time for calls that complete on fake time)
    }
    return null;
  }

  private static String last(HostilePort port) {
    return port.told.isEmpty() ? "(none)" : port.told.get(port.told.size() - 1);
  }

  private static void runAll(List<Field> fields, int schedules) {
    List<String> failures = new ArrayList<>();
    for (long seed = 1; seed <= schedules; seed++) {
      for (boolean relay : new boolean[] {false, true}) {
        for (FallbackPolicy policy : new FallbackPolicy[] {FallbackPolicy.LOCAL, FallbackPolicy.DENY}) {
          String f;
          try {
            f = run(seed, fields, relay, policy);
          } catch (RuntimeException ex) {
            f = "threw " + ex;
          }
          if (f != null) {
            failures.add("seed " + seed + (relay ? " relay " : " redis ") + policy + " " + fields + ": " + f);
          }
        }
      }
    }
    if (!failures.isEmpty()) {
      fail(failures.size() + " failing schedules; first: " + failures.get(0));
    }
  }

  /** Every numeric field hostile (the status and mode as budget.lua says). */
  @Test
  void hostileNumbersNeverMakeAnAcquireThrowOrHang() {
    runAll(List.of(Field.GRANTED, Field.ACTIVE, Field.RATIO, Field.WINDOW, Field.MIN_RPS, Field.MODE, Field.AVAILABLE,
        Field.NEXT, Field.REFILL, Field.MAX_CALLS, Field.CEILING), 40);
  }

  /** Each numeric field alone. */
  @Test
  void eachHostileFieldAlone() {
    List<String> failures = new ArrayList<>();
    for (Field f : Field.values()) {
      if (f == Field.STATUS) {
        continue;
      }
      try {
        runAll(List.of(f), 15);
      } catch (AssertionError a) {
        failures.add(f + ": " + a.getMessage());
      }
    }
    assertTrue(failures.isEmpty(), String.join("\n", failures));
  }

  /** An unknown status (or "counted") to a permit request. */
  @Test
  void anUnknownStatusNeverMakesAnAcquireThrow() {
    runAll(List.of(Field.STATUS), 20);
  }

  @Test
  void sanity() {
    assertEquals(null, run(1, List.of(), true, FallbackPolicy.LOCAL));
  }
}
