package io.retrybudget.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A claim whose reply is lost: Redis paused (SIGSTOP) beyond the store's timeout, so the claim is
 * made when Redis resumes but its holder has already given up (and answered 503). The key must not
 * stay IN_PROGRESS for the whole lease: the store undoes the claim it never heard back about.
 */
class ClaimReplyTimeoutTest {
  @RegisterExtension
  static final RedisExtension redis = RedisExtension.standalone();

  private RedisBudgetStore connection;
  private ClaimStore store;

  @BeforeEach
  void connect() {
    // Lettuce's own timeout far above the store's: the store's bound is what fires
    connection = RedisBudgetStore.connect(redis.connectionOptions().commandTimeout(Duration.ofSeconds(20)).build());
    store = new ClaimStore(connection, Duration.ofMillis(300));
    store.claim(ClaimStore.idempotencyKey("warm", UUID.randomUUID().toString()), "fp", Duration.ofSeconds(1)).join();
  }

  @AfterEach
  void close() {
    redis.server().resume(); // whatever happened, never leave it stopped
    connection.close();
  }

  /** Claims with Redis paused; resumes once the claim has failed on this side. */
  private CompletionException claimWhilePaused(String key, boolean abandon) {
    redis.server().pause();
    CompletableFuture<Claim> claim;
    try {
      claim = store.claim(key, "fp", Duration.ofSeconds(60), abandon);
      return assertThrows(CompletionException.class, claim::join);
    } finally {
      redis.server().resume();
    }
  }

  @Test
  void aClaimMadeAfterItsHolderGaveUpIsUndoneNotLeftForTheLease() {
    String key = ClaimStore.idempotencyKey("caller", "POST", "/payments", UUID.randomUUID().toString());
    CompletionException e = claimWhilePaused(key, true);
    assertInstanceOf(TimeoutException.class, e.getCause());
    assertEquals(1, store.unansweredClaims());
    // a lease of 60 s: without the undo every claim below is busy for a minute
    Eventually.await("the lost claim is undone", Duration.ofSeconds(10), () -> store.unansweredClaimsAbandoned() == 1);
    Claim.Claimed next = assertInstanceOf(Claim.Claimed.class, store.claim(key, "fp", Duration.ofSeconds(60)).join(),
        "the retry of the request claims the key at once");
    assertFalse(next.takeover(), "the lost claim was deleted, not left to lapse");
    assertTrue(store.release(next).join());
  }

  @Test
  void throughTheGuardTheRetryAfterThe503Executes() {
    IdempotencyConfig config = IdempotencyConfig.builder().handlerTimeout(Duration.ofSeconds(30)).build();
    try (IdempotencyGuard guard = new IdempotencyGuard(store, config)) {
      String key = UUID.randomUUID().toString();
      redis.server().pause();
      IdempotencyGuard.Begin first;
      try {
        first = guard.begin(IdempotencyLeaseTest.post(key)).join();
      } finally {
        redis.server().resume();
      }
      IdempotencyGuard.Answer unavailable = assertInstanceOf(IdempotencyGuard.Answer.class, first);
      assertEquals(503, unavailable.response().status(), "fail closed: the client is told to retry");
      long took = Eventually.await("the retry executes", Duration.ofSeconds(10),
          () -> guard.begin(IdempotencyLeaseTest.post(key)).join() instanceof IdempotencyGuard.Execute x
              && guard.abandon(x.execution()) != null);
      assertTrue(took < 10_000, "not a lease of 35 s: " + took + " ms");
    }
  }

  @Test
  void aTieClaimIsKeptTheCopyThatLostItsReplyRunsAndTheOtherMustNot() {
    String key = ClaimStore.tieKey(UUID.randomUUID().toString());
    claimWhilePaused(key, false);
    Eventually.await("Redis ran the claim", Duration.ofSeconds(10),
        () -> "busy".equals(redis.server().call("HGET", key, "state")));
    assertInstanceOf(Claim.Busy.class, store.claim(key, "fp", Duration.ofSeconds(60), false).join(),
        "the other copy loses the tie");
    assertEquals(0, store.unansweredClaims());
  }

  @Test
  void anAbandonMatchesOnlyItsOwnBusyClaim() {
    String key = ClaimStore.idempotencyKey("abandon", UUID.randomUUID().toString());
    Claim.Claimed other = (Claim.Claimed) connection.run(IdempotencyScripts.CLAIM, new String[] {key}, "fp", "60000", "someone")
        .thenApply(r -> new Claim.Claimed(key, Long.parseLong(String.valueOf(r.get(1))), false)).join();
    assertEquals("kept", connection.run(IdempotencyScripts.ABANDON, new String[] {key}, "me").join().get(0));
    assertEquals("abandoned", connection.run(IdempotencyScripts.ABANDON, new String[] {key}, "someone").join().get(0));
    assertEquals(0L, redis.server().call("EXISTS", key));
    assertFalse(store.release(other).join(), "gone");
    Claim.Claimed mine = (Claim.Claimed) store.claim(key, "fp", Duration.ofSeconds(60)).join();
    assertTrue(store.complete(mine, new StoredResponse(201, java.util.List.of(), new byte[0]), Duration.ofHours(1)).join());
    String holder = (String) redis.server().call("HGET", key, "holder");
    assertEquals("kept", connection.run(IdempotencyScripts.ABANDON, new String[] {key}, holder).join().get(0),
        "a finished record is never undone");
    assertEquals("done", redis.server().call("HGET", key, "state"));
    redis.server().call("SET", "plain-" + key, "x");
    assertEquals("kept", connection.run(IdempotencyScripts.ABANDON, new String[] {"plain-" + key}, "me").join().get(0));
    CompletionException bad = assertThrows(CompletionException.class,
        () -> connection.run(IdempotencyScripts.ABANDON, new String[] {key}, "").join());
    assertTrue(bad.getCause().getMessage().contains("invalid holder"), bad.getCause().getMessage());
    CompletionException longHolder = assertThrows(CompletionException.class,
        () -> connection.run(IdempotencyScripts.CLAIM, new String[] {key + "x"}, "fp", "1000", "h".repeat(65)).join());
    assertTrue(longHolder.getCause().getMessage().contains("invalid holder"));
  }
}
