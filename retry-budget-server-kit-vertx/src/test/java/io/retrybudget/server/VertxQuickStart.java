package io.retrybudget.server;

import com.netflix.concurrency.limits.limit.FixedLimit;
import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import io.retrybudget.server.vertx.VertxAdmission;
import io.retrybudget.server.vertx.VertxIdempotency;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.handler.BodyHandler;
import java.time.Duration;
import java.util.function.Supplier;

/**
 * The module README's example, compiled with the tests and run by {@link VertxQuickStartTest}
 * against a real Redis and a real Vert.x server: the README shows the lines between the markers,
 * and the test fails when they differ.
 */
final class VertxQuickStart {
  private VertxQuickStart() {}

  /** What the example started, closed by the test. */
  record Running(RedisBudgetStore redis, IdempotencyGuard guard, HttpServer server) implements AutoCloseable {
    @Override
    public void close() {
      server.close().await();
      guard.close();
      redis.close();
    }
  }

  static Running start(Vertx vertx, String redisUrl, Supplier<StoredResponse> charge) {
    // README:begin
    RedisBudgetStore redis = RedisBudgetStore.connect(RedisConnectionOptions.standalone(redisUrl).build());
    IdempotencyGuard guard = new IdempotencyGuard(new ClaimStore(redis, Duration.ofSeconds(2)), // bounds every Redis call
        IdempotencyConfig.builder().handlerTimeout(Duration.ofSeconds(10)).build());
    RetryAwareAdmission admission = RetryAwareAdmission.builder().limit(FixedLimit.of(64)).build();

    Router router = Router.router(vertx);
    router.post("/payments").handler(VertxAdmission.handler(admission));            // first: sheds retries first
    router.post("/payments").handler(BodyHandler.create().setBodyLimit(64 * 1024)); // the guard fingerprints the body
    router.post("/payments").handler(VertxIdempotency.handler(guard,                 // once per Idempotency-Key:
        ctx -> Future.succeededFuture(charge.get())));                              // stored, then sent, then replayed
    HttpServer server = vertx.createHttpServer().requestHandler(router).listen(0, "127.0.0.1").await();
    // README:end
    return new Running(redis, guard, server);
  }
}
