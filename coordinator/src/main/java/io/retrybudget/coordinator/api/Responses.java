package io.retrybudget.coordinator.api;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

/**
 * How every answer of the HTTP API is written: JSON bodies, RFC 9457 problems ({@link Problem}),
 * HEAD's Content-Length, and {@code Connection: close} on an answer given before the request's body
 * was read (the connection guard discards what is left of the body). An answer to a response that
 * has ended or whose connection has closed is dropped.
 */
public final class Responses {
  private Responses() {}

  /** An error answer: a problem of the kind {@code status} stands for, naming {@code field} (null: none). */
  public static void error(RoutingContext ctx, int status, String field, String message) {
    problem(ctx, Problem.of(status, field, message, instance(ctx)));
  }

  /** HEAD answers the Content-Length its GET would have (Vert.x leaves it out), RFC 9110 section 9.3.2. */
  public static HttpServerResponse headLength(RoutingContext ctx, int length) {
    if (ctx.request().method() == HttpMethod.HEAD) {
      ctx.response().putHeader(HttpHeaders.CONTENT_LENGTH, Integer.toString(length));
    }
    return ctx.response();
  }

  static void badRequest(RoutingContext ctx, BadRequestException e) {
    error(ctx, e.status(), e.field(), e.getMessage());
  }

  static String instance(RoutingContext ctx) {
    return Problem.instanceOf(ctx.request().path());
  }

  /** Answers the problem (application/problem+json) with its status. */
  static void problem(RoutingContext ctx, JsonObject problem) {
    if (ctx.response().ended() || ctx.response().closed()) {
      return;
    }
    send(ctx, problem.getInteger("status"), problem.toBuffer(), Problem.CONTENT_TYPE);
  }

  static void json(RoutingContext ctx, int status, JsonObject body) {
    if (ctx.response().ended() || ctx.response().closed()) {
      return;
    }
    json(ctx, status, body.toBuffer());
  }

  /** An encoded JSON body (the same Buffer may go to many responses: each write reads it, none changes it). */
  static void json(RoutingContext ctx, int status, Buffer encoded) {
    if (ctx.response().ended() || ctx.response().closed()) {
      return;
    }
    send(ctx, status, encoded, "application/json");
  }

  private static void send(RoutingContext ctx, int status, Buffer encoded, String contentType) {
    closeIfBodyUnread(ctx);
    headLength(ctx, encoded.length()).setStatusCode(status).putHeader(HttpHeaders.CONTENT_TYPE, contentType)
        .end(encoded);
  }

  /** An answer before the body was read ends the connection; the guard discards the rest of the body. */
  static void closeIfBodyUnread(RoutingContext ctx) {
    HttpServerRequest req = ctx.request();
    if (!req.isEnded() && hasBody(req)) {
      ctx.response().putHeader(HttpHeaders.CONNECTION, HttpHeaders.CLOSE);
    }
  }

  private static boolean hasBody(HttpServerRequest req) {
    String length = req.getHeader(HttpHeaders.CONTENT_LENGTH);
    return req.headers().contains(HttpHeaders.TRANSFER_ENCODING) || (length != null && !length.equals("0"));
  }
}
