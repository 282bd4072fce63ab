package io.retrybudget.coordinator.status;

import io.retrybudget.coordinator.Coordinator;
import io.retrybudget.coordinator.api.BadRequestException;
import io.retrybudget.coordinator.api.BudgetApi;
import io.retrybudget.coordinator.api.Responses;
import io.retrybudget.coordinator.api.RequestParser;
import io.vertx.core.Handler;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.ext.web.RoutingContext;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The status page: one HTML page at {@code /} (the list, {@code ?exhausted=true} to filter) and
 * {@code /budgets/{name}} (one budget), its script, style sheet and icon under {@code /status/}. All
 * shipped in the jar and read once at start; the page polls the read-only JSON API and needs no
 * token.
 *
 * <p>Every answer carries a Content-Security-Policy that allows only this server's own script, style,
 * images and JSON (no inline script, no other origin, no framing), {@code nosniff}, an ETag (a
 * matching {@code If-None-Match} is 304) and {@code Cache-Control: no-cache} (a browser revalidates,
 * so a new coordinator's page is never mixed with an old script).
 */
public final class StatusPage {
  public static final String CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
      + "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
  private static final long MAX_ASSET_BYTES = 256 * 1024;
  private static volatile StatusPage loaded;

  /** A route of the page, registered by {@link BudgetApi} as a read (GET and HEAD). */
  public record Route(String path, Set<String> query, Handler<RoutingContext> handler) {}

  private record Asset(Buffer body, String contentType, String etag) {}

  private final Asset page;
  private final Map<String, Asset> assets;

  private StatusPage() throws IOException {
    page = asset("index.html", "text/html; charset=utf-8");
    assets = Map.of(
        "page.js", asset("page.js", "text/javascript; charset=utf-8"),
        "chart.js", asset("chart.js", "text/javascript; charset=utf-8"),
        "page.css", asset("page.css", "text/css; charset=utf-8"),
        "icon.svg", asset("icon.svg", "image/svg+xml"));
  }

  /** Reads the files from the jar once (call it off the event loop first: Coordinator.start does). */
  public static StatusPage load() {
    StatusPage p = loaded;
    if (p == null) {
      synchronized (StatusPage.class) {
        if (loaded == null) {
          try {
            loaded = new StatusPage();
          } catch (IOException e) {
            throw new UncheckedIOException(e);
          }
        }
        p = loaded;
      }
    }
    return p;
  }

  public List<Route> routes() {
    return List.of(
        new Route("/", Set.of("exhausted"), ctx -> send(ctx, page)),
        new Route("/budgets/:name", Set.of(), this::budgetPage),
        new Route("/status/:asset", Set.of(), this::asset));
  }

  private void budgetPage(RoutingContext ctx) {
    try {
      RequestParser.name(ctx.pathParam("name"));
    } catch (BadRequestException e) {
      Responses.error(ctx, 400, e.field(), e.getMessage());
      return;
    }
    send(ctx, page);
  }

  private void asset(RoutingContext ctx) {
    Asset a = assets.get(ctx.pathParam("asset"));
    if (a == null) {
      Responses.error(ctx, 404, "path", "no such resource");
      return;
    }
    send(ctx, a);
  }

  private static void send(RoutingContext ctx, Asset a) {
    HttpServerResponse r = ctx.response();
    r.putHeader("Content-Security-Policy", CSP)
        .putHeader("X-Content-Type-Options", "nosniff")
        .putHeader("Referrer-Policy", "no-referrer")
        .putHeader(HttpHeaders.CACHE_CONTROL, "no-cache")
        .putHeader(HttpHeaders.ETAG, a.etag());
    String match = ctx.request().getHeader(HttpHeaders.IF_NONE_MATCH);
    if (match != null && matches(match, a.etag())) {
      r.setStatusCode(304).end();
      return;
    }
    r.putHeader(HttpHeaders.CONTENT_TYPE, a.contentType());
    if (ctx.request().method() == HttpMethod.HEAD) {
      // the length GET would send; Vert.x sends no body to HEAD
      r.putHeader(HttpHeaders.CONTENT_LENGTH, Integer.toString(a.body().length())).end();
    } else {
      r.end(a.body());
    }
  }

  /** {@code If-None-Match}: {@code *} or a list of entity tags, weak ones compared weakly (RFC 9110 13.1.2). */
  static boolean matches(String header, String etag) {
    if (header.length() > 4096) {
      return false;
    }
    for (String tag : header.split(",")) {
      String t = tag.strip();
      if (t.equals("*") || t.equals(etag) || (t.startsWith("W/") && t.substring(2).equals(etag))) {
        return true;
      }
    }
    return false;
  }

  private static Asset asset(String file, String contentType) throws IOException {
    try (InputStream in = StatusPage.class.getResourceAsStream("/status/" + file)) {
      if (in == null) {
        throw new IOException("status/" + file + " missing from the classpath");
      }
      byte[] bytes = in.readNBytes((int) MAX_ASSET_BYTES + 1);
      if (bytes.length > MAX_ASSET_BYTES) {
        throw new IOException("status/" + file + " is larger than " + MAX_ASSET_BYTES + " bytes");
      }
      return new Asset(Buffer.buffer(bytes), contentType, "\"" + sha256(bytes) + "\"");
    }
  }

  private static String sha256(byte[] bytes) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes), 0, 12);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
