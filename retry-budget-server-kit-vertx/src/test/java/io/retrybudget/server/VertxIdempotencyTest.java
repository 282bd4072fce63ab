package io.retrybudget.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.server.vertx.VertxIdempotency;
import io.retrybudget.testing.RedisExtension;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.PoolOptions;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.BodyHandler;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The contract on a real Vert.x Web server, and 1,000 keys x 50 concurrent duplicates. */
class VertxIdempotencyTest extends IdempotencyContract {
  @RegisterExtension
  static final RedisExtension redis = RedisExtension.standalone();

  private Vertx vertx;

  @Override
  protected RedisExtension redis() {
    return redis;
  }

  @Override
  protected int startServer(IdempotencyGuard payments, IdempotencyGuard waiting, TestPayments app) {
    vertx = Vertx.vertx();
    Router router = Router.router(vertx);
    router.route().handler(BodyHandler.create().setBodyLimit(1024 * 1024));
    router.post("/payments").handler(VertxIdempotency.handler(payments, ctx -> handle(ctx, app)));
    router.post("/waiting/payments").handler(VertxIdempotency.handler(waiting, ctx -> handle(ctx, app)));
    router.post("/stored/payments").handler(VertxIdempotency.handler(storeAll, ctx -> handle(ctx, app)));
    HttpServer server = vertx.createHttpServer().requestHandler(router).listen(0, "127.0.0.1").await();
    return server.actualPort();
  }

  static Future<StoredResponse> handle(RoutingContext ctx, TestPayments app) {
    String key = ctx.request().getHeader("Idempotency-Key");
    String body = ctx.body().asString();
    if (app.shouldHold(body)) {
      return Future.fromCompletionStage(app.hold(key), ctx.vertx().getOrCreateContext()).map(x -> app.answer(key, body, VertxIdempotency.context(ctx)));
    }
    return Future.succeededFuture(app.answer(key, body, VertxIdempotency.context(ctx)));
  }

  @Override
  protected void stopServer() {
    vertx.close().await();
  }

  @Test
  void aThousandKeysTimesFiftyDuplicatesExecuteOnceEach() {
    int keys = 1000;
    int duplicates = 50;
    int keysPerWave = 40;
    HttpClient client = vertx.createHttpClient(new HttpClientOptions().setDefaultHost("127.0.0.1").setDefaultPort(port),
        new PoolOptions().setHttp1MaxSize(64));
    record Answer(int status, String body, String replayed) {}
    try {
      for (int wave = 0; wave < keys / keysPerWave; wave++) {
        List<String> waveKeys = new ArrayList<>();
        List<CompletableFuture<Answer>> answers = new ArrayList<>();
        for (int k = 0; k < keysPerWave; k++) {
          String key = newKey();
          waveKeys.add(key);
          for (int d = 0; d < duplicates; d++) {
            answers.add(client.request(HttpMethod.POST, "/waiting/payments")
                .compose(req -> req.putHeader("Idempotency-Key", key).putHeader("Content-Type", "application/json")
                    .send(Buffer.buffer("{\"amount\":9}"))
                    .compose(resp -> resp.body().map(b -> new Answer(resp.statusCode(), b.toString(),
                        resp.getHeader(IdempotencyGuard.REPLAYED_HEADER)))))
                .toCompletionStage().toCompletableFuture());
          }
        }
        CompletableFuture.allOf(answers.toArray(CompletableFuture[]::new)).join();
        for (int k = 0; k < keysPerWave; k++) {
          assertEquals(1, app.executions(waveKeys.get(k)), "executions of a key");
          Set<String> bodies = new HashSet<>();
          int replays = 0;
          for (int d = 0; d < duplicates; d++) {
            Answer a = answers.get(k * duplicates + d).join();
            assertEquals(201, a.status(), a.body());
            bodies.add(a.body());
            replays += "true".equals(a.replayed()) ? 1 : 0;
          }
          assertEquals(1, bodies.size(), "every answer of a key is the first one");
          assertEquals(duplicates - 1, replays, "all but the executing one are replays");
        }
      }
    } finally {
      client.close().await();
    }
    assertTrue(waiting.stats().executed() >= keys);
  }
}
