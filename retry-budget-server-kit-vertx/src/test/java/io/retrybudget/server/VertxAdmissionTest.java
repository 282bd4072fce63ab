package io.retrybudget.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.netflix.concurrency.limits.limit.FixedLimit;
import io.retrybudget.server.vertx.VertxAdmission;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.ext.web.Router;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** {@link VertxAdmission} in front of a real overloaded Vert.x server: retries are shed first. */
class VertxAdmissionTest {
  @Test
  void underOverloadFirstAttemptsSucceedAtLeastTwiceAsOftenAsRetries() {
    Vertx vertx = Vertx.vertx();
    try {
      RetryAwareAdmission admission = RetryAwareAdmission.builder().limit(FixedLimit.of(8)).build();
      Router router = Router.router(vertx);
      router.post("/work").handler(VertxAdmission.handler(admission));
      router.post("/work").handler(ctx -> ctx.vertx().setTimer(20, t -> ctx.response().end("done")));
      int port = vertx.createHttpServer().requestHandler(router).listen(0, "127.0.0.1").await().actualPort();
      HttpClient client = vertx.createHttpClient(new HttpClientOptions().setDefaultHost("127.0.0.1").setDefaultPort(port),
          new PoolOptions().setHttp1MaxSize(200));
      // open loop: 500/s first attempts and 500/s retries for 1.5 s against ~400/s of capacity
      AtomicInteger[] ok = {new AtomicInteger(), new AtomicInteger()};
      AtomicInteger[] sent = {new AtomicInteger(), new AtomicInteger()};
      AtomicInteger positivePushback = new AtomicInteger();
      List<CompletableFuture<Void>> all = java.util.Collections.synchronizedList(new ArrayList<>());
      Promise<Void> sending = Promise.promise();
      long[] ticks = {0};
      vertx.setPeriodic(2, id -> {
        if (++ticks[0] > 750) {
          vertx.cancelTimer(id);
          sending.complete();
          return;
        }
        for (int cls = 0; cls < 2; cls++) {
          int c = cls;
          sent[c].incrementAndGet();
          all.add(client.request(HttpMethod.POST, "/work")
              .compose(req -> req.putHeader("X-Retry-Attempt", c == 0 ? "1" : "2").send()
                  .compose(resp -> resp.body().map(b -> {
                    if (resp.statusCode() == 200) {
                      ok[c].incrementAndGet();
                    } else if (resp.statusCode() == 503 && Long.parseLong(resp.getHeader("X-Retry-Pushback-Ms")) > 0) {
                      positivePushback.incrementAndGet();
                    }
                    return (Void) null;
                  })))
              .toCompletionStage().toCompletableFuture());
        }
      });
      sending.future().await();
      CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).join();
      double firstRate = ok[0].get() / (double) sent[0].get();
      double retryRate = ok[1].get() / (double) sent[1].get();
      String figures = "first " + ok[0] + "/" + sent[0] + ", retries " + ok[1] + "/" + sent[1];
      System.out.println("admission under overload: " + figures);
      assertTrue(admission.stats().shedFirst() + admission.stats().shedRetry() > 100, "overloaded: " + figures);
      assertTrue(firstRate >= 2 * retryRate, figures);
      assertTrue(firstRate > 0.3, figures);
      assertEquals(sent[0].get() + sent[1].get() - ok[0].get() - ok[1].get(), positivePushback.get(),
          "every shed answer asks for a positive wait: one replica is never the whole service");
      client.close().await();
    } finally {
      vertx.close().await();
    }
  }
}
