package io.retrybudget.budget.redis.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Which failed budget calls no one ran ({@link BudgetScripts#neverRun}), against real Lettuce and a
 * real Redis: a call Lettuce refuses because its request queue is full was never written, so its
 * counts may go again; a call that timed out in flight may still run (here it does, once Redis wakes),
 * so its counts may not.
 */
class RefusedCallTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();

  @Test
  void aCallRefusedUnwrittenWasNeverRunAndOneThatTimedOutInFlightRanLater() throws Exception {
    redis.flushAll();
    RedisBudgetStore store = RedisBudgetStore.connect(redis.connectionOptions().requestQueueSize(1)
        .commandTimeout(Duration.ofSeconds(2)).build());
    try {
      BudgetScripts scripts = new BudgetScripts(store);
      BudgetConfig seed = BudgetConfig.builder("refused").build();
      ClientSequence client = new ClientSequence("client-1");
      // the script cached first: a NOSCRIPT re-send would take the queue's one place (and the store's
      // own commands on connect may hold it a moment: refused until they are done, as this test says)
      Eventually.await("a first call through the queue of one", Duration.ofSeconds(10),
          () -> scripts.budget(new BudgetCall("refused", 1, 0, 0, 0, seed), client).handle((r, e) -> e == null).join());
      CompletableFuture<BudgetReply> inFlight;
      CompletableFuture<BudgetReply> refused;
      redis.server().pause();
      try {
        inFlight = scripts.budget(new BudgetCall("refused", 5, 0, 0, 0, seed), client);
        refused = scripts.budget(new BudgetCall("refused", 7, 0, 0, 0, seed), client);
        ExecutionException e = assertThrows(ExecutionException.class, () -> refused.get(5, TimeUnit.SECONDS));
        // Lettuce refuses it unwritten: its queue of one is full, or (when the first call left the queue
        // for the connection's stack before this one came) its stack of one is
        String why = e.getCause().getMessage();
        assertTrue(why.startsWith("Request queue size exceeded") || why.startsWith("Internal stack size exceeded"),
            e.getCause().toString());
        assertTrue(BudgetScripts.neverRun(e.getCause()), "refused unwritten: " + e.getCause());
        ExecutionException t = assertThrows(ExecutionException.class, () -> inFlight.get(10, TimeUnit.SECONDS));
        assertFalse(BudgetScripts.neverRun(t.getCause()), "timed out in flight: " + t.getCause());
      } finally {
        redis.server().resume();
      }
      // the call that timed out ran once Redis woke; the refused one never did
      // (a read refused by the queue of one while the timed-out call still waits for its answer: not yet)
      Eventually.await("Redis counts the timed-out call's 5", Duration.ofSeconds(10),
          () -> scripts.status("refused", seed).handle((r, e) -> e == null && r.requests() >= 6).join());
      long primed = scripts.status("refused", seed).get(5, TimeUnit.SECONDS).requests() - 5;
      assertEquals(1, primed, "the first call's 1, and the timed-out call's 5 (never the refused call's 7)");
    } finally {
      store.close();
    }
    assertFalse(BudgetScripts.neverRun(new RuntimeException("Request queue size exceeded")), "only Lettuce's");
    assertFalse(BudgetScripts.neverRun(new io.lettuce.core.RedisException("Connection closed")),
        "a connection lost with the call in flight");
    assertTrue(BudgetScripts.neverRun(new java.util.concurrent.CompletionException(
        new io.lettuce.core.RedisException("Currently not connected. Commands are rejected."))));
    // a relay of another SDK version refuses budget.lua unrun (RelaySession, coordinator)
    assertTrue(BudgetScripts.refusedAsOtherVersion(new io.lettuce.core.RedisCommandExecutionException("ERR this relay runs budget.lua"
        + " only (sha 1234), not script sha 5678: a budget.lua of another version; a relay and its clients must run the"
        + " same SDK version")));
    assertFalse(BudgetScripts.refusedAsOtherVersion(new io.lettuce.core.RedisCommandExecutionException(
        "ERR user_script:12: Script attempted to access nonexistent global variable")), "a script's error: it ran");
    assertFalse(BudgetScripts.neverRun(new io.lettuce.core.RedisCommandExecutionException("ERR this relay runs budget.lua"
        + " only (sha 1234), not script sha 5678")), "kept only by a client with other ways (BudgetLink)");
  }
}
