package io.retrybudget.budget.redis.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A call of unknown fate sent again with its own number ({@link BudgetScripts#numbered},
 * {@link BudgetScripts#again}), against a real Redis: applied exactly once whether the first attempt
 * ran or not, and no attempt of a call leaves once its caller gave up.
 */
class SameNumberResendTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();

  private static final BudgetConfig SEED = BudgetConfig.builder("doubt").build();

  @Test
  void aCallThatTimedOutAndRanLaterIsNotAppliedAgain() throws Exception {
    redis.flushAll();
    try (Fixture f = new Fixture()) {
      f.scripts.budget(new BudgetCall("doubt", 1, 0, 0, 0, SEED), f.keys, f.client).get(5, TimeUnit.SECONDS);
      BudgetCall call = new BudgetCall("doubt", 5, 0, 0, 0, SEED);
      NumberedCall first;
      redis.server().pause();
      try {
        first = f.scripts.numbered(call, f.keys, f.client);
        first.reply().orTimeout(200, TimeUnit.MILLISECONDS);
        ExecutionException e = assertThrows(ExecutionException.class, () -> first.reply().get(5, TimeUnit.SECONDS));
        assertEquals(TimeoutException.class, e.getCause().getClass());
      } finally {
        redis.server().resume();
      }
      Eventually.await("the timed-out call runs once Redis wakes", Duration.ofSeconds(10),
          () -> f.requests() == 6);
      BudgetReply again = f.scripts.again(call, f.keys, f.client, first.number()).reply().get(5, TimeUnit.SECONDS);
      assertEquals(BudgetReply.STALE, again.status(), "its number was applied: the answer, never re-sent fresh");
      assertEquals(first.number(), f.client.last(), "no fresh number taken");
      assertEquals(6, f.requests(), "the 5 applied once");
    }
  }

  @Test
  void aCallWhoseFirstAttemptNeverArrivedIsAppliedWithItsNumber() throws Exception {
    redis.flushAll();
    try (Fixture f = new Fixture()) {
      f.scripts.budget(new BudgetCall("doubt", 1, 0, 0, 0, SEED), f.keys, f.client).get(5, TimeUnit.SECONDS);
      // a number handed out and lost on its way (here: taken by another budget's call): the budget never saw it
      BudgetConfig other = BudgetConfig.builder("other").build();
      f.scripts.numbered(new BudgetCall("other", 1, 0, 0, 0, other), f.scripts.keys("other"), f.client)
          .reply().get(5, TimeUnit.SECONDS);
      long lost = f.client.last();
      BudgetCall call = new BudgetCall("doubt", 5, 0, 0, 0, SEED);
      BudgetReply reply = f.scripts.again(call, f.keys, f.client, lost).reply().get(5, TimeUnit.SECONDS);
      assertEquals(BudgetReply.COUNTED, reply.status());
      assertEquals(6, f.requests());
      assertEquals(BudgetReply.STALE, f.scripts.again(call, f.keys, f.client, lost).reply().get(5, TimeUnit.SECONDS)
          .status(), "and only once");
      assertEquals(6, f.requests());
    }
  }

  @Test
  void noAttemptLeavesOnceTheCallerGaveUpNotEvenAfterAnEmptyScriptCache() throws Exception {
    redis.flushAll();
    try (Fixture f = new Fixture()) {
      f.scripts.budget(new BudgetCall("doubt", 1, 0, 0, 0, SEED), f.keys, f.client).get(5, TimeUnit.SECONDS);
      redis.flushScripts(); // the next EVALSHA is answered NOSCRIPT, which is re-sent with a new number
      BudgetCall call = new BudgetCall("doubt", 5, 0, 0, 0, SEED);
      NumberedCall first;
      redis.server().pause();
      try {
        first = f.scripts.numbered(call, f.keys, f.client);
        first.reply().orTimeout(200, TimeUnit.MILLISECONDS);
        assertThrows(ExecutionException.class, () -> first.reply().get(5, TimeUnit.SECONDS));
      } finally {
        redis.server().resume();
      }
      long number = first.number();
      // the NOSCRIPT answer arrives after the caller gave up (a read on the same connection after it:
      // its answer comes after the NOSCRIPT's, whose handling would have taken a fresh number)
      f.scripts.status("doubt", SEED).get(5, TimeUnit.SECONDS);
      assertEquals(number, f.client.last(), "no attempt with a fresh number after the caller gave up");
      assertEquals(number, first.number());
      assertEquals(1, f.requests(), "not applied");
      assertEquals(BudgetReply.COUNTED,
          f.scripts.again(call, f.keys, f.client, number).reply().get(5, TimeUnit.SECONDS).status());
      assertEquals(6, f.requests());
    }
  }

  @Test
  void aCopyThatArrivesAfterRedisForgotTheClientIsNotAppliedAgain() throws Exception {
    redis.flushAll();
    try (Fixture f = new Fixture()) {
      f.scripts.budget(new BudgetCall("doubt", 1, 0, 0, 0, SEED), f.keys, f.client).get(5, TimeUnit.SECONDS);
      BudgetCall call = new BudgetCall("doubt", 5, 0, 0, 0, SEED);
      NumberedCall first = f.scripts.numbered(call, f.keys, f.client);
      assertEquals(BudgetReply.COUNTED, first.reply().get(5, TimeUnit.SECONDS).status());
      // its entry cleaned up, as budget.lua does for a client silent two fleet epochs (or an eviction)
      redis.server().call("HDEL", f.keys.clients(), f.client.clientId());
      BudgetReply late = f.scripts.again(call, f.keys, f.client, first.number()).reply().get(5, TimeUnit.SECONDS);
      assertEquals(BudgetReply.STALE, late.status(), "no entry: a copy sent again is never applied");
      assertEquals(6, f.requests(), "the 5 once");
      assertEquals(null, redis.server().call("HGET", f.keys.clients(), f.client.clientId()), "and nothing written");
    }
  }

  @Test
  void aNumberNeverHandedOutIsRefused() throws Exception {
    try (Fixture f = new Fixture()) {
      BudgetCall call = new BudgetCall("doubt", 5, 0, 0, 0, SEED);
      assertEquals("number 1 was never handed out by client-1", assertThrows(IllegalArgumentException.class,
          () -> f.scripts.again(call, f.keys, f.client, 1)).getMessage());
    }
  }

  private static final class Fixture implements AutoCloseable {
    final RedisBudgetStore store = RedisBudgetStore.connect(redis.connectionOptions().commandTimeout(Duration.ofSeconds(2))
        .build());
    final BudgetScripts scripts = new BudgetScripts(store);
    final BudgetKeys keys = scripts.keys("doubt");
    final ClientSequence client = new ClientSequence("client-1");

    long requests() {
      return scripts.status("doubt", SEED).join().requests();
    }

    @Override
    public void close() {
      store.close();
    }
  }
}
