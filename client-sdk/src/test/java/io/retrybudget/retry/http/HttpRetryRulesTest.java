package io.retrybudget.retry.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
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
    // more than a long holds: as long as can be (past every backoff cap: the call ends), not "none"
    assertEquals(HttpRetryRules.LONGEST_SERVER_DELAY, HttpRetryRules.parseRetryAfter("99999999999999999999999", clock));
    assertEquals(HttpRetryRules.LONGEST_SERVER_DELAY, HttpRetryRules.parseRetryAfter("9223372036854775807", clock));
    assertEquals(Duration.ofSeconds(7), HttpRetryRules.parseRetryAfter("0000000000000000000000007", clock));
    assertEquals(HttpRetryRules.LONGEST_SERVER_DELAY, HttpRetryRules.parseRetryAfter("Fri, 31 Dec 9999 23:59:59 GMT", clock));
    assertNull(HttpRetryRules.parseRetryAfter("١٢", clock), "digits of another script are not delta-seconds");
    assertNull(HttpRetryRules.parseRetryAfter("9".repeat(65), clock), "too long to read");
  }

  @Test
  void pushbackOfAnySizeIsReadAsTheServerMeantIt() {
    assertEquals(Duration.ofMillis(250), HttpRetryRules.parsePushback("250"));
    assertEquals(Duration.ofMillis(250), HttpRetryRules.parsePushback(" +250 "));
    assertEquals(Duration.ZERO, HttpRetryRules.parsePushback("0"));
    assertEquals(Duration.ZERO, HttpRetryRules.parsePushback("-0"));
    assertEquals(Duration.ofMillis(-1), HttpRetryRules.parsePushback("-1"), "do not retry");
    assertEquals(Duration.ofMillis(-1), HttpRetryRules.parsePushback("-99999999999999999999"), "do not retry, however large");
    assertEquals(HttpRetryRules.LONGEST_SERVER_DELAY, HttpRetryRules.parsePushback("99999999999999999999"));
    for (String garbage : new String[] {"", "-", "+", "1.5", "1e3", "10, 20", "0x10", "12ms", "١٢", "--1", "9".repeat(65)}) {
      assertNull(HttpRetryRules.parsePushback(garbage), "unreadable: " + garbage);
    }
    // an unreadable pushback falls back to Retry-After; a readable one wins
    assertEquals(Duration.ofSeconds(3), HttpRetryRules.serverDelay(
        n -> n.equals(HttpRetryRules.PUSHBACK_HEADER) ? "soon" : n.equals("Retry-After") ? "3" : null, clock));
    assertEquals(Duration.ofMillis(-1), HttpRetryRules.serverDelay(
        n -> n.equals(HttpRetryRules.PUSHBACK_HEADER) ? "-99999999999999999999" : n.equals("Retry-After") ? "3" : null, clock));
  }

  @Test
  void anInboundDeadlineIsReadAsHostileInput() {
    assertEquals(187, HttpRetryRules.parseDeadlineMillis("187", 3_600_000));
    assertEquals(187, HttpRetryRules.parseDeadlineMillis(" +187 ", 3_600_000));
    assertEquals(0, HttpRetryRules.parseDeadlineMillis("0", 3_600_000));
    assertEquals(5_000, HttpRetryRules.parseDeadlineMillis("5001", 5_000), "capped");
    assertEquals(5_000, HttpRetryRules.parseDeadlineMillis("9".repeat(40), 5_000), "too long for a long: capped");
    assertEquals(5_000, HttpRetryRules.parseDeadlineMillis("9223372036854775807", 5_000));
    for (String garbage : new String[] {null, "", " ", "-1", "-0", "+", "1.5", "1e3", "10, 20", "0x10", "12ms", "١٢",
        "9".repeat(65), "\u0000"}) {
      assertEquals(-1, HttpRetryRules.parseDeadlineMillis(garbage, 5_000), "no deadline: " + garbage);
    }
    assertThrows(IllegalArgumentException.class, () -> HttpRetryRules.parseDeadlineMillis("1", 0));
  }
}
