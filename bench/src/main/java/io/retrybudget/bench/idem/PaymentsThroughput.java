package io.retrybudget.bench.idem;

import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import io.retrybudget.server.ClaimStore;
import io.retrybudget.server.IdempotencyConfig;
import io.retrybudget.server.IdempotencyGuard;
import io.retrybudget.server.StoredResponse;
import io.retrybudget.server.vertx.VertxIdempotency;
import io.retrybudget.testing.RedisServerProcess;
import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.Vertx;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.BodyHandler;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Two copies of a payments endpoint in one process, on one Vert.x event loop each: {@code POST
 * /payments} behind the Idempotency-Key guard (claim, then complete, in a real {@code redis-server}
 * this program starts) and the same handler without it. A load generator (bench/idem/throughput.sh
 * runs wrk, a new key per request) alternates between the two ports, so the ratio of their
 * throughputs is the guard's cost, measured side by side. Prints {@code guarded=<port> bare=<port>}
 * and runs until killed.
 *
 * <pre>
 * bash bench/idem/throughput.sh [rounds] [seconds per round] [connections]
 * </pre>
 */
public final class PaymentsThroughput {
  private PaymentsThroughput() {}

  public static void main(String[] args) throws Exception {
    RedisServerProcess redis = RedisServerProcess.start();
    RedisBudgetStore store = RedisBudgetStore.connect(RedisConnectionOptions.standalone(redis.uri())
        .commandTimeout(Duration.ofSeconds(1)).build());
    IdempotencyGuard guard = new IdempotencyGuard(new ClaimStore(store, Duration.ofMillis(250)),
        IdempotencyConfig.builder().handlerTimeout(Duration.ofSeconds(1)).build());
    Vertx vertx = Vertx.vertx();
    AtomicLong charges = new AtomicLong();
    Router guarded = Router.router(vertx);
    guarded.post("/payments").handler(BodyHandler.create().setBodyLimit(16 * 1024));
    guarded.post("/payments").handler(VertxIdempotency.handler(guard, ctx -> Future.succeededFuture(charge(charges))));
    Router bare = Router.router(vertx);
    bare.post("/payments").handler(BodyHandler.create().setBodyLimit(16 * 1024));
    bare.post("/payments").handler(answer(charges));
    int g = vertx.createHttpServer().requestHandler(guarded).listen(0, "127.0.0.1").await().actualPort();
    int b = vertx.createHttpServer().requestHandler(bare).listen(0, "127.0.0.1").await().actualPort();
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      vertx.close();
      guard.close();
      store.close();
      redis.close();
      System.err.println(charges.get() + " charges");
    }));
    System.out.println("guarded=" + g + " bare=" + b);
    System.out.flush();
    Thread.currentThread().join();
  }

  /** The charge both copies make: a 201 with a JSON body, a Location and a Content-Type. */
  static StoredResponse charge(AtomicLong charges) {
    long n = charges.incrementAndGet();
    String id = "ch_" + Long.toHexString(n);
    return new StoredResponse(201, List.of(new StoredResponse.Header("Content-Type", "application/json"),
        new StoredResponse.Header("Location", "/payments/" + id)),
        ("{\"charge_id\":\"" + id + "\",\"amount\":4200}").getBytes(StandardCharsets.UTF_8));
  }

  private static Handler<RoutingContext> answer(AtomicLong charges) {
    return ctx -> VertxIdempotency.write(ctx.response(), charge(charges));
  }
}
