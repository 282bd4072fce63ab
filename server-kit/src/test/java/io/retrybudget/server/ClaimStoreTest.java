package io.retrybudget.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.lettuce.core.RedisCommandExecutionException;
import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The claim scripts against a real Redis: claim, busy, mismatch, fenced completion and release. */
class ClaimStoreTest {
  @RegisterExtension
  static final RedisExtension redis = RedisExtension.standalone();

  static RedisBudgetStore connection;
  static ClaimStore store;

  @BeforeAll
  static void connect() {
    connection = RedisBudgetStore.connect(redis.connectionOptions().build());
    store = new ClaimStore(connection, Duration.ofSeconds(2));
  }

  @AfterAll
  static void close() {
    connection.close();
  }

  static String key() {
    return ClaimStore.idempotencyKey("caller", "POST", "/payments", UUID.randomUUID().toString());
  }

  static final StoredResponse ANSWER = new StoredResponse(201,
      List.of(new StoredResponse.Header("Content-Type", "application/json"), new StoredResponse.Header("Location", "/p/1")),
      "{\"charge_id\":\"c1\"}\u0000\u00ff".getBytes(StandardCharsets.ISO_8859_1));

  @Test
  void keysCarryAVersionAndAHashTag() {
    String k = ClaimStore.idempotencyKey("a", "POST", "/payments", "k1");
    assertTrue(k.matches("rb:idem:v1:\\{[0-9a-f]{32}\\}"), k);
    assertEquals(k, ClaimStore.idempotencyKey("a", "POST", "/payments", "k1"));
    assertFalse(k.equals(ClaimStore.idempotencyKey("b", "POST", "/payments", "k1")), "callers are separate scopes");
    assertFalse(ClaimStore.idempotencyKey("a", "POST", "/p", "x").equals(ClaimStore.idempotencyKey("a", "POST", "/px", "")),
        "parts are length-prefixed");
    assertTrue(ClaimStore.tieKey("t").startsWith("rb:tie:v1:{"));
  }

  @Test
  void firstClaimsThenDuplicatesAreBusyThenReplayTheStoredAnswer() {
    String k = key();
    Claim first = store.claim(k, "fp", Duration.ofSeconds(30)).join();
    Claim.Claimed c = assertInstanceOf(Claim.Claimed.class, first);
    assertFalse(c.takeover());
    Claim.Busy busy = assertInstanceOf(Claim.Busy.class, store.claim(k, "fp", Duration.ofSeconds(30)).join());
    assertTrue(busy.leaseLeftMillis() > 29_000 && busy.leaseLeftMillis() <= 30_000, "lease left " + busy.leaseLeftMillis());
    assertInstanceOf(Claim.Mismatch.class, store.claim(k, "other", Duration.ofSeconds(30)).join());

    assertTrue(store.complete(c, ANSWER, Duration.ofHours(24)).join());
    Claim.Done done = assertInstanceOf(Claim.Done.class, store.claim(k, "fp", Duration.ofSeconds(30)).join());
    assertEquals(ANSWER, done.response(), "status, headers and binary body come back as stored");
    assertInstanceOf(Claim.Mismatch.class, store.claim(k, "other", Duration.ofSeconds(30)).join());
    long ttl = (Long) redis.server().call("PTTL", k);
    assertTrue(ttl > 23 * 3600_000L, "result TTL, not the lease: " + ttl);
    assertFalse(store.complete(c, ANSWER, Duration.ofHours(24)).join(), "a finished record is not written twice");
  }

  @Test
  void anInProgressClaimExpiresOneLeaseAfterItsLease() {
    String k = key();
    store.claim(k, "fp", Duration.ofSeconds(10)).join();
    long ttl = (Long) redis.server().call("PTTL", k);
    assertTrue(ttl > 19_000 && ttl <= 20_000, "abandoned claims do not stay for a day: " + ttl);
  }

  @Test
  void afterTheLeaseADuplicateTakesOverAndTheStaleHolderIsFencedOff() {
    String k = key();
    Claim.Claimed stale = (Claim.Claimed) store.claim(k, "fp", Duration.ofMillis(100)).join();
    Claim[] next = new Claim[1];
    Eventually.await("the lease runs out", Duration.ofSeconds(5), () -> {
      next[0] = store.claim(k, "fp", Duration.ofSeconds(30)).join();
      return next[0] instanceof Claim.Claimed;
    });
    Claim.Claimed fresh = (Claim.Claimed) next[0];
    assertTrue(fresh.takeover());
    assertTrue(fresh.fence() > stale.fence(), "fencing tokens grow: " + stale.fence() + " then " + fresh.fence());

    assertFalse(store.complete(stale, ANSWER, Duration.ofHours(1)).join(), "the stale holder's write is refused");
    assertFalse(store.release(stale).join(), "nor may it release the new claim");
    assertInstanceOf(Claim.Busy.class, store.claim(k, "fp", Duration.ofSeconds(30)).join());
    StoredResponse mine = new StoredResponse(200, List.of(), "fresh".getBytes(StandardCharsets.UTF_8));
    assertTrue(store.complete(fresh, mine, Duration.ofHours(1)).join());
    assertEquals(mine, ((Claim.Done) store.claim(k, "fp", Duration.ofSeconds(30)).join()).response());
  }

  @Test
  void aHolderWhoseLeaseRanOutStillStoresWhenNobodyTookOver() {
    String k = key();
    Claim.Claimed c = (Claim.Claimed) store.claim(k, "fp", Duration.ofMillis(1000)).join();
    // the record lives two leases; once less than one is left, the lease is over
    Eventually.await("the lease runs out", Duration.ofSeconds(5), () -> (Long) redis.server().call("PTTL", k) < 990);
    redis.server().call("PEXPIRE", k, "60000"); // keep the record while this test writes (not the point here)
    assertTrue(store.complete(c, ANSWER, Duration.ofHours(1)).join());
  }

  @Test
  void releaseLetsTheNextDuplicateExecuteWithAGreaterToken() {
    String k = key();
    Claim.Claimed c = (Claim.Claimed) store.claim(k, "fp", Duration.ofSeconds(30)).join();
    assertTrue(store.release(c).join());
    assertFalse(store.release(c).join(), "released once");
    Claim.Claimed again = assertInstanceOf(Claim.Claimed.class, store.claim(k, "fp", Duration.ofSeconds(30)).join());
    assertTrue(again.fence() > c.fence(), "tokens grow across the record's deletion");
    assertFalse(store.complete(c, ANSWER, Duration.ofHours(1)).join(), "the released holder cannot write");
  }

  @Test
  void badArgumentsAreRefusedByTheScript() {
    CompletionException e = org.junit.jupiter.api.Assertions.assertThrows(CompletionException.class,
        () -> store.claim(key(), "", Duration.ofSeconds(1)).join());
    assertInstanceOf(RedisCommandExecutionException.class, e.getCause());
    assertTrue(e.getCause().getMessage().contains("invalid fingerprint"), e.getCause().getMessage());
  }

  @Test
  void scriptsAreReloadedAfterScriptFlush() {
    redis.flushScripts();
    assertInstanceOf(Claim.Claimed.class, store.claim(key(), "fp", Duration.ofSeconds(1)).join());
  }

  @Test
  void aValueThatIsNoRecordIsClaimedAfreshWithATtlInsteadOfStrandingTheKey() {
    List<String[]> bad = List.of(
        new String[] {"SET", null, "garbage"},                                           // another type
        new String[] {"HSET", null, "state", "weird", "fp", "fp"},                       // an unknown state
        new String[] {"HSET", null, "state", "busy"},                                    // no fingerprint
        new String[] {"HSET", null, "state", "done", "fp", "fp", "status", "x", "body", ""},  // no status
        new String[] {"HSET", null, "state", "done", "fp", "fp", "status", "201", "body", "not base64!"});
    for (String[] command : bad) {
      String k = key();
      command[1] = k;
      redis.server().call(command);
      Claim c = store.claim(k, "fp", Duration.ofSeconds(10)).join();
      assertInstanceOf(Claim.Claimed.class, c, "claimed over " + String.join(" ", command));
      long ttl = (Long) redis.server().call("PTTL", k);
      assertTrue(ttl > 0 && ttl <= 20_000, "the replacing claim has a TTL: " + ttl);
      assertInstanceOf(Claim.Busy.class, store.claim(k, "fp", Duration.ofSeconds(10)).join(), "and holds as a claim");
    }
  }
}
