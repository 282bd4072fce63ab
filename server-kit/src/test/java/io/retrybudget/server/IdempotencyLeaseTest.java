package io.retrybudget.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The claim's lease while its handler runs: renewed (fenced) until finish or abandon, so a holder
 * that still works is never joined; not renewed any more once the holder is gone or timed out.
 */
class IdempotencyLeaseTest {
  @RegisterExtension
  static final RedisExtension redis = RedisExtension.standalone();

  private static final StoredResponse CHARGED = new StoredResponse(201, List.of(), "charged".getBytes(StandardCharsets.UTF_8));

  private RedisBudgetStore connection;
  private ClaimStore store;

  @BeforeEach
  void connect() {
    connection = RedisBudgetStore.connect(redis.connectionOptions().commandTimeout(Duration.ofMillis(500)).build());
    store = new ClaimStore(connection, Duration.ofSeconds(2));
  }

  @AfterEach
  void close() {
    connection.close();
  }

  static RequestView post(String key) {
    return new RequestView() {
      public String method() { return "POST"; }
      public String route() { return "/payments"; }
      public String target() { return "/payments"; }
      public String header(String name) { return name.equalsIgnoreCase("Idempotency-Key") ? key : null; }
      public byte[] body() { return "{\"amount\":1}".getBytes(StandardCharsets.UTF_8); }
    };
  }

  private static long redisNowMillis() {
    List<?> t = (List<?>) redis.server().call("TIME");
    return Long.parseLong(String.valueOf(t.get(0))) * 1000 + Long.parseLong(String.valueOf(t.get(1))) / 1000;
  }

  private static long leaseEnd(String key) {
    return Long.parseLong((String) redis.server().call("HGET", ClaimStore.idempotencyKey("", key), "until"));
  }

  private static IdempotencyConfig shortLease() {
    return IdempotencyConfig.builder().handlerTimeout(Duration.ofMillis(200)).leaseMargin(Duration.ZERO).build();
  }

  @Test
  void aDuplicateDoesNotExecuteWhileTheHolderStillRunsPastItsFirstLease() {
    try (IdempotencyGuard guard = new IdempotencyGuard(store, shortLease())) {
      String key = UUID.randomUUID().toString();
      IdempotencyGuard.Execute first = assertInstanceOf(IdempotencyGuard.Execute.class, guard.begin(post(key)).join());
      long firstLeaseEnd = leaseEnd(key);
      // the handler is slow (a GC pause, a slow downstream): Redis's clock passes the first lease
      Eventually.await("Redis time passes the first lease", Duration.ofSeconds(5), () -> redisNowMillis() > firstLeaseEnd + 100);
      IdempotencyGuard.Answer dup = assertInstanceOf(IdempotencyGuard.Answer.class, guard.begin(post(key)).join(),
          "the duplicate executed while the holder still runs");
      assertEquals(409, dup.response().status());
      assertTrue(leaseEnd(key) > firstLeaseEnd, "the lease was renewed");
      assertEquals(1, guard.renewing());

      guard.finish(first.execution(), CHARGED).join();
      assertEquals(0, guard.renewing(), "finishing stops the renewals");
      assertFalse(first.execution().renewing());
      IdempotencyGuard.Answer replay = assertInstanceOf(IdempotencyGuard.Answer.class, guard.begin(post(key)).join());
      assertEquals(201, replay.response().status());
      assertEquals("true", replay.response().header(IdempotencyGuard.REPLAYED_HEADER));
    }
  }

  @Test
  void abandonAndCloseStopTheRenewalsAndAGoneHolderLapsesWithinOneLease() {
    String key = UUID.randomUUID().toString();
    IdempotencyGuard crashed = new IdempotencyGuard(store, shortLease());
    IdempotencyGuard.Execute held = assertInstanceOf(IdempotencyGuard.Execute.class, crashed.begin(post(key)).join());
    assertTrue(held.execution().renewing());
    crashed.close(); // the process that held the claim is gone: nobody renews it
    assertEquals(0, crashed.renewing());
    try (IdempotencyGuard guard = new IdempotencyGuard(store, shortLease())) {
      long took = Eventually.await("the gone holder's claim lapses", Duration.ofSeconds(5),
          () -> guard.begin(post(key)).join() instanceof IdempotencyGuard.Execute e && guard.abandon(e.execution()) != null);
      assertTrue(took < 2_000, "within about one lease of the last renewal: " + took + " ms");
      assertEquals(0, guard.renewing(), "abandon stops the renewal of the takeover");
    }
  }

  @Test
  void aRenewalOfATakenOverClaimIsFencedOffAndStops() {
    String k = ClaimStore.idempotencyKey("lease", UUID.randomUUID().toString());
    Claim.Claimed mine = (Claim.Claimed) store.claim(k, "fp", Duration.ofSeconds(30)).join();
    assertTrue(store.renew(mine, Duration.ofSeconds(30)).join());
    redis.server().call("HSET", k, "until", "0"); // the lease is over (as if it lapsed)
    Claim.Claimed next = (Claim.Claimed) store.claim(k, "fp", Duration.ofSeconds(30)).join();
    long until = Long.parseLong((String) redis.server().call("HGET", k, "until"));
    assertFalse(store.renew(mine, Duration.ofSeconds(60)).join(), "the old holder cannot extend the new claim");
    assertEquals(until, Long.parseLong((String) redis.server().call("HGET", k, "until")));
    assertTrue(store.renew(next, Duration.ofSeconds(60)).join());
    long ttl = (Long) redis.server().call("PTTL", k);
    assertTrue(ttl > 100_000 && ttl <= 120_000, "two leases from the renewal: " + ttl);
    assertTrue(store.complete(next, CHARGED, Duration.ofHours(1)).join());
    assertFalse(store.renew(next, Duration.ofSeconds(60)).join(), "a finished record is not renewed");
    redis.server().call("DEL", k);
    assertFalse(store.renew(next, Duration.ofSeconds(60)).join(), "nor a deleted one");
    assertEquals(-2L, redis.server().call("PTTL", k), "and renewing a deleted record does not create it");
  }

  @Test
  void renewalsStopAtMaxHoldAndTheClaimLapsesOneLeaseLater() {
    IdempotencyConfig config = IdempotencyConfig.builder().handlerTimeout(Duration.ofMillis(200)).leaseMargin(Duration.ZERO)
        .maxHold(Duration.ofMillis(400)).build();
    try (IdempotencyGuard guard = new IdempotencyGuard(store, config)) {
      String key = UUID.randomUUID().toString();
      IdempotencyGuard.Execute held = assertInstanceOf(IdempotencyGuard.Execute.class, guard.begin(post(key)).join());
      Eventually.await("renewals stop at maxHold", Duration.ofSeconds(10), () -> guard.renewing() == 0);
      Eventually.await("the claim lapses", Duration.ofSeconds(10),
          () -> guard.begin(post(key)).join() instanceof IdempotencyGuard.Execute e && guard.abandon(e.execution()) != null);
      assertTrue(held.execution().guarded());
    }
  }

  @Test
  void aLeaseLongerThanTheScriptAcceptsIsRefusedByTheBuilderNamingTheFields() {
    IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
        () -> IdempotencyConfig.builder().handlerTimeout(Duration.ofDays(2)).build());
    assertTrue(e.getMessage().contains("handlerTimeout") && e.getMessage().contains("leaseMargin"), e.getMessage());
    org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
        () -> IdempotencyConfig.builder().handlerTimeout(Duration.ofHours(24)).build(), "24 h + the 5 s margin");
    IdempotencyConfig longest = IdempotencyConfig.builder().handlerTimeout(Duration.ofHours(24).minusSeconds(5)).build();
    try (IdempotencyGuard guard = new IdempotencyGuard(store, longest)) {
      IdempotencyGuard.Execute e2 = assertInstanceOf(IdempotencyGuard.Execute.class,
          guard.begin(post(UUID.randomUUID().toString())).join(), "the longest accepted lease is one the script takes");
      guard.abandon(e2.execution()).join();
    }
  }
}
