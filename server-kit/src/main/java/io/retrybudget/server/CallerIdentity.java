package io.retrybudget.server;

import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.function.Function;

/**
 * Who is asking, as part of an idempotency key's scope ({@link IdempotencyConfig.Builder#callerIdentity}):
 * two callers that send the same key never share a record, so one never sees the other's answer
 * (draft-ietf-httpapi-idempotency-key-header-07, security considerations: compose the key with
 * client attributes). The value is only ever hashed into the record's Redis key, never stored.
 */
public final class CallerIdentity {
  private CallerIdentity() {}

  /**
   * The default: the authenticated principal when the container or framework knows one ({@link
   * RequestView#principal()}); else the SHA-256 of the {@code Authorization} credentials (the
   * scheme compared case-insensitively, as HTTP says); else one shared anonymous scope.
   */
  public static Function<RequestView, String> principalOrCredentials() {
    return principalOrHeaders(List.of("authorization"));
  }

  /**
   * The principal when there is one, else the SHA-256 of the values of {@code headers} (an API key
   * header, a session cookie); requests with none of them share one anonymous scope.
   */
  public static Function<RequestView, String> principalOrHeaders(List<String> headers) {
    Objects.requireNonNull(headers, "headers must not be null");
    if (headers.isEmpty()) {
      throw new IllegalArgumentException("headers must name at least one header, was " + headers);
    }
    List<String> names = headers.stream().map(h -> {
      if (h == null || h.isBlank()) {
        throw new IllegalArgumentException("headers must hold header names, had '" + h + "'");
      }
      return h.strip().toLowerCase(Locale.ROOT);
    }).toList();
    return request -> {
      String principal = request.principal();
      if (principal != null) {
        return "principal:" + principal;
      }
      String[] parts = new String[names.size() * 2];
      boolean any = false;
      for (int i = 0; i < names.size(); i++) {
        String value = request.header(names.get(i));
        any |= value != null;
        parts[2 * i] = names.get(i);
        parts[2 * i + 1] = value == null ? "\u0000" : normalized(names.get(i), value.strip());
      }
      return any ? "credentials:" + Fingerprint.hash(parts) : "";
    };
  }

  /** One scope for every caller: fit only where a single trusted client sends keys. */
  public static Function<RequestView, String> shared() {
    return request -> "";
  }

  /** {@code Bearer x} and {@code bearer x} are one credential: the auth scheme is case-insensitive. */
  private static String normalized(String name, String value) {
    if (!name.equals("authorization")) {
      return value;
    }
    int space = value.indexOf(' ');
    return space < 0 ? value.toLowerCase(Locale.ROOT)
        : value.substring(0, space).toLowerCase(Locale.ROOT) + value.substring(space);
  }
}
