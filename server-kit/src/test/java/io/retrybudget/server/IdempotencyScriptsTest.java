package io.retrybudget.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.testing.RedisExtension;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The typed calls of lua/idempotency-*.lua on a real Redis: every reply each script gives, typed. */
class IdempotencyScriptsTest {
  @RegisterExtension
  static final RedisExtension redis = RedisExtension.standalone();

  @Test
  void everyScriptsRepliesAreTyped() {
    try (RedisBudgetStore connection = RedisBudgetStore.connect(redis.connectionOptions().build())) {
      IdempotencyScripts scripts = new IdempotencyScripts(connection);
      String key = ClaimStore.idempotencyKey("caller", "POST", "/typed", "k1");
      assertEquals(IdempotencyScripts.Peek.State.NONE, scripts.peek(key).join().state());
      Claim.Claimed claimed = assertInstanceOf(Claim.Claimed.class, scripts.claim(key, "fp", 30_000, "holder-1").join());
      assertEquals(key, claimed.key());
      assertFalse(claimed.takeover());
      assertEquals(IdempotencyScripts.Peek.State.BUSY, scripts.peek(key).join().state());
      Claim.Busy busy = assertInstanceOf(Claim.Busy.class, scripts.claim(key, "fp", 30_000, "").join());
      assertTrue(busy.leaseLeftMillis() > 0 && busy.leaseLeftMillis() <= 30_000, "lease left: " + busy.leaseLeftMillis());
      assertInstanceOf(Claim.Mismatch.class, scripts.claim(key, "other", 30_000, "").join());
      assertFalse(scripts.renew(key, claimed.fence() + 1, 60_000).join(), "another fence: fenced off");
      assertTrue(scripts.renew(key, claimed.fence(), 60_000).join());
      assertFalse(scripts.abandon(key, "holder-2").join(), "another holder's claim is kept");
      assertFalse(scripts.complete(key, claimed.fence() + 1, 201, "", "", 3_600_000).join());
      StoredResponse answer = new StoredResponse(201, List.of(), "ok".getBytes(java.nio.charset.StandardCharsets.UTF_8));
      assertTrue(scripts.complete(key, claimed.fence(), answer.status(), answer.encodedHeaders(), answer.encodedBody(),
          3_600_000).join());
      IdempotencyScripts.Peek done = scripts.peek(key).join();
      assertEquals(IdempotencyScripts.Peek.State.DONE, done.state());
      assertTrue(done.ttlMillis() > 3_500_000 && done.ttlMillis() <= 3_600_000, "ttl: " + done.ttlMillis());
      Claim.Done replay = assertInstanceOf(Claim.Done.class, scripts.claim(key, "fp", 30_000, "").join());
      assertEquals(201, replay.response().status());
      assertTrue(Arrays.equals(answer.body(), replay.response().body()));
      assertFalse(scripts.release(key, claimed.fence()).join(), "a finished record is not released");
      assertFalse(scripts.abandon(key, "holder-1").join(), "a finished record is kept");

      String other = ClaimStore.idempotencyKey("caller", "POST", "/typed", "k2");
      Claim.Claimed second = (Claim.Claimed) scripts.claim(other, "fp", 30_000, "holder-3").join();
      assertTrue(scripts.release(other, second.fence()).join());
      Claim.Claimed third = (Claim.Claimed) scripts.claim(other, "fp", 30_000, "holder-4").join();
      assertTrue(scripts.abandon(other, "holder-4").join(), "its own holder's claim in progress is removed");
      assertEquals(IdempotencyScripts.Peek.State.NONE, scripts.peek(other).join().state());
      assertTrue(third.fence() > second.fence());

      // a script's error fails the future with it; nothing is typed from it
      CompletionException bad = assertThrows(CompletionException.class, () -> scripts.claim(other, "fp", 0, "").join());
      assertTrue(String.valueOf(bad.getCause().getMessage()).contains("invalid lease_ms"), bad.getCause().getMessage());
    }
  }

  @Test
  void aReplyNoScriptGivesIsRefused() {
    assertThrows(IllegalStateException.class, () -> IdempotencyScripts.parseClaim("k", List.of("granted", "1")));
    assertThrows(IllegalStateException.class, () -> IdempotencyScripts.parseClaim("k", List.of()));
    assertThrows(IllegalStateException.class, () -> IdempotencyScripts.parsePeek(List.of("gone")));
    assertThrows(IllegalStateException.class,
        () -> IdempotencyScripts.either(IdempotencyScripts.RELEASE, List.of("stored"), "released", "fenced"));
    assertTrue(IdempotencyScripts.either(IdempotencyScripts.RELEASE, List.of("released"), "released", "fenced"));
    assertFalse(IdempotencyScripts.either(IdempotencyScripts.RELEASE, List.of("fenced"), "released", "fenced"));
  }
}
