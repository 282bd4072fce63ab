package io.retrybudget.server;

import java.util.List;

/**
 * What the server kit reads of an incoming request; each adapter (Vert.x, Servlet) provides one.
 * The body is the whole request body, already bounded by the adapter.
 */
public interface RequestView {
  /** The method, upper case. */
  String method();

  /** The route template that matched ({@code /payments/:id}), not the concrete path: bounded values. */
  String route();

  /** Path and query as received ({@code /payments/7?dry=1}). */
  String target();

  /** The first value of a header (case-insensitive), or null. */
  String header(String name);

  /** How many field lines of this header the request has (the adapters count them; default 0 or 1). */
  default int headerLines(String name) {
    return header(name) == null ? 0 : 1;
  }

  /**
   * The values of the last {@code max} field lines of a header (case-insensitive), in the order
   * received; empty when it has none. A header the request repeats (a proxy appended a line, or a
   * client sent two) is seen whole here, where {@link #header} sees its first line only. The
   * adapters give the last {@code max} lines (the ones intermediaries appended: a sender cannot push
   * them out by padding its own); this default sees the first only.
   *
   * @param max how many lines to look at, at least 1
   */
  default List<String> headers(String name, int max) {
    if (max < 1) {
      throw new IllegalArgumentException("max must be >= 1, was " + max);
    }
    String first = header(name);
    return first == null ? List.of() : List.of(first);
  }

  /**
   * The name of the caller the container or framework authenticated (the servlet container's
   * {@code getUserPrincipal()}, Vert.x Web's {@code ctx.user().subject()}), or null when none did:
   * {@link CallerIdentity} scopes idempotency keys by it.
   */
  default String principal() {
    return null;
  }

  /** The body; an empty array when there is none. */
  byte[] body();
}
