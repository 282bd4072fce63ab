package io.retrybudget.coordinator.api;

import io.retrybudget.coordinator.budgets.BudgetStatus;
import io.retrybudget.coordinator.budgets.BudgetService;
import io.retrybudget.coordinator.budgets.ConfigUpdate;
import io.retrybudget.coordinator.status.StatusPage;
import io.retrybudget.budget.internal.PaceArithmetic;
import io.retrybudget.budget.redis.protocol.BrokenBudgetException;
import io.retrybudget.budget.redis.protocol.BudgetReply;
import io.vertx.core.Handler;
import io.vertx.core.MultiMap;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClosedException;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.BodyHandler;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.stream.Collectors;

/**
 * The HTTP API v1 (coordinator/openapi.yaml): routes, authentication of writes, and the mapping of
 * every failure to an RFC 9457 problem ({@link Problem}): 400 naming the field, 401, 404, 405 with
 * Allow, 409, 413, 415, 422, 503 when Redis fails (naming the cause).
 *
 * <p>Every route is registered through {@link #read} or {@link #write} (which record its methods for
 * Allow, OPTIONS and 405) before {@link #methodNotAllowed}. A write checks, in this order and before
 * a byte of its body is read: the token, the query, the Content-Type; then the body is read under
 * the limit as it streams. An answer given before the request's body was read closes the connection
 * (the connection guard discards what is left of the body).
 */
public final class BudgetApi {
  static final int MAX_BODY_BYTES = 64 * 1024;
  private static final Logger LOG = Logger.getLogger(BudgetApi.class.getName());
  private static final Set<String> NO_QUERY = Set.of();
  private static final long REPORT_EVERY_NANOS = TimeUnit.MINUTES.toNanos(1);

  private final BudgetService budgets;
  private final byte[] token;
  private final int maxBudgets;
  private final String redisEndpoint;
  private final Handler<RoutingContext> metrics;
  private final Buffer openApi;
  /** Path template -> methods served there, in registration order. */
  private final Map<String, Set<HttpMethod>> allowed = new LinkedHashMap<>();
  // one encoding per listing and filter, shared by every request that waited for that listing: each
  // encoded it again before, all in one turn of the one event loop (2,000 readers of a 1,000-budget
  // listing: the loop blocked 4 s, so permits and readiness, whose Redis replies it reads, got 503)
  // [with buckets][filter]
  private final BudgetService.Listing[] encodedListing = new BudgetService.Listing[2];
  private final Buffer[][] encodedBodies = new Buffer[2][3];
  private final java.util.concurrent.atomic.AtomicLong listingEncodes = new java.util.concurrent.atomic.AtomicLong();
  private final OncePerMinute abortedUploads = new OncePerMinute("requests ended by the client before their answer");

  public BudgetApi(BudgetService budgets, String token, int maxBudgets, String redisEndpoint, Handler<RoutingContext> metrics,
      Buffer openApi) {
    this.budgets = budgets;
    this.token = token.getBytes(StandardCharsets.UTF_8);
    this.maxBudgets = maxBudgets;
    this.redisEndpoint = redisEndpoint;
    this.metrics = metrics;
    this.openApi = openApi;
  }

  /** The route templates served (the only values of the {@code route} metric tag). */
  public Set<String> routes() {
    return allowed.keySet();
  }

  public void mount(Router router) {
    Handler<RoutingContext> body = BodyHandler.create(false).setBodyLimit(MAX_BODY_BYTES);
    read(router, "/v1/budgets", Set.of("exhausted", "buckets"), this::list);
    read(router, "/v1/budgets/:name", NO_QUERY, this::get);
    write(router, HttpMethod.PUT, "/v1/budgets/:name", body, this::put);
    write(router, HttpMethod.POST, "/v1/budgets/:name/requests", body, this::requests);
    write(router, HttpMethod.POST, "/v1/budgets/:name/retries", body, this::retries);
    write(router, HttpMethod.DELETE, "/v1/budgets/:name", null, this::delete);
    read(router, "/metrics", null, metrics);
    read(router, "/health/live", null, ctx -> json(ctx, 200, new JsonObject().put("status", "UP")));
    read(router, "/health/ready", null, this::ready);
    read(router, "/openapi.yaml", null, ctx -> headLength(ctx, openApi.length())
        .putHeader(HttpHeaders.CONTENT_TYPE, "text/plain; charset=utf-8").end(openApi));
    for (StatusPage.Route r : StatusPage.load().routes()) {
      read(router, r.path(), r.query(), r.handler());
    }
    methodNotAllowed(router);

    router.errorHandler(404, ctx -> error(ctx, 404, "path", "no such resource"));
    router.errorHandler(413, ctx -> error(ctx, 413, "body", "body larger than " + MAX_BODY_BYTES + " bytes"));
    // the router's own 400 is a path that cannot be decoded (%ZZ); with a failure, a body that cannot
    router.errorHandler(400, ctx -> {
      if (ctx.failure() != null) {
        error(ctx, 400, "body", "malformed body encoding");
      } else {
        error(ctx, 400, "path", "malformed path (bad percent-encoding)");
      }
    });
    // what the body handler reports when the request stream fails (the client went away mid-body)
    router.errorHandler(200, ctx -> {
      if (isClosedConnection(ctx.failure())) {
        abortedUploads.report(ctx.request().method() + " " + ctx.request().path());
        return;
      }
      LOG.log(Level.WARNING, "request stream failed on " + ctx.request().path(), ctx.failure());
      error(ctx, 400, "body", "the request body could not be read");
    });
    router.errorHandler(500, ctx -> {
      if (isClosedConnection(ctx.failure())) {
        abortedUploads.report(ctx.request().method() + " " + ctx.request().path());
        return;
      }
      LOG.log(Level.SEVERE, "unexpected failure on " + ctx.request().path(), ctx.failure());
      error(ctx, 500, null, "internal error");
    });
  }

  /** Connection-level errors (a reset, a client gone mid-upload): low level, once a minute. */
  public void connectionError(Throwable t) {
    abortedUploads.report(t.getClass().getSimpleName() + ": " + t.getMessage());
  }

  /** GET and HEAD on {@code path}; {@code query}: the query parameters allowed, null for any. */
  private void read(Router router, String path, Set<String> query, Handler<RoutingContext> handler) {
    allow(path, HttpMethod.GET, HttpMethod.HEAD);
    var route = router.route(path).method(HttpMethod.GET).method(HttpMethod.HEAD);
    if (query != null) {
      route.handler(ctx -> checkQuery(ctx, query));
    }
    route.handler(handler);
  }

  /** A write: token, query, Content-Type, then the body (when {@code body} is not null) under the limit. */
  private void write(Router router, HttpMethod method, String path, Handler<RoutingContext> body,
      Handler<RoutingContext> handler) {
    allow(path, method);
    var route = router.route(method, path).handler(this::authenticate).handler(ctx -> checkQuery(ctx, NO_QUERY));
    if (body != null) {
      // after the checks on purpose (they are synchronous, so no byte of the body has been read yet);
      // wrapped, as Vert.x Web otherwise insists that a BodyHandler comes first
      route.handler(this::requireJson).handler(ctx -> body.handle(ctx));
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
          closeIfBodyUnread(ctx);
          ctx.response().setStatusCode(204).end();
        } else {
          error(ctx, 405, "method", ctx.request().method().name() + " is not allowed here; allowed: " + allow);
        }
      });
    });
  }

  private void checkQuery(RoutingContext ctx, Set<String> allowedParams) {
    if (ctx.request().query() != null && !ctx.request().query().isEmpty()) {
      String unnamed = RequestParser.unnamedQueryField(ctx.request().query());
      if (unnamed != null) {
        // the decoder would read "=1" as a parameter named 1
        error(ctx, 400, "query", "query field without a name: " + abbreviate(unnamed));
        return;
      }
      MultiMap params;
      try {
        params = ctx.queryParams();
      } catch (RuntimeException e) {
        error(ctx, 400, "query", "malformed query string");
        return;
      }
      for (String name : params.names()) {
        if (!allowedParams.contains(name)) {
          error(ctx, 400, name, "unknown query parameter " + name
              + (allowedParams.isEmpty() ? "" : "; allowed: " + String.join(", ", allowedParams)));
          return;
        }
        if (params.getAll(name).size() > 1) {
          error(ctx, 400, name, "query parameter " + name + " given more than once");
          return;
        }
      }
    }
    ctx.next();
  }

  private void authenticate(RoutingContext ctx) {
    if (ctx.request().headers().getAll(HttpHeaders.AUTHORIZATION).size() > 1) {
      // which one counts would be a guess (as with two Host headers): neither
      error(ctx, 400, "Authorization", "more than one Authorization header");
      return;
    }
    if (!validBearer(ctx.request().getHeader(HttpHeaders.AUTHORIZATION))) {
      ctx.response().putHeader("WWW-Authenticate", "Bearer");
      error(ctx, 401, "Authorization", "a valid bearer token is required for writes");
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

  private void requireJson(RoutingContext ctx) {
    String type = ctx.request().getHeader(HttpHeaders.CONTENT_TYPE);
    String media = type == null ? "" : type.split(";", 2)[0].strip();
    if (!media.equalsIgnoreCase("application/json")) {
      error(ctx, 415, "Content-Type", "Content-Type must be application/json"
          + (type == null ? "" : ", was " + abbreviate(type)));
      return;
    }
    String charset = RequestParser.charset(type);
    if (charset != null && !charset.equalsIgnoreCase("utf-8")) {
      error(ctx, 415, "Content-Type", "JSON bodies are UTF-8 (RFC 8259 section 8.1), charset was " + abbreviate(charset));
      return;
    }
    ctx.next();
  }

  private void list(RoutingContext ctx) {
    String exhausted = ctx.queryParams().get("exhausted");
    if (exhausted != null && !exhausted.equals("true") && !exhausted.equals("false")) {
      error(ctx, 400, "exhausted", "exhausted must be true or false");
      return;
    }
    String buckets = ctx.queryParams().get("buckets");
    if (buckets != null && !buckets.equals("true") && !buckets.equals("false")) {
      error(ctx, 400, "buckets", "buckets must be true or false");
      return;
    }
    boolean withBuckets = "true".equals(buckets);
    budgets.list(maxBudgets, withBuckets).onComplete(r -> {
      if (r.failed()) {
        redisDown(ctx, r.cause());
        return;
      }
      if (ctx.response().ended() || ctx.response().closed()) {
        return; // the reader left while it waited: nothing to encode for it
      }
      json(ctx, 200, listingBody(r.result(), withBuckets, exhausted));
    });
  }

  /** The listing's body with the {@code exhausted} filter (null: none), encoded once per listing. */
  private synchronized Buffer listingBody(BudgetService.Listing listing, boolean withBuckets, String exhausted) {
    int kind = withBuckets ? 1 : 0;
    Buffer[] bodies = encodedBodies[kind];
    if (listing != encodedListing[kind]) {
      encodedListing[kind] = listing;
      java.util.Arrays.fill(bodies, null);
    }
    int variant = exhausted == null ? 0 : exhausted.equals("true") ? 1 : 2;
    if (bodies[variant] == null) {
      JsonArray items = new JsonArray();
      for (BudgetStatus s : listing.budgets()) {
        if (exhausted == null || s.exhausted() == Boolean.parseBoolean(exhausted)) {
          items.add(s.toJson());
        }
      }
      JsonArray broken = new JsonArray();
      listing.broken().forEach(b -> broken.add(brokenJson(b)));
      bodies[variant] = new JsonObject().put("budgets", items).put("broken", broken)
          .put("truncated", listing.truncated()).toBuffer();
      listingEncodes.incrementAndGet();
    }
    return bodies[variant];
  }

  /** How many listing bodies were encoded (for tests). */
  public long listingEncodes() {
    return listingEncodes.get();
  }

  private void get(RoutingContext ctx) {
    String name;
    try {
      name = RequestParser.name(ctx.pathParam("name"));
    } catch (BadRequestException e) {
      badRequest(ctx, e);
      return;
    }
    budgets.statusWithBuckets(name).onComplete(r -> {
      if (r.failed()) {
        redisDown(ctx, r.cause());
      } else if (!r.result().exists()) {
        error(ctx, 404, "name", "no budget named " + name);
      } else {
        json(ctx, 200, r.result().toJson());
      }
    });
  }

  private void delete(RoutingContext ctx) {
    String name;
    try {
      name = RequestParser.name(ctx.pathParam("name"));
    } catch (BadRequestException e) {
      badRequest(ctx, e);
      return;
    }
    budgets.delete(name).onComplete(r -> {
      if (r.failed()) {
        redisDown(ctx, r.cause());
      } else if (!r.result()) {
        error(ctx, 404, "name", "no budget named " + name);
      } else if (!ctx.response().ended() && !ctx.response().closed()) {
        ctx.response().setStatusCode(204).end();
      }
    });
  }

  private void put(RoutingContext ctx) {
    String name;
    ConfigUpdate update;
    try {
      name = RequestParser.name(ctx.pathParam("name"));
      update = RequestParser.configUpdate(RequestParser.object(ctx.body().buffer()));
    } catch (BadRequestException e) {
      badRequest(ctx, e);
      return;
    }
    budgets.configure(name, update).onComplete(r -> {
      if (r.failed()) {
        redisDown(ctx, r.cause());
      } else {
        json(ctx, 200, r.result().toJson());
      }
    });
  }

  private void requests(RoutingContext ctx) {
    String name;
    long count;
    try {
      name = RequestParser.name(ctx.pathParam("name"));
      count = RequestParser.count(RequestParser.object(ctx.body().buffer()), RequestParser.MAX_REQUEST_COUNT);
    } catch (BadRequestException e) {
      badRequest(ctx, e);
      return;
    }
    budgets.countRequests(name, count).onComplete(r -> {
      if (r.failed()) {
        redisDown(ctx, r.cause());
      } else if (BudgetReply.MISSING.equals(r.result().status())) {
        missing(ctx, name);
      } else {
        json(ctx, 200, window(r.result()).put("counted", count));
      }
    });
  }

  private void retries(RoutingContext ctx) {
    String name;
    long count;
    try {
      name = RequestParser.name(ctx.pathParam("name"));
      count = RequestParser.count(RequestParser.object(ctx.body().buffer()), RequestParser.MAX_PERMIT_COUNT);
    } catch (BadRequestException e) {
      badRequest(ctx, e);
      return;
    }
    if (count == 1) {
      acquire(ctx, name, count); // one permit fits every balance that refills
      return;
    }
    // more than one: refused at once, with nothing counted, when more than the paced balance can
    // hold (half a second of its rate); shadow mode refuses nothing, so it is asked as always
    budgets.status(name).onComplete(r -> {
      if (r.failed()) {
        redisDown(ctx, r.cause());
      } else if (r.result().exists() && !"shadow".equals(r.result().mode())
          && count > capPermits(r.result().refillPpm()) && r.result().refillPpm() > 0) {
        overCap(ctx, count, capPermits(r.result().refillPpm()));
      } else {
        acquire(ctx, name, count);
      }
    });
  }

  /**
   * Whole permits the paced balance holds at most at this refill rate: the scripts' own rule
   * (lua/budget.lua pace_cap), through its Java model, parity-checked against Redis.
   */
  public static long capPermits(long refillPpm) {
    return PaceArithmetic.available(PaceArithmetic.cap(refillPpm));
  }

  private static void overCap(RoutingContext ctx, long count, long cap) {
    problem(ctx, Problem.of(Problem.Type.COUNT_OVER_CAP, 422, "count", "count " + count
        + " is more than this budget can hold at once now (" + cap
        + ": half a second of its refill rate), so it could not be granted by waiting; ask for at most " + cap
        + " at a time", instance(ctx)).put("max_count", cap));
  }

  private void acquire(RoutingContext ctx, String name, long count) {
    budgets.acquire(name, count).onComplete(r -> {
      if (r.failed()) {
        redisDown(ctx, r.cause());
        return;
      }
      BudgetReply reply = r.result();
      if (BudgetReply.MISSING.equals(reply.status())) {
        missing(ctx, name);
        return;
      }
      boolean granted = !BudgetReply.DENIED.equals(reply.status());
      if (!granted && reply.refillPpm() > 0 && count > capPermits(reply.refillPpm())) {
        // the cap fell between the check and the call (or the call seeded the budget): counted as denied
        overCap(ctx, count, capPermits(reply.refillPpm()));
        return;
      }
      JsonObject out = window(reply).put("granted", granted).put("permits", granted ? count : 0)
          .put("shadow", BudgetReply.SHADOW.equals(reply.status()));
      if (!granted) {
        // when the paced balance holds the permits asked for again (at its refill rate), at least 1 s;
        // one bucket when it does not refill by itself (no traffic, no floor)
        long perPermitMs = reply.refillPpm() > 0 ? (1_000_000_000L + reply.refillPpm() - 1) / reply.refillPpm() : -1;
        long waitMs = perPermitMs < 0 ? reply.windowSeconds() * 100L
            : Math.max(reply.nextGrantMillis(), 0) + Math.max(0, count - Math.max(reply.available(), 1)) * perPermitMs;
        ctx.response().putHeader("Retry-After", Long.toString(Math.max(1, Math.min(3600, (waitMs + 999) / 1000))));
      }
      json(ctx, granted ? 200 : 429, out);
    });
  }

  private static JsonObject window(BudgetReply r) {
    return new JsonObject()
        .put("requests", r.requests())
        .put("retries", r.retries())
        .put("denied", r.denied())
        .put("allowance", r.allowance())
        .put("remaining", r.remaining());
  }

  private void ready(RoutingContext ctx) {
    budgets.ping().onComplete(r -> {
      if (r.succeeded()) {
        json(ctx, 200, new JsonObject().put("status", "UP").put("redis", "UP"));
      } else {
        json(ctx, 503, new JsonObject().put("status", "DOWN").put("redis", "DOWN")
            .put("error", RedisErrors.describe(r.cause(), redisEndpoint, budgets.timeoutMillis())));
      }
    });
  }

  private static void badRequest(RoutingContext ctx, BadRequestException e) {
    error(ctx, e.status(), e.field(), e.getMessage());
  }

  /** A write to a budget that has no configuration: nothing was created (COORDINATOR_AUTO_CREATE=false). */
  private static void missing(RoutingContext ctx, String name) {
    error(ctx, 404, "name", "no budget named " + name + ": create it first with PUT /v1/budgets/" + name);
  }

  private static JsonObject brokenJson(BrokenBudgetException b) {
    return new JsonObject().put("name", b.budget()).put("key", b.key()).put("field", b.field())
        .put("error", b.getMessage());
  }

  private void redisDown(RoutingContext ctx, Throwable cause) {
    if (cause instanceof BrokenBudgetException b) {
      // Redis is up; this budget's keys hold bad state: 409, naming budget, key and field
      problem(ctx, Problem.of(Problem.Type.BROKEN_BUDGET, 409, b.field(),
          b.getMessage() + "; fix it with PUT or DELETE /v1/budgets/" + b.budget(), instance(ctx))
          .put("name", b.budget()).put("budget", b.budget()).put("key", b.key()));
      return;
    }
    LOG.log(Level.FINE, "Redis call failed", cause);
    error(ctx, 503, null, RedisErrors.describe(cause, redisEndpoint, budgets.timeoutMillis()));
  }

  /** An error answer: a problem of the kind {@code status} stands for, naming {@code field} (null: none). */
  public static void error(RoutingContext ctx, int status, String field, String message) {
    problem(ctx, Problem.of(status, field, message, instance(ctx)));
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

  private static void json(RoutingContext ctx, int status, JsonObject body) {
    if (ctx.response().ended() || ctx.response().closed()) {
      return;
    }
    json(ctx, status, body.toBuffer());
  }

  /** An encoded JSON body (the same Buffer may go to many responses: each write reads it, none changes it). */
  private static void json(RoutingContext ctx, int status, Buffer encoded) {
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

  /** HEAD answers the Content-Length its GET would have (Vert.x leaves it out), RFC 9110 section 9.3.2. */
  public static io.vertx.core.http.HttpServerResponse headLength(RoutingContext ctx, int length) {
    if (ctx.request().method() == HttpMethod.HEAD) {
      ctx.response().putHeader(HttpHeaders.CONTENT_LENGTH, Integer.toString(length));
    }
    return ctx.response();
  }

  /** An answer before the body was read ends the connection; the guard discards the rest of the body. */
  private static void closeIfBodyUnread(RoutingContext ctx) {
    HttpServerRequest req = ctx.request();
    if (!req.isEnded() && hasBody(req)) {
      ctx.response().putHeader(HttpHeaders.CONNECTION, HttpHeaders.CLOSE);
    }
  }

  private static boolean hasBody(HttpServerRequest req) {
    String length = req.getHeader(HttpHeaders.CONTENT_LENGTH);
    return req.headers().contains(HttpHeaders.TRANSFER_ENCODING) || (length != null && !length.equals("0"));
  }

  private static boolean isClosedConnection(Throwable t) {
    for (; t != null; t = t.getCause()) {
      if (t instanceof HttpClosedException || t instanceof java.nio.channels.ClosedChannelException
          || (t.getMessage() != null && t.getMessage().contains("Connection was closed"))) {
        return true;
      }
    }
    return false;
  }

  private static String abbreviate(String s) {
    return s.length() <= 60 ? s : s.substring(0, 60) + "...";
  }

  /** A low-level log line at most once a minute, with how many events it stands for. */
  public static final class OncePerMinute {
    private final String what;
    private final LongSupplier nanoClock;
    private final AtomicLong last;
    private final AtomicLong count = new AtomicLong();

    public OncePerMinute(String what) {
      this(what, System::nanoTime);
    }

    public OncePerMinute(String what, LongSupplier nanoClock) {
      this.what = what;
      this.nanoClock = nanoClock;
      this.last = new AtomicLong(nanoClock.getAsLong() - REPORT_EVERY_NANOS);
    }

    /** @return whether this event was logged */
    public boolean report(String example) {
      long n = count.incrementAndGet();
      long now = nanoClock.getAsLong();
      long prev = last.get();
      if (now - prev >= REPORT_EVERY_NANOS && last.compareAndSet(prev, now)) {
        count.addAndGet(-n);
        LOG.fine(what + ": " + n + " in the last minute (e.g. " + abbreviate(example) + ")");
        return true;
      }
      return false;
    }
  }
}
