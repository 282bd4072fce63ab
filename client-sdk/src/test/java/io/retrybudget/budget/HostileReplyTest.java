package io.retrybudget.budget;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.redis.protocol.BudgetCall;
import io.retrybudget.budget.redis.protocol.BudgetReply;
import io.retrybudget.budget.redis.protocol.ClientSequence;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * A reply is input like any other: a relay (or a script of another version) that says the window is 0,
 * negative or absurdly long never makes a budget's calls throw to its caller. Before, a window of 0
 * reached {@code ResendCounts}, which divides the window into buckets, and every acquire threw.
 */
class HostileReplyTest {
  /** The store's replies with {@code windowSeconds} in place of the window. */
  private static final class WindowPort implements FleetRegistry.Port {
    private final ModelStore store;
    private final int windowSeconds;

    WindowPort(ModelStore store, int windowSeconds) {
      this.store = store;
      this.windowSeconds = windowSeconds;
    }

    @Override
    public CompletableFuture<BudgetReply> budget(BudgetCall call, ClientSequence sequence) {
      return store.budget(call, sequence).thenApply(r -> new BudgetReply(r.status(), r.granted(), r.requests(),
          r.retries(), r.denied(), r.allowance(), r.activeClients(), r.ratioPpm(), windowSeconds,
          r.minRetriesPerSecond(), r.mode(), r.available(), r.nextGrantMillis(), r.refillPpm(), r.maxCallsPerSecond()));
    }
  }

  @Test
  void aReplysWindowOutsideItsRangeNeverMakesACallThrow() {
    for (int window : new int[] {0, -5, Integer.MIN_VALUE, 1, 3_601, Integer.MAX_VALUE}) {
      FakeEngine e = new FakeEngine(20, FallbackPolicy.LOCAL, () -> 0.5);
      e.portInstead = new WindowPort(e.store, window);
      RedisRetryBudget b = e.budget(BudgetConfig.builder("hostile").ratio(0.5).windowSeconds(10).build());
      e.advanceMillis(1_000); // its hello is answered: the window is learned
      int decided = 0;
      for (int i = 0; i < 50; i++) {
        b.recordFirstAttempt();
        CompletableFuture<BudgetDecision> d = assertDoesNotThrow(() -> b.acquire().toCompletableFuture(),
            "window " + window);
        e.advanceMillis(200);
        assertTrue(d.isDone(), "window " + window + ": an acquire still open");
        decided++;
      }
      assertTrue(decided == 50 && !b.isDegraded(), "window " + window + ": every ask decided, Redis healthy");
    }
  }
}
