package io.retrybudget.budget;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * Review: each refusal counted once, on schedules picked to reach {@link AskAhead}'s paths one at a time
 * (a relay's client whose asks are sampled; the engine's random decides each sampling).
 */
class SampledAheadCountReviewTest {
  private double next = 0.99; // the engine's next random number: high, sampled out; 0, sampled in
  private final Deque<long[]> deliveries = new ArrayDeque<>();

  private FakeEngine sampledRelay() {
    FakeEngine e = new FakeEngine(20, FallbackPolicy.LOCAL, () -> next);
    e.portInstead = new RelayLikePort(e.store, 5_000, 4_000, 3); // its clients sample their asks
    e.store.configure(100_000, 10, 1, BudgetConfig.DEFAULT_MAX_CALLS_PER_SECOND);
    e.store.faults(() -> deliveries.isEmpty() ? new long[] {ModelStore.Delivery.FAST.ordinal(), 5} : deliveries.poll());
    return e;
  }

  /** One ask sampled out, then one sampled in 100 ms later whose ask in the background comes to {@code fate}. */
  private long deniedCountedFor(long[] fate, FakeEngine e, RedisRetryBudget b) {
    for (int i = 0; i < 10; i++) {
      b.recordFirstAttempt(); // asks are sampled: 5,000 clients x 1 a second > 4,000 / 3
    }
    long denied = e.store.deniedCounted;
    long calls = e.store.calls;
    next = 0.99;
    CompletableFuture<BudgetDecision> first = b.acquire().toCompletableFuture();
    assertEquals(BudgetDecision.Reason.DENIED_EXHAUSTED_CACHED, first.join().reason(), "sampled out");
    assertEquals(calls, e.store.calls);
    e.advanceMillis(100);
    next = 0.0;
    deliveries.add(fate);
    CompletableFuture<BudgetDecision> second = b.acquire().toCompletableFuture();
    assertTrue(second.isDone(), "decided ahead: refused at once");
    assertEquals(BudgetDecision.Reason.DENIED_EXHAUSTED_CACHED, second.join().reason());
    assertEquals(1, b.decidedAhead());
    next = 0.99;
    e.advanceMillis(30_000); // replies in time again, the counts flushed
    b.close();
    e.advanceMillis(5_000);
    return e.store.deniedCounted - denied;
  }

  private RedisRetryBudget budget(FakeEngine e) {
    RedisRetryBudget b = e.budget(BudgetConfig.builder("count").ratio(0.1).windowSeconds(10).build());
    e.advanceMillis(1_000);
    assertTrue(b.viaRelay());
    return b;
  }

  @Test
  void aRefusalAtOnceWhoseAskIsRefusedUnsentIsCounted() {
    FakeEngine e = sampledRelay();
    RedisRetryBudget b = budget(e);
    long denied = deniedCountedFor(new long[] {ModelStore.Delivery.REFUSED.ordinal(), 1}, e, b);
    assertEquals(2, denied, "two refusals (one sampled out, one at once whose ask never ran)");
  }

  @Test
  void aRefusalAtOnceWhoseAskIsGrantedLateIsCounted() {
    FakeEngine e = sampledRelay();
    RedisRetryBudget b = budget(e);
    long granted = e.store.permitsGranted;
    long denied = deniedCountedFor(new long[] {ModelStore.Delivery.LATE.ordinal(), 100}, e, b);
    assertTrue(e.store.permitsGranted > granted, "the late ask was granted");
    assertEquals(2, denied, "two refusals (one sampled out, one at once whose ask was granted after the timeout)");
  }

  /** As AskAheadTest's storm, asks 1.2 s apart: a refusal is reused at most 1 s. */
  @Test
  void aStormWithAsksFurtherApartThanARefusalIsReusedCountsEachRefusalOnce() {
    FakeEngine e = new FakeEngine(20, FallbackPolicy.LOCAL, () -> 0.5);
    e.portInstead = new RelayLikePort(e.store);
    e.store.configure(100_000, 10, 1, BudgetConfig.DEFAULT_MAX_CALLS_PER_SECOND);
    e.store.replyAfter(5);
    RedisRetryBudget b = budget(e);
    long denied = e.store.deniedCounted;
    int refused = 0;
    int asks = 200;
    for (int i = 0; i < asks; i++) {
      b.recordFirstAttempt();
      CompletableFuture<BudgetDecision> d = b.acquire().toCompletableFuture();
      e.advanceMillis(1_200);
      if (!d.join().granted()) {
        refused++;
      }
    }
    e.advanceMillis(30_000);
    b.close();
    e.advanceMillis(5_000);
    long counted = e.store.deniedCounted - denied;
    assertTrue(counted >= refused && counted <= refused + 1, counted + " denials counted for " + refused
        + " refusals of " + asks + " asks (decided ahead " + b.decidedAhead() + ")");
  }
}
