package io.retrybudget.retry.http;

import java.net.http.HttpResponse;
import java.time.Clock;
import java.time.Duration;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.Set;
import java.util.function.UnaryOperator;

/**
 * HTTP's retry rules as pure functions: which statuses are worth another attempt, which methods are
 * idempotent, and what delay a server asked for (Retry-After, X-Retry-Pushback-Ms).
 */
public final class HttpRetryRules {
  public static final String RETRY_ATTEMPT_HEADER = "X-Retry-Attempt";
  public static final String PUSHBACK_HEADER = "X-Retry-Pushback-Ms";
  public static final String IDEMPOTENCY_KEY_HEADER = "Idempotency-Key";
  private static final Set<String> IDEMPOTENT_METHODS = Set.of("GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE");

  private HttpRetryRules() {}

  /** 5xx (503 included) and 429 are retried; other 4xx never. */
  public static boolean isRetryableStatus(int status) {
    return status == 429 || (status >= 500 && status <= 599);
  }

  public static boolean isIdempotentMethod(String method) {
    return IDEMPOTENT_METHODS.contains(method.toUpperCase(Locale.ROOT));
  }

  /**
   * The delay the response asks for: {@code X-Retry-Pushback-Ms} first (negative = do not retry),
   * else {@code Retry-After} as delta-seconds or an HTTP-date; null when it asks for none or the
   * value cannot be read.
   */
  public static Duration serverDelay(HttpResponse<?> response, Clock clock) {
    return serverDelay(name -> response.headers().firstValue(name).orElse(null), clock);
  }

  /**
   * As {@link #serverDelay(HttpResponse, Clock)} for a response of any client, read through
   * {@code header} (a header's first value by name, null when absent).
   */
  public static Duration serverDelay(UnaryOperator<String> header, Clock clock) {
    String pushback = header.apply(PUSHBACK_HEADER);
    if (pushback != null) {
      try {
        long ms = Long.parseLong(pushback.trim());
        return ms < 0 ? Duration.ofMillis(-1) : Duration.ofMillis(ms);
      } catch (NumberFormatException e) {
        // unreadable: fall through to Retry-After
      }
    }
    String retryAfter = header.apply("Retry-After");
    return retryAfter == null ? null : parseRetryAfter(retryAfter, clock);
  }

  /** Retry-After: delta-seconds or an HTTP-date (a date in the past means no wait). */
  public static Duration parseRetryAfter(String value, Clock clock) {
    String v = value.trim();
    if (v.isEmpty()) {
      return null;
    }
    if (v.chars().allMatch(Character::isDigit)) {
      try {
        return Duration.ofSeconds(Long.parseLong(v));
      } catch (NumberFormatException | ArithmeticException e) {
        return null;
      }
    }
    try {
      ZonedDateTime at = ZonedDateTime.parse(v, DateTimeFormatter.RFC_1123_DATE_TIME);
      Duration d = Duration.between(clock.instant(), at.toInstant());
      return d.isNegative() ? Duration.ZERO : d;
    } catch (DateTimeParseException e) {
      return null;
    }
  }
}
