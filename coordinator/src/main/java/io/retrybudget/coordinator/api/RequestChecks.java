package io.retrybudget.coordinator.api;

import io.vertx.core.MultiMap;
import io.vertx.core.http.HttpHeaders;
import io.vertx.ext.web.RoutingContext;
import java.util.Set;

/**
 * The checks a request passes before its handler, none of which reads the body: the query names
 * only allowed parameters, each once (400 naming it), and a write's body is declared as UTF-8 JSON
 * (415). Each calls {@code ctx.next()} when the request passes, else answers.
 */
final class RequestChecks {
  private RequestChecks() {}

  static void checkQuery(RoutingContext ctx, Set<String> allowedParams) {
    if (ctx.request().query() != null && !ctx.request().query().isEmpty()) {
      String unnamed = RequestParser.unnamedQueryField(ctx.request().query());
      if (unnamed != null) {
        // the decoder would read "=1" as a parameter named 1
        Responses.error(ctx, 400, "query", "query field without a name: " + abbreviate(unnamed));
        return;
      }
      MultiMap params;
      try {
        params = ctx.queryParams();
      } catch (RuntimeException e) {
        Responses.error(ctx, 400, "query", "malformed query string");
        return;
      }
      for (String name : params.names()) {
        if (!allowedParams.contains(name)) {
          Responses.error(ctx, 400, name, "unknown query parameter " + name
              + (allowedParams.isEmpty() ? "" : "; allowed: " + String.join(", ", allowedParams)));
          return;
        }
        if (params.getAll(name).size() > 1) {
          Responses.error(ctx, 400, name, "query parameter " + name + " given more than once");
          return;
        }
      }
    }
    ctx.next();
  }

  static void requireJson(RoutingContext ctx) {
    String type = ctx.request().getHeader(HttpHeaders.CONTENT_TYPE);
    String media = type == null ? "" : type.split(";", 2)[0].strip();
    if (!media.equalsIgnoreCase("application/json")) {
      Responses.error(ctx, 415, "Content-Type", "Content-Type must be application/json"
          + (type == null ? "" : ", was " + abbreviate(type)));
      return;
    }
    String charset = RequestParser.charset(type);
    if (charset != null && !charset.equalsIgnoreCase("utf-8")) {
      Responses.error(ctx, 415, "Content-Type", "JSON bodies are UTF-8 (RFC 8259 section 8.1), charset was "
          + abbreviate(charset));
      return;
    }
    ctx.next();
  }

  /** At most 60 characters of what a client sent, for an answer or a log line. */
  static String abbreviate(String s) {
    return s.length() <= 60 ? s : s.substring(0, 60) + "...";
  }
}
