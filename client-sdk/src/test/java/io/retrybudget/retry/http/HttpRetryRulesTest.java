package io.retrybudget.retry.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import org.junit.jupiter.api.Test;

class HttpRetryRulesTest {
  private final Clock clock = Clock.fixed(Instant.parse("2026-11-29T10:00:00Z"), ZoneOffset.UTC);

  @Test
  void statuses() {
    for (int s : new int[] {429, 500, 502, 503, 504, 599}) {
      assertTrue(HttpRetryRules.isRetryableStatus(s), "" + s);
    }
    for (int s : new int[] {200, 204, 301, 400, 401, 403, 404, 409, 422, 600}) {
      assertFalse(HttpRetryRules.isRetryableStatus(s), "" + s);
    }
  }

  @Test
  void methods() {
    assertTrue(HttpRetryRules.isIdempotentMethod("GET"));
    assertTrue(HttpRetryRules.isIdempotentMethod("put"));
    assertTrue(HttpRetryRules.isIdempotentMethod("DELETE"));
    assertFalse(HttpRetryRules.isIdempotentMethod("POST"));
    assertFalse(HttpRetryRules.isIdempotentMethod("PATCH"));
  }

  @Test
  void retryAfterInSecondsOrAsADate() {
    assertEquals(Duration.ofSeconds(120), HttpRetryRules.parseRetryAfter("120", clock));
    assertEquals(Duration.ZERO, HttpRetryRules.parseRetryAfter("0", clock));
    assertEquals(Duration.ofSeconds(90), HttpRetryRules.parseRetryAfter("Sun, 29 Nov 2026 10:01:30 GMT", clock));
    assertEquals(Duration.ZERO, HttpRetryRules.parseRetryAfter("Sun, 29 Nov 2026 09:00:00 GMT", clock), "past date");
    assertNull(HttpRetryRules.parseRetryAfter("soon", clock));
    assertNull(HttpRetryRules.parseRetryAfter("-5", clock));
    assertNull(HttpRetryRules.parseRetryAfter("", clock));
    assertNull(HttpRetryRules.parseRetryAfter("99999999999999999999999", clock));
  }
}
