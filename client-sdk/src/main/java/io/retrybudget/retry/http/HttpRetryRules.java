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
 * idempotent, what delay a server asked for (Retry-After, X-Retry-Pushback-Ms), and how long an
 * attempt's answer is waited for ({@code X-Request-Deadline-Ms}).
 */
public final class HttpRetryRules {
  public static final String RETRY_ATTEMPT_HEADER = "X-Retry-Attempt";
  /**
   * Sent on every attempt whose answer is waited for a bounded time (the call has a deadline or
   * the policy an attempt timeout): the whole milliseconds left, {@code X-Request-Deadline-Ms: 187}
   * — the attempt timeout cut to what the call's deadline leaves, at the moment the attempt is
   * sent. Relative, so the clocks of client and server need not agree. A server does not work
   * past it, and calls its own dependencies with a deadline no later than it (server-kit's
   * {@code MiddleLayer}).
   */
  public static final String DEADLINE_HEADER = "X-Request-Deadline-Ms";
  /** The most milliseconds {@link #parseDeadlineMillis} returns: one hour. */
  public static final long MAX_DEADLINE_MILLIS = 3_600_000L;
  public static final String PUSHBACK_HEADER = "X-Retry-Pushback-Ms";
  public static final String IDEMPOTENCY_KEY_HEADER = "Idempotency-Key";
  private static final Set<String> IDEMPOTENT_METHODS = Set.of("GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE");

  private HttpRetryRules() {}

  /**
   * The {@link #DEADLINE_HEADER} value an attempt carries: the whole milliseconds its answer is
   * still waited for; null when it is waited for without bound (then no header is sent).
   */
  public static String deadlineHeaderValue(io.retrybudget.retry.AttemptContext context) {
    return context.hasDeadline() ? Long.toString(context.remainingMillis()) : null;
  }

  /**
   * Reads an inbound {@link #DEADLINE_HEADER} value as hostile input: 1 to 18 ASCII digits (an
   * optional leading {@code +} and surrounding whitespace allowed), capped at {@code capMillis}.
   * Returns -1 — "no deadline given" — for null, empty, a negative number, a fraction, a list
   * ({@code 10, 20}), letters or anything else; a number too long for a long is capped. Zero means
   * the caller has already given up.
   *
   * @param capMillis the largest deadline believed, positive (at most {@link #MAX_DEADLINE_MILLIS} is sensible)
   */
  public static long parseDeadlineMillis(String value, long capMillis) {
    if (capMillis <= 0) {
      throw new IllegalArgumentException("capMillis must be positive, was " + capMillis);
    }
    if (value == null) {
      return -1;
    }
    String v = value.strip();
    return digitsAtMost(v.startsWith("+") ? v.substring(1) : v, capMillis);
  }

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
      Duration asked = parsePushback(pushback);
      if (asked != null) {
        return asked;
      }
      // unreadable: fall through to Retry-After
    }
    String retryAfter = header.apply("Retry-After");
    return retryAfter == null ? null : parseRetryAfter(retryAfter, clock);
  }

  /**
   * The longest server delay read from a header: a value beyond it (up to any number of digits) is
   * taken as this, which is past every backoff cap, so the call ends with the server's answer rather
   * than retrying as if the server had asked for nothing.
   */
  static final Duration LONGEST_SERVER_DELAY = Duration.ofDays(365);
  /** A number in a header longer than this is not read (hostile input costs no more than this). */
  private static final int MAX_NUMBER_CHARS = 64;

  /**
   * {@code X-Retry-Pushback-Ms}: an optional sign and ASCII digits (at most 64 characters); negative
   * (of any size) means "do not retry", more milliseconds than {@link #LONGEST_SERVER_DELAY} are taken
   * as that; null for anything else (unreadable).
   */
  static Duration parsePushback(String value) {
    String v = value.trim();
    boolean negative = v.startsWith("-");
    long ms = digitsAtMost(negative || v.startsWith("+") ? v.substring(1) : v, LONGEST_SERVER_DELAY.toMillis());
    if (ms < 0) {
      return null;
    }
    return negative && ms > 0 ? Duration.ofMillis(-1) : Duration.ofMillis(ms);
  }

  /** Retry-After: delta-seconds or an HTTP-date (a date in the past means no wait). */
  public static Duration parseRetryAfter(String value, Clock clock) {
    String v = value.trim();
    if (v.isEmpty()) {
      return null;
    }
    if (v.chars().allMatch(c -> c >= '0' && c <= '9')) {
      long seconds = digitsAtMost(v, LONGEST_SERVER_DELAY.toSeconds());
      return seconds < 0 ? null : Duration.ofSeconds(seconds);
    }
    try {
      ZonedDateTime at = ZonedDateTime.parse(v, DateTimeFormatter.RFC_1123_DATE_TIME);
      Duration d = Duration.between(clock.instant(), at.toInstant());
      return d.isNegative() ? Duration.ZERO : d.compareTo(LONGEST_SERVER_DELAY) > 0 ? LONGEST_SERVER_DELAY : d;
    } catch (DateTimeParseException e) {
      return null;
    }
  }

  /**
   * A header's number as hostile input: 1 to {@value #MAX_NUMBER_CHARS} ASCII digits (Character.isDigit
   * and Long.parseLong also take other scripts' digits), at most {@code max} (more digits than a long
   * holds read as {@code max}); -1 for anything else.
   */
  private static long digitsAtMost(String digits, long max) {
    if (digits.isEmpty() || digits.length() > MAX_NUMBER_CHARS) {
      return -1;
    }
    int firstSignificant = 0;
    for (int i = 0; i < digits.length(); i++) {
      char c = digits.charAt(i);
      if (c < '0' || c > '9') {
        return -1;
      }
      if (c == '0' && firstSignificant == i && i < digits.length() - 1) {
        firstSignificant++;
      }
    }
    if (digits.length() - firstSignificant > 18) {
      return max;
    }
    return Math.min(max, Long.parseLong(digits.substring(firstSignificant)));
  }
}
