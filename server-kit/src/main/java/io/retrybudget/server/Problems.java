package io.retrybudget.server;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * RFC 9457 problem details ({@code application/problem+json}) for the server kit's own answers,
 * and the pushback headers the SDK obeys ({@code Retry-After}, {@code X-Retry-Pushback-Ms}).
 */
public final class Problems {
  public static final String CONTENT_TYPE = "application/problem+json";
  public static final String PUSHBACK_HEADER = "X-Retry-Pushback-Ms";
  public static final String TYPE_PREFIX = "urn:retrybudget:problem:";

  private Problems() {}

  /** A problem answer; {@code type} is the last part of its URN ({@code idempotency-key-missing}). */
  public static StoredResponse of(int status, String type, String title, String detail) {
    String json = "{\"type\":\"" + TYPE_PREFIX + type + "\",\"title\":\"" + escape(title) + "\",\"status\":" + status
        + ",\"detail\":\"" + escape(detail) + "\"}";
    return new StoredResponse(status, List.of(new StoredResponse.Header("Content-Type", CONTENT_TYPE)),
        json.getBytes(StandardCharsets.UTF_8));
  }

  /**
   * The answer with {@code Retry-After} (whole seconds, rounded up, at least 1) and
   * {@code X-Retry-Pushback-Ms}; a negative {@code delay} means "do not retry": pushback -1 and no
   * Retry-After.
   */
  public static StoredResponse withPushback(StoredResponse response, Duration delay) {
    List<StoredResponse.Header> h = new ArrayList<>(response.headers());
    if (delay.isNegative()) {
      h.add(new StoredResponse.Header(PUSHBACK_HEADER, "-1"));
    } else {
      long ms = delay.toMillis();
      h.add(new StoredResponse.Header("Retry-After", Long.toString(Math.max(1, (ms + 999) / 1000))));
      h.add(new StoredResponse.Header(PUSHBACK_HEADER, Long.toString(ms)));
    }
    return new StoredResponse(response.status(), h, response.body());
  }

  static String escape(String s) {
    StringBuilder b = new StringBuilder(s.length() + 8);
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> b.append("\\\"");
        case '\\' -> b.append("\\\\");
        case '\n' -> b.append("\\n");
        case '\r' -> b.append("\\r");
        case '\t' -> b.append("\\t");
        default -> {
          if (c < 0x20) {
            b.append(String.format("\\u%04x", (int) c));
          } else {
            b.append(c);
          }
        }
      }
    }
    return b.toString();
  }
}
