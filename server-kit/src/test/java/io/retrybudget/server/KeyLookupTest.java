package io.retrybudget.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.testing.RedisExtension;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** What admission reads of a key's record ({@code idempotency-peek.lua}) on a real Redis; the caller scopes. */
class KeyLookupTest {
  @RegisterExtension
  static final RedisExtension redis = RedisExtension.standalone();

  /** A POST with these headers. */
  static RequestView request(Map<String, String> headers, String principal) {
    return new RequestView() {
      public String method() { return "POST"; }
      public String route() { return "/payments"; }
      public String target() { return "/payments"; }
      public String header(String name) {
        return headers.entrySet().stream().filter(e -> e.getKey().equalsIgnoreCase(name)).map(Map.Entry::getValue)
            .findFirst().orElse(null);
      }
      public String principal() { return principal; }
      public byte[] body() { return "{}".getBytes(StandardCharsets.UTF_8); }
    };
  }

  @Test
  void storedClaimedAbsentExpiringAndForeignRecords() {
    IdempotencyConfig config = IdempotencyConfig.builder().build();
    try (RedisBudgetStore connection = RedisBudgetStore.connect(redis.connectionOptions().build())) {
      ClaimStore store = new ClaimStore(connection, Duration.ofSeconds(2));
      KeyLookup lookup = new KeyLookup(connection, Duration.ofSeconds(2), config);
      String key = UUID.randomUUID().toString();
      RequestView alice = request(Map.of("Idempotency-Key", key, "Authorization", "Bearer alice"), null);
      RequestView bob = request(Map.of("Idempotency-Key", key, "Authorization", "Bearer bob"), null);
      String record = config.recordKey(alice, key);
      assertEquals(KeyLookup.Seen.NONE, lookup.lookup(alice).join());
      Claim.Claimed claimed = (Claim.Claimed) store.claim(record, "fp", Duration.ofSeconds(30)).join();
      assertEquals(KeyLookup.Seen.IN_PROGRESS, lookup.lookup(alice).join());
      assertEquals(KeyLookup.Seen.NONE, lookup.lookup(bob).join(), "another caller's key is another record");
      assertTrue(store.complete(claimed, new StoredResponse(201, List.of(), new byte[0]), Duration.ofHours(1)).join());
      assertEquals(KeyLookup.Seen.STORED, lookup.lookup(alice).join());
      redis.server().call("PEXPIRE", record, "500");
      assertEquals(KeyLookup.Seen.IN_PROGRESS, lookup.lookup(alice).join(),
          "an answer about to expire is not counted on: the request may have to run");
      redis.server().call("DEL", record);
      redis.server().call("SET", record, "not a record");
      assertEquals(KeyLookup.Seen.NONE, lookup.lookup(alice).join());
      assertFalse(lookup.applies(request(Map.of(), null)), "no key, nothing to look up");
      assertFalse(lookup.applies(request(Map.of("Idempotency-Key", "\"unterminated"), null)));
    }
  }

  @Test
  void callerIdentities() {
    var byDefault = CallerIdentity.principalOrCredentials();
    RequestView carol = request(Map.of("Authorization", "Bearer t1"), "carol");
    assertEquals("principal:carol", byDefault.apply(carol));
    assertEquals(byDefault.apply(request(Map.of("Authorization", "Bearer t1"), null)),
        byDefault.apply(request(Map.of("Authorization", "BEARER t1"), null)), "the scheme is case-insensitive");
    assertNotEquals(byDefault.apply(request(Map.of("Authorization", "Bearer t1"), null)),
        byDefault.apply(request(Map.of("Authorization", "Bearer T1"), null)), "the credentials are not");
    assertFalse(byDefault.apply(request(Map.of("Authorization", "Bearer secret"), null)).contains("secret"),
        "only a hash of the credentials is used");
    assertEquals("", byDefault.apply(request(Map.of(), null)), "no credentials: the anonymous scope");
    var apiKey = CallerIdentity.principalOrHeaders(List.of("X-Api-Key"));
    assertNotEquals(apiKey.apply(request(Map.of("X-Api-Key", "a"), null)), apiKey.apply(request(Map.of("X-Api-Key", "b"), null)));
    assertEquals("", CallerIdentity.shared().apply(carol));
    assertEquals("headers must name at least one header, was []",
        org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
            () -> CallerIdentity.principalOrHeaders(List.of())).getMessage());
  }
}
