package io.retrybudget.server;

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

  /** The body; an empty array when there is none. */
  byte[] body();
}
