package io.retrybudget.server.example;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParseException;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import io.retrybudget.localredis.LocalRedis;
import io.retrybudget.server.CallerIdentity;
import io.retrybudget.server.ClaimStore;
import io.retrybudget.server.RedisRequirements;
import io.retrybudget.server.IdempotencyConfig;
import io.retrybudget.server.IdempotencyContext;
import io.retrybudget.server.IdempotencyGuard;
import io.retrybudget.server.Problems;
import io.retrybudget.server.StoredResponse;
import io.retrybudget.server.vertx.VertxIdempotency;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.BodyHandler;
import java.io.IOException;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * {@code java -jar retry-budget-server-kit-examples/target/payments-example.jar}: a payments service whose
 * {@code POST /payments} charges once per Idempotency-Key. Environment: {@code PORT} (default 8080),
 * {@code REDIS_URL} (default: a local Redis it starts and owns), {@code DELAY_MS} (how long a charge
 * takes, default 0). See server-kit/README.md.
 */
public final class PaymentsExample implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(PaymentsExample.class.getName());
  private static final int MAX_BODY = 16 * 1024;
  private static final JsonFactory JSON = JsonFactory.builder().enable(com.fasterxml.jackson.core.StreamReadFeature.STRICT_DUPLICATE_DETECTION).build();

  private final Vertx vertx;
  private final HttpServer server;
  private final RedisBudgetStore redis;
  private final IdempotencyGuard guard;
  private final LocalRedis localRedis;
  private final AtomicLong charges;
  private final String redisDescription;
  private final String redisUri;

  private PaymentsExample(Vertx vertx, HttpServer server, RedisBudgetStore redis, IdempotencyGuard guard,
      LocalRedis localRedis, AtomicLong charges, String redisDescription, String redisUri) {
    this.redisUri = redisUri;
    this.vertx = vertx;
    this.server = server;
    this.redis = redis;
    this.guard = guard;
    this.localRedis = localRedis;
    this.charges = charges;
    this.redisDescription = redisDescription;
  }

  /** Starts from an environment map (PORT, REDIS_URL, DELAY_MS); throws on a wrong value. */
  public static PaymentsExample start(Map<String, String> env) throws IOException {
    int port = intEnv(env, "PORT", 8080, 0, 65535);
    long delayMs = intEnv(env, "DELAY_MS", 0, 0, 600_000);
    String redisUrl = env.get("REDIS_URL");
    LocalRedis local = null;
    RedisBudgetStore redis = null;
    Vertx vertx = null;
    IdempotencyGuard guard = null;
    try {
      String described;
      if (redisUrl == null || redisUrl.isBlank()) {
        local = LocalRedis.start();
        redisUrl = local.uri();
        described = "local " + local.binary() + " at " + redisUrl + " (stops with this process, keeps nothing)";
      } else {
        described = redisUrl.replaceAll("//[^@/]*@", "//***@");
      }
      RedisConnectionOptions options = RedisConnectionOptions.standalone(redisUrl).commandTimeout(Duration.ofMillis(500)).build();
      // what the key store needs of Redis: refuses an evicting policy, warns about no persistence
      RedisRequirements.defaults().verify(options);
      redis = RedisBudgetStore.connect(options);
      guard = new IdempotencyGuard(new ClaimStore(redis, Duration.ofMillis(250)), IdempotencyConfig.builder()
          // each caller its own key scope: another Authorization never gets this caller's charge replayed
          .callerIdentity(CallerIdentity.principalOrCredentials())
          .handlerTimeout(Duration.ofMillis(Math.max(1000, 2 * delayMs))).build());
      vertx = Vertx.vertx();
      AtomicLong charges = new AtomicLong();
      Router router = router(vertx, guard, new FencedLedger(), charges, delayMs);
      HttpServer server = vertx.createHttpServer(new HttpServerOptions().setHost("0.0.0.0").setPort(port)
              .setIdleTimeout(60).setIdleTimeoutUnit(TimeUnit.SECONDS))
          .requestHandler(router).listen().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
      return new PaymentsExample(vertx, server, redis, guard, local, charges, described, redisUrl);
    } catch (Exception e) {
      if (vertx != null) {
        vertx.close();
      }
      if (guard != null) {
        guard.close();
      }
      if (redis != null) {
        redis.close();
      }
      if (local != null) {
        local.close();
      }
      throw e instanceof IOException io ? io : new IOException("payments example did not start: " + e, e);
    }
  }

  static Router router(Vertx vertx, IdempotencyGuard guard, FencedLedger ledger, AtomicLong charges, long delayMs) {
    Router router = Router.router(vertx);
    router.post("/payments").handler(ctx -> {
      String type = ctx.request().getHeader("Content-Type");
      if (type == null || !type.toLowerCase(java.util.Locale.ROOT).startsWith("application/json")) {
        VertxIdempotency.write(ctx.response(), Problems.of(415, "unsupported-media-type", "Unsupported media type",
            "POST /payments takes Content-Type: application/json"));
        return;
      }
      ctx.next();
    });
    router.post("/payments").handler(BodyHandler.create().setBodyLimit(MAX_BODY));
    router.post("/payments").handler(VertxIdempotency.handler(guard, ctx -> charge(ctx, ledger, charges, delayMs)));
    router.route("/payments").handler(ctx -> methodNotAllowed(ctx, "POST"));
    router.route(HttpMethod.GET, "/payments/count").handler(ctx -> count(ctx, charges));
    router.route(HttpMethod.HEAD, "/payments/count").handler(ctx -> count(ctx, charges));
    router.route("/payments/count").handler(ctx -> methodNotAllowed(ctx, "GET, HEAD"));
    router.route().failureHandler(ctx -> {
      if (ctx.statusCode() == 413) {
        VertxIdempotency.write(ctx.response(), Problems.of(413, "request-too-large", "Request body too large",
            "the body exceeds " + MAX_BODY + " bytes"));
      } else {
        LOG.log(System.Logger.Level.WARNING, "request failed", ctx.failure());
        VertxIdempotency.write(ctx.response(), Problems.of(500, "internal", "Internal error", "the request failed"));
      }
    });
    return router;
  }

  /**
   * The handler that really charges: validates (a refusal before executing is said so, and not
   * stored: the corrected request may reuse its key), takes DELAY_MS, then writes the charge to the
   * downstream ledger fenced with the claim's token, so that a stale holder cannot charge after a
   * newer one.
   */
  static Future<StoredResponse> charge(RoutingContext ctx, FencedLedger ledger, AtomicLong charges, long delayMs) {
    IdempotencyContext idem = VertxIdempotency.context(ctx);
    long amount;
    try {
      amount = amount(ctx.body().buffer() == null ? new byte[0] : ctx.body().buffer().getBytes());
    } catch (IllegalArgumentException e) {
      idem.rejectedBeforeExecuting();
      return Future.succeededFuture(Problems.of(400, "invalid-body", "Invalid body", e.getMessage()));
    }
    String payment = String.valueOf(ctx.request().getHeader("Idempotency-Key"));
    Promise<StoredResponse> done = Promise.promise();
    Runnable work = () -> {
      if (!ledger.charge(payment, idem.fencingToken())) {
        // a duplicate holds a newer claim on this key: this holder is stale and charges nothing
        done.complete(Problems.of(409, "stale-holder", "Superseded",
            "another request with this key holds a newer claim; nothing was charged by this one"));
        return;
      }
      charges.incrementAndGet();
      String id = "ch_" + UUID.randomUUID().toString().replace("-", "");
      String json = "{\"charge_id\":\"" + id + "\",\"amount\":" + amount + "}";
      done.complete(new StoredResponse(201, List.of(new StoredResponse.Header("Content-Type", "application/json"),
          new StoredResponse.Header("Location", "/payments/" + id)), json.getBytes(StandardCharsets.UTF_8)));
    };
    if (delayMs > 0) {
      ctx.vertx().setTimer(delayMs, t -> work.run());
    } else {
      work.run();
    }
    return done.future();
  }

  /** {@code {"amount": <positive integer>}} and nothing else, strict JSON (no duplicate keys). */
  static long amount(byte[] body) {
    try (JsonParser p = JSON.createParser(body)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        throw new IllegalArgumentException("the body must be a JSON object {\"amount\": <positive integer>}");
      }
      Long amount = null;
      for (JsonToken t = p.nextToken(); t != JsonToken.END_OBJECT; t = p.nextToken()) {
        if (t != JsonToken.FIELD_NAME) {
          throw new IllegalArgumentException("malformed JSON object");
        }
        String field = p.currentName();
        JsonToken v = p.nextToken();
        if (!"amount".equals(field)) {
          throw new IllegalArgumentException("unknown field '" + field + "'");
        }
        if (v != JsonToken.VALUE_NUMBER_INT) {
          throw new IllegalArgumentException("amount must be a positive integer");
        }
        BigInteger n = p.getBigIntegerValue();
        if (n.signum() <= 0 || n.bitLength() > 62) {
          throw new IllegalArgumentException("amount must be a positive integer below 2^62, was " + n);
        }
        amount = n.longValue();
      }
      if (p.nextToken() != null) {
        throw new IllegalArgumentException("trailing content after the JSON object");
      }
      if (amount == null) {
        throw new IllegalArgumentException("amount is missing");
      }
      return amount;
    } catch (JsonParseException e) {
      throw new IllegalArgumentException("invalid JSON: " + e.getOriginalMessage());
    } catch (IOException e) {
      throw new IllegalArgumentException("unreadable body");
    }
  }

  private static void count(RoutingContext ctx, AtomicLong charges) {
    ctx.response().putHeader("Content-Type", "application/json").end("{\"charges\":" + charges.get() + "}");
  }

  private static void methodNotAllowed(RoutingContext ctx, String allow) {
    ctx.response().putHeader("Allow", allow);
    VertxIdempotency.write(ctx.response(), Problems.of(405, "method-not-allowed", "Method not allowed", "allowed: " + allow));
  }

  private static int intEnv(Map<String, String> env, String name, int otherwise, int min, int max) {
    String v = env.get(name);
    if (v == null || v.isBlank()) {
      return otherwise;
    }
    try {
      int n = Integer.parseInt(v.strip());
      if (n < min || n > max) {
        throw new NumberFormatException();
      }
      return n;
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(name + " must be an integer in [" + min + ", " + max + "], was '" + v + "'");
    }
  }

  public int port() {
    return server.actualPort();
  }

  /** How many times the charge handler really ran. */
  public long charges() {
    return charges.get();
  }

  /** The Redis it uses (its own local one when REDIS_URL was not set). */
  public String redisUri() {
    return redisUri;
  }

  public IdempotencyGuard guard() {
    return guard;
  }

  /** Stops HTTP (draining), then the guard, Redis connection, Vert.x and the local Redis. */
  @Override
  public void close() {
    try {
      server.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    } catch (Exception ignored) {
      // closing anyway
    }
    guard.close();
    redis.close();
    try {
      vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    } catch (Exception ignored) {
      // closing anyway
    }
    if (localRedis != null) {
      localRedis.close();
    }
  }

  public static void main(String[] args) throws Exception {
    PaymentsExample example;
    try {
      example = start(System.getenv());
    } catch (IllegalArgumentException e) {
      System.err.println("configuration error: " + e.getMessage());
      System.exit(2);
      return;
    }
    System.out.println("payments example listening on port " + example.port() + ", Redis: " + example.redisDescription);
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      example.close();
      stopped.countDown();
    }, "payments-shutdown"));
    stopped.await();
  }
}
