package io.retrybudget.coordinator.api;

import io.vertx.core.json.JsonObject;

/**
 * An error answer of the coordinator as RFC 9457 problem details ({@code application/problem+json}),
 * in the server kit's style ({@code io.retrybudget.server.Problems}): {@code type} is a URN naming
 * the kind of problem ({@code urn:retrybudget:problem:invalid-request}), {@code title} its fixed
 * summary, {@code status} the HTTP status, {@code detail} what went wrong with this request and
 * {@code instance} the request's path (left out where the request could not be read).
 *
 * <p>Two extension members keep clients of the former {@code {"error", "field"}} body working:
 * {@code error}, the same text as {@code detail}, deprecated and kept for this release only (read
 * {@code detail}), and {@code field}, the input at fault when there is one (a body field, {@code
 * body}, {@code path}, {@code method}, {@code Authorization}, {@code Content-Type}, {@code header},
 * a query parameter).
 */
public final class Problem {
  public static final String CONTENT_TYPE = "application/problem+json";
  static final String TYPE_PREFIX = "urn:retrybudget:problem:";
  /** The longest {@code instance}: a request line may be 4 KiB, the problem need not echo all of it. */
  static final int MAX_INSTANCE_CHARS = 200;

  /** The kinds of problem: the last part of {@code type}, and the title every problem of the kind has. */
  public enum Type {
    INVALID_REQUEST("invalid-request", "The request is not valid"),
    UNAUTHORIZED("unauthorized", "A valid bearer token is required"),
    NOT_FOUND("not-found", "No such resource"),
    METHOD_NOT_ALLOWED("method-not-allowed", "Method not allowed here"),
    REQUEST_TIMEOUT("request-timeout", "The request did not arrive in time"),
    BROKEN_BUDGET("broken-budget", "The budget's keys in Redis hold bad state"),
    BODY_TOO_LARGE("body-too-large", "The request body is too large"),
    URI_TOO_LONG("uri-too-long", "The request line is too long"),
    UNSUPPORTED_MEDIA_TYPE("unsupported-media-type", "The body must be JSON in UTF-8"),
    COUNT_OVER_CAP("count-over-cap", "More permits than the budget can hold at once"),
    HEADERS_TOO_LARGE("headers-too-large", "The request headers are too large"),
    INTERNAL_ERROR("internal-error", "Internal error"),
    UNKNOWN_METHOD("unknown-method", "Unknown method"),
    REDIS_UNAVAILABLE("redis-unavailable", "Redis is unavailable"),
    OVERLOADED("overloaded", "The coordinator is at its connection cap"),
    UNSUPPORTED_VERSION("http-version-not-supported", "HTTP version not supported");

    private final String slug;
    private final String title;

    Type(String slug, String title) {
      this.slug = slug;
      this.title = title;
    }

    String uri() {
      return TYPE_PREFIX + slug;
    }

    String title() {
      return title;
    }

    /** The kind an error status stands for where nothing more specific is known. */
    public static Type forStatus(int status) {
      return switch (status) {
        case 401 -> UNAUTHORIZED;
        case 404 -> NOT_FOUND;
        case 405 -> METHOD_NOT_ALLOWED;
        case 408 -> REQUEST_TIMEOUT;
        case 409 -> BROKEN_BUDGET;
        case 413 -> BODY_TOO_LARGE;
        case 414 -> URI_TOO_LONG;
        case 415 -> UNSUPPORTED_MEDIA_TYPE;
        case 422 -> COUNT_OVER_CAP;
        case 431 -> HEADERS_TOO_LARGE;
        case 501 -> UNKNOWN_METHOD;
        case 503 -> REDIS_UNAVAILABLE;
        case 505 -> UNSUPPORTED_VERSION;
        default -> status >= 500 ? INTERNAL_ERROR : INVALID_REQUEST;
      };
    }
  }

  private Problem() {}

  /** A problem of the kind {@code status} stands for. */
  public static JsonObject of(int status, String field, String detail, String instance) {
    return of(Type.forStatus(status), status, field, detail, instance);
  }

  /**
   * The problem's members; {@code field} and {@code instance} are left out when null. Callers add
   * further extension members (a broken budget's {@code key}, an over-cap request's {@code max_count}).
   */
  public static JsonObject of(Type type, int status, String field, String detail, String instance) {
    JsonObject body = new JsonObject()
        .put("type", type.uri())
        .put("title", type.title())
        .put("status", status)
        .put("detail", detail);
    if (instance != null) {
      body.put("instance", instance.length() <= MAX_INSTANCE_CHARS ? instance : instance.substring(0, MAX_INSTANCE_CHARS));
    }
    body.put("error", detail);
    if (field != null) {
      body.put("field", field);
    }
    return body;
  }

  /** The path of a request target ({@code /v1/budgets/x?a=1} gives {@code /v1/budgets/x}); null for none. */
  public static String instanceOf(String target) {
    if (target == null || target.isEmpty() || target.charAt(0) != '/') {
      return null; // the asterisk form, or an absolute form this server does not serve
    }
    int q = target.indexOf('?');
    return q < 0 ? target : target.substring(0, q);
  }
}
