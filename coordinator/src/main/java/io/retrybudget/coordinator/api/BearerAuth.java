package io.retrybudget.coordinator.api;

import io.vertx.core.Handler;
import io.vertx.core.http.HttpHeaders;
import io.vertx.ext.web.RoutingContext;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;

/**
 * The authentication of writes: exactly one {@code Authorization: Bearer <token>} header with the
 * configured token, else 400 (more than one header) or 401 with {@code WWW-Authenticate: Bearer}.
 */
final class BearerAuth implements Handler<RoutingContext> {
  private final byte[] token;

  BearerAuth(String token) {
    this.token = token.getBytes(StandardCharsets.UTF_8);
  }

  @Override
  public void handle(RoutingContext ctx) {
    if (ctx.request().headers().getAll(HttpHeaders.AUTHORIZATION).size() > 1) {
      // which one counts would be a guess (as with two Host headers): neither
      Responses.error(ctx, 400, "Authorization", "more than one Authorization header");
      return;
    }
    if (!validBearer(ctx.request().getHeader(HttpHeaders.AUTHORIZATION))) {
      ctx.response().putHeader("WWW-Authenticate", "Bearer");
      Responses.error(ctx, 401, "Authorization", "a valid bearer token is required for writes");
      return;
    }
    ctx.next();
  }

  /** {@code Bearer <token>}, the scheme in any case (RFC 9110 section 11.1). Constant time in the token. */
  boolean validBearer(String header) {
    if (header == null) {
      return false;
    }
    int space = header.indexOf(' ');
    if (space != 6 || !header.regionMatches(true, 0, "Bearer", 0, 6)) {
      return false;
    }
    String credentials = header.substring(space + 1).strip();
    return MessageDigest.isEqual(token, credentials.getBytes(StandardCharsets.UTF_8));
  }
}
