package io.retrybudget.coordinator.api;

import io.retrybudget.coordinator.budgets.BudgetService;
import io.retrybudget.coordinator.status.StatusPage;
import io.vertx.core.Handler;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClosedException;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpMethod;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.BodyHandler;
import java.nio.channels.ClosedChannelException;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.stream.Collectors;

/**
 * The HTTP API v1 (coordinator/openapi.yaml): its routes, the checks in front of each, and the
 * mapping of every failure to an RFC 9457 problem ({@link Problem}): 400 naming the field, 401, 404,
 * 405 with Allow, 409, 413, 415, 422, 503 when Redis fails (naming the cause). The handlers are a
 * class per resource; answers are written by {@link Responses}.
 *
 * <p>Every route is registered through {@link #read} or {@link #write} (which record its methods for
 * Allow, OPTIONS and 405) before {@link #methodNotAllowed}. A write checks, in this order and before
 * a byte of its body is read: the token ({@link BearerAuth}), the query, the Content-Type
 * ({@link RequestChecks}); then the body is read under the limit as it streams. An answer given
 * before the request's body was read closes the connection (the connection guard discards what is
 * left of the body).
 */
public final class BudgetApi {
  static final int MAX_BODY_BYTES = 64 * 1024;
  private static final Logger LOG = Logger.getLogger(BudgetApi.class.getName());
  private static final Set<String> NO_QUERY = Set.of();

  private final BearerAuth auth;
  private final Handler<RoutingContext> metrics;
  private final Buffer openApi;
  private final ListingHandler listing;
  private final BudgetHandler budget;
  private final RequestsHandler requests;
  private final RetriesHandler retries;
  private final HealthHandler health;
  /** Path template -> methods served there, in registration order. */
  private final Map<String, Set<HttpMethod>> allowed = new LinkedHashMap<>();
  private final OncePerMinute abortedUploads = new OncePerMinute("requests ended by the client before their answer");

  public BudgetApi(BudgetService budgets, String token, int maxBudgets, String redisEndpoint, Handler<RoutingContext> metrics,
      Buffer openApi) {
    this.auth = new BearerAuth(token);
    this.metrics = metrics;
    this.openApi = openApi;
    BudgetFailures failures = new BudgetFailures(budgets, redisEndpoint);
    this.listing = new ListingHandler(budgets, failures, maxBudgets);
    this.budget = new BudgetHandler(budgets, failures);
    this.requests = new RequestsHandler(budgets, failures);
    this.retries = new RetriesHandler(budgets, failures);
    this.health = new HealthHandler(budgets, redisEndpoint);
  }

  /** The route templates served (the only values of the {@code route} metric tag). */
  public Set<String> routes() {
    return allowed.keySet();
  }

  public void mount(Router router) {
    Handler<RoutingContext> body = BodyHandler.create(false).setBodyLimit(MAX_BODY_BYTES);
    read(router, "/v1/budgets", Set.of("exhausted", "buckets"), listing::list);
    read(router, "/v1/budgets/:name", NO_QUERY, budget::get);
    write(router, HttpMethod.PUT, "/v1/budgets/:name", body, budget::put);
    write(router, HttpMethod.POST, "/v1/budgets/:name/requests", body, requests::count);
    write(router, HttpMethod.POST, "/v1/budgets/:name/retries", body, retries::retries);
    write(router, HttpMethod.DELETE, "/v1/budgets/:name", null, budget::delete);
    read(router, "/metrics", null, metrics);
    read(router, "/health/live", null, health::live);
    read(router, "/health/ready", null, health::ready);
    read(router, "/openapi.yaml", null, ctx -> Responses.headLength(ctx, openApi.length())
        .putHeader(HttpHeaders.CONTENT_TYPE, "text/plain; charset=utf-8").end(openApi));
    for (StatusPage.Route r : StatusPage.load().routes()) {
      read(router, r.path(), r.query(), r.handler());
    }
    methodNotAllowed(router);

    router.errorHandler(404, ctx -> Responses.error(ctx, 404, "path", "no such resource"));
    router.errorHandler(413, ctx -> Responses.error(ctx, 413, "body", "body larger than " + MAX_BODY_BYTES + " bytes"));
    // the router's own 400 is a path that cannot be decoded (%ZZ); with a failure, a body that cannot
    router.errorHandler(400, ctx -> {
      if (ctx.failure() != null) {
        Responses.error(ctx, 400, "body", "malformed body encoding");
      } else {
        Responses.error(ctx, 400, "path", "malformed path (bad percent-encoding)");
      }
    });
    // what the body handler reports when the request stream fails (the client went away mid-body)
    router.errorHandler(200, ctx -> {
      if (isClosedConnection(ctx.failure())) {
        abortedUploads.report(ctx.request().method() + " " + ctx.request().path());
        return;
      }
      LOG.log(Level.WARNING, "request stream failed on " + ctx.request().path(), ctx.failure());
      Responses.error(ctx, 400, "body", "the request body could not be read");
    });
    router.errorHandler(500, ctx -> {
      if (isClosedConnection(ctx.failure())) {
        abortedUploads.report(ctx.request().method() + " " + ctx.request().path());
        return;
      }
      LOG.log(Level.SEVERE, "unexpected failure on " + ctx.request().path(), ctx.failure());
      Responses.error(ctx, 500, null, "internal error");
    });
  }

  /** Connection-level errors (a reset, a client gone mid-upload): low level, once a minute. */
  public void connectionError(Throwable t) {
    abortedUploads.report(t.getClass().getSimpleName() + ": " + t.getMessage());
  }

  /** How many listing bodies were encoded (for tests). */
  public long listingEncodes() {
    return listing.encodes();
  }

  /** GET and HEAD on {@code path}; {@code query}: the query parameters allowed, null for any. */
  private void read(Router router, String path, Set<String> query, Handler<RoutingContext> handler) {
    allow(path, HttpMethod.GET, HttpMethod.HEAD);
    var route = router.route(path).method(HttpMethod.GET).method(HttpMethod.HEAD);
    if (query != null) {
      route.handler(ctx -> RequestChecks.checkQuery(ctx, query));
    }
    route.handler(handler);
  }

  /** A write: token, query, Content-Type, then the body (when {@code body} is not null) under the limit. */
  private void write(Router router, HttpMethod method, String path, Handler<RoutingContext> body,
      Handler<RoutingContext> handler) {
    allow(path, method);
    var route = router.route(method, path).handler(auth).handler(ctx -> RequestChecks.checkQuery(ctx, NO_QUERY));
    if (body != null) {
      // after the checks on purpose (they are synchronous, so no byte of the body has been read yet);
      // wrapped, as Vert.x Web otherwise insists that a BodyHandler comes first
      route.handler(RequestChecks::requireJson).handler(ctx -> body.handle(ctx));
    }
    route.handler(handler);
  }

  private void allow(String path, HttpMethod... methods) {
    Set<HttpMethod> set = allowed.computeIfAbsent(path, p -> new LinkedHashSet<>());
    set.addAll(List.of(methods));
    set.add(HttpMethod.OPTIONS);
  }

  /** Last: every other method on a known path is OPTIONS (204) or 405, both with Allow. */
  private void methodNotAllowed(Router router) {
    allowed.forEach((path, methods) -> {
      String allow = methods.stream().map(HttpMethod::name).collect(Collectors.joining(", "));
      router.route(path).handler(ctx -> {
        ctx.response().putHeader(HttpHeaders.ALLOW, allow);
        if (ctx.request().method() == HttpMethod.OPTIONS) {
          Responses.closeIfBodyUnread(ctx);
          ctx.response().setStatusCode(204).end();
        } else {
          Responses.error(ctx, 405, "method", ctx.request().method().name() + " is not allowed here; allowed: " + allow);
        }
      });
    });
  }

  private static boolean isClosedConnection(Throwable t) {
    for (; t != null; t = t.getCause()) {
      if (t instanceof HttpClosedException || t instanceof ClosedChannelException
          || (t.getMessage() != null && t.getMessage().contains("Connection was closed"))) {
        return true;
      }
    }
    return false;
  }
}
