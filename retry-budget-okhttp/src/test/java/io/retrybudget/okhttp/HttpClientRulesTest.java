package io.retrybudget.okhttp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.retry.RetryPolicy;
import io.retrybudget.retry.http.HttpClientRules;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import okhttp3.Protocol;
import okhttp3.Request;
import okhttp3.Response;
import org.junit.jupiter.api.Test;

/** The client-neutral HTTP rules on OkHttp's response type: the same policy every integration runs. */
class HttpClientRulesTest {
  private static final Clock CLOCK = Clock.fixed(Instant.parse("2026-12-01T10:00:00Z"), ZoneOffset.UTC);
  private static final HttpClientRules<Response> RULES = HttpClientRules.of(Response.class, Response::code, r -> r::header, CLOCK);

  private static Response response(int code, String... headers) {
    Response.Builder b = new Response.Builder().request(new Request.Builder().url("http://localhost/").build())
        .protocol(Protocol.HTTP_1_1).code(code).message("m");
    for (int i = 0; i < headers.length; i += 2) {
      b.addHeader(headers[i], headers[i + 1]);
    }
    return b.build();
  }

  @Test
  void statusesRetriedAreFiveHundredsAndTooManyRequestsOnly() {
    RetryPolicy p = RULES.apply(RetryPolicy.builder().build(), true);
    for (int code : new int[] {500, 502, 503, 504, 599, 429}) {
      assertTrue(p.shouldRetryResult(response(code)), "status " + code);
    }
    for (int code : new int[] {200, 201, 301, 400, 401, 403, 404, 409, 422}) {
      assertFalse(p.shouldRetryResult(response(code)), "status " + code);
    }
    assertFalse(p.shouldRetryResult("not a response"));
  }

  @Test
  void pushbackComesBeforeRetryAfterAndAnUnreadableOneFallsThrough() {
    RetryPolicy p = RULES.apply(RetryPolicy.builder().build(), true);
    assertEquals(Duration.ofMillis(250), p.serverDelay(response(503, "X-Retry-Pushback-Ms", "250", "Retry-After", "9"), null));
    assertEquals(Duration.ofMillis(-1), p.serverDelay(response(503, "X-Retry-Pushback-Ms", "-5"), null));
    assertEquals(Duration.ofSeconds(9), p.serverDelay(response(503, "X-Retry-Pushback-Ms", "soon", "Retry-After", "9"), null));
    assertEquals(Duration.ofSeconds(30), p.serverDelay(response(503, "Retry-After", "Tue, 01 Dec 2026 10:00:30 GMT"), null));
    assertNull(p.serverDelay(response(503), null));
    assertNull(p.serverDelay(null, new java.io.IOException("reset")));
  }

  @Test
  void theCallersPolicyIsKeptAndIdempotenceIsTheMethods() {
    RetryPolicy base = RetryPolicy.builder().maxAttempts(5).deadline(Duration.ofSeconds(2)).build();
    RetryPolicy post = RULES.apply(base, false);
    assertEquals(5, post.maxAttempts());
    assertEquals(Duration.ofSeconds(2), post.deadline());
    assertFalse(post.idempotent());
    assertTrue(RULES.apply(base, true).idempotent());
  }

  @Test
  void keysOnlyForRetriedNonIdempotentMethods() {
    RetryPolicy three = RetryPolicy.builder().maxAttempts(3).build();
    RetryPolicy one = RetryPolicy.builder().maxAttempts(1).build();
    assertTrue(HttpClientRules.sendsIdempotencyKey("POST", null, true, three));
    assertTrue(HttpClientRules.sendsIdempotencyKey("patch", "own", false, three));
    assertFalse(HttpClientRules.sendsIdempotencyKey("POST", null, false, three));
    assertFalse(HttpClientRules.sendsIdempotencyKey("POST", "own", true, one));
    assertFalse(HttpClientRules.sendsIdempotencyKey("PUT", null, true, three));
    assertFalse(HttpClientRules.sendsIdempotencyKey("GET", "own", true, three));
  }
}
