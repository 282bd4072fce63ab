package io.retrybudget.coordinator.relay;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.redis.protocol.BudgetCall;
import io.retrybudget.budget.redis.protocol.BudgetReply;
import io.retrybudget.budget.redis.protocol.CallExtras;
import io.retrybudget.relay.RelaySettings;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/** The host's budgets on fake time, with a hand-driven upstream and event loop. */
class RelayBudgetsTest {
  private long now = 1_000_000;
  private final List<CompletableFuture<BudgetReply>> sent = new ArrayList<>();
  private final List<BudgetCall> calls = new ArrayList<>();
  private final List<Long> numbers = new ArrayList<>(); // the number each call went with
  private long lastNumber;
  private final Queue<Runnable> loop = new ArrayDeque<>();
  private final RelayBudgets budgets = new RelayBudgets(RelaySettings.defaults(), 2, () -> now, () -> 0.5,
      new RelayBudgets.Upstream() {
        @Override
        public RelayBudgets.Sent send(BudgetCall call, CallExtras extras) {
          return record(call, ++lastNumber);
        }

        @Override
        public RelayBudgets.Sent again(BudgetCall call, long number, CallExtras extras) {
          return record(call, number);
        }
      }, loop::add, "relay-test");

  private RelayBudgets.Sent record(BudgetCall call, long number) {
    calls.add(call);
    numbers.add(number);
    CompletableFuture<BudgetReply> f = new CompletableFuture<>();
    sent.add(f);
    return new RelayBudgets.Sent(f, () -> number);
  }

  private static RelayCall call(String budget, String client, long seq, long requests, long need) {
    return new RelayCall(client, seq, new BudgetCall(budget, requests, 0, 0, need, need, BudgetConfig.builder(budget).build()));
  }

  private static BudgetReply stale() {
    return new BudgetReply("stale", 0, 7, 0, 0, 100, 1, 100_000, 10, 10, "enforce", 50, 0, 10_000_000, 2000);
  }

  private static BudgetReply counted(long requests) {
    return new BudgetReply("counted", 0, requests, 0, 0, 100, 1, 100_000, 10, 10, "enforce", 50, 0, 10_000_000, 2000);
  }

  @Test
  void aBudgetsFirstCallGoesToRedisAtOnceAndItsAnswerComesBackOnTheLoop() {
    budgets.call(call("a", "c1", 1, 5, 0));
    assertEquals(1, calls.size(), "the first client's call is due at once");
    assertEquals(5, calls.get(0).requests());
    budgets.call(call("a", "c1", 2, 3, 0));
    budgets.tick();
    assertEquals(1, calls.size(), "one call in flight per budget");
    sent.get(0).complete(counted(5));
    assertTrue(budgets.relay("a").pendingRequests() > 0 && loop.size() == 1, "the answer waits for the loop");
    loop.poll().run();
    now += 600; // past the longest upstream interval
    budgets.tick();
    assertEquals(2, calls.size());
    assertEquals(3, calls.get(1).requests(), "the next call carries what came after");
    assertEquals(2, budgets.upstreamCalls());
  }

  @Test
  void aCallOfUnknownFateGoesAgainWithItsOwnNumberAndNothingElse() {
    budgets.call(call("a", "c1", 1, 7, 0));
    budgets.call(call("b", "c1", 1, 2, 0)); // another budget takes a number meanwhile
    sent.get(0).completeExceptionally(new java.util.concurrent.TimeoutException());
    loop.poll().run();
    assertEquals(1, budgets.upstreamFailures());
    assertEquals(0, budgets.relay("a").lostRequests(), "in doubt, not lost");
    assertTrue(budgets.relay("a").inDoubt());
    budgets.call(call("a", "c1", 2, 3, 0));
    now += 600;
    budgets.tick();
    int again = calls.size() - 1;
    while (!calls.get(again).name().equals("a")) {
      again--;
    }
    assertEquals(7, calls.get(again).requests(), "the same call: what came after waits");
    assertEquals(1L, numbers.get(again), "with the number it went with, not a fresh one");
    // Redis had applied the first: the second is stale, and the 7 are not sent a third time
    sent.get(again).complete(stale());
    loop.poll().run();
    assertFalse(budgets.relay("a").inDoubt());
    now += 600;
    budgets.tick();
    BudgetCall next = calls.get(calls.size() - 1);
    assertEquals("a", next.name());
    assertEquals(3, next.requests(), "only what came after");
    assertTrue(numbers.get(calls.size() - 1) > 2, "a fresh number again");
    assertEquals(0, budgets.relay("a").lostRequests());
  }

  @Test
  void theNumberKeptIsTheOneTheCallLastWentWithReadWhenItFailed() {
    java.util.concurrent.atomic.AtomicLong last = new java.util.concurrent.atomic.AtomicLong(41);
    List<Long> again = new ArrayList<>();
    RelayBudgets host = new RelayBudgets(RelaySettings.defaults(), 2, () -> now, () -> 0.5,
        new RelayBudgets.Upstream() {
          @Override
          public RelayBudgets.Sent send(BudgetCall call, CallExtras extras) {
            CompletableFuture<BudgetReply> f = new CompletableFuture<>();
            sent.add(f);
            return new RelayBudgets.Sent(f, last::get);
          }

          @Override
          public RelayBudgets.Sent again(BudgetCall call, long number, CallExtras extras) {
            again.add(number);
            return new RelayBudgets.Sent(new CompletableFuture<>(), () -> number);
          }
        }, loop::add, "relay-test");
    host.call(call("a", "c1", 1, 7, 0));
    last.set(42); // an empty script cache: sent again with a fresh number, then it timed out
    sent.get(0).completeExceptionally(new java.util.concurrent.TimeoutException());
    loop.poll().run();
    now += 600;
    host.tick();
    assertEquals(List.of(42L), again, "the number of its last attempt, not its first");
  }

  @Test
  void aCallInDoubtRefusedUnsentStaysInDoubt() {
    budgets.call(call("a", "c1", 1, 7, 0));
    sent.get(0).completeExceptionally(new IllegalStateException("Connection closed"));
    loop.poll().run();
    now += 600;
    budgets.tick();
    sent.get(1).completeExceptionally(new io.lettuce.core.RedisException("Currently not connected."));
    loop.poll().run();
    assertTrue(budgets.relay("a").inDoubt(), "its first may have been applied: its counts never go with a fresh number");
    assertEquals(0, budgets.relay("a").pendingRequests());
    now += 600;
    budgets.tick();
    assertEquals(List.of(1L, 1L, 1L), numbers);
    sent.get(2).complete(counted(7));
    loop.poll().run();
    assertFalse(budgets.relay("a").inDoubt());
  }

  @Test
  void aCallRefusedUnwrittenKeepsItsCountsForTheNext() {
    budgets.call(call("a", "c1", 1, 7, 0));
    sent.get(0).completeExceptionally(new java.util.concurrent.CompletionException(
        new io.lettuce.core.RedisException("Request queue size exceeded: 4096. Commands are not accepted until the queue size drops.")));
    loop.poll().run();
    assertEquals(1, budgets.upstreamFailures());
    assertEquals(0, budgets.relay("a").lostRequests(), "never run: nothing lost");
    budgets.call(call("a", "c1", 2, 3, 0));
    now += 600;
    budgets.tick();
    assertEquals(10, calls.get(calls.size() - 1).requests(), "the refused call's 7 go with the next");
  }

  @Test
  void anUpstreamThatThrowsIsAFailedCallNotAnEscapingError() {
    RelayBudgets throwing = new RelayBudgets(RelaySettings.defaults(), 2, () -> now, () -> 0.5,
        new RelayBudgets.Upstream() {
          @Override
          public RelayBudgets.Sent send(BudgetCall call, CallExtras extras) {
            throw new IllegalStateException("closed");
          }

          @Override
          public RelayBudgets.Sent again(BudgetCall call, long number, CallExtras extras) {
            throw new IllegalStateException("closed");
          }
        }, Runnable::run, "relay-test");
    BudgetReply reply = throwing.call(call("a", "c1", 1, 7, 0));
    assertEquals("counted", reply.status());
    assertEquals(1, throwing.upstreamFailures());
  }

  @Test
  void budgetsAreBounded() {
    budgets.call(call("a", "c1", 1, 1, 0));
    budgets.call(call("b", "c1", 1, 1, 0));
    assertEquals("this relay serves at most 2 budgets",
        assertThrows(IllegalStateException.class, () -> budgets.call(call("c", "c1", 1, 1, 0))).getMessage());
    assertEquals(2, budgets.size());
    assertFalse(budgets.relay("a") == null || budgets.relay("b") == null);
  }
}
