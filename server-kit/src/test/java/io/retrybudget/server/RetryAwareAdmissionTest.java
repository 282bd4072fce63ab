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
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Shedding that prefers first attempts: the partitions, the answers, and a real overloaded server. */
class RetryAwareAdmissionTest {
  @Test
  void atTheLimitRetriesAreShedWhileFirstAttemptsKeepTheirShare() {
    RetryAwareAdmission admission = RetryAwareAdmission.builder().limit(FixedLimit.of(10)).retryShare(0.1)
        .retryHeadroom(0).build();
    List<RetryAwareAdmission.Permit> held = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      held.add(admission.tryAcquire(2).orElseThrow()); // below the limit anyone is admitted
      held.add(admission.tryAcquire(1).orElseThrow());
    }
    assertTrue(admission.tryAcquire(3).isEmpty(), "at the limit a retry over its 10 % share is shed");
    Optional<RetryAwareAdmission.Permit> first = admission.tryAcquire(1);
    assertTrue(first.isPresent(), "a first attempt within its 90 % share is admitted");
    held.add(first.get());
    for (int i = 0; i < 3; i++) {
      held.add(admission.tryAcquire(1).orElseThrow());
    }
    assertTrue(admission.tryAcquire(1).isEmpty(), "first attempts at 9 of 10: their share is full too");
    held.forEach(RetryAwareAdmission.Permit::onSuccess);
    assertTrue(admission.tryAcquire(2).isPresent(), "released permits make room again");
    RetryAwareAdmission.Stats s = admission.stats();
    assertEquals(1, s.shedRetry());
    assertEquals(1, s.shedFirst());
  }

  @Test
  void retriesNeverTakeTheHeadroomKeptForFirstAttempts() {
    RetryAwareAdmission admission = RetryAwareAdmission.builder().limit(FixedLimit.of(10)).build();
    List<RetryAwareAdmission.Permit> held = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      held.add(admission.tryAcquire(2).orElseThrow());
    }
    assertEquals(8, admission.inflight());
    assertTrue(admission.tryAcquire(2).isEmpty(), "retries stop at 80 % of the limit");
    held.add(admission.tryAcquire(1).orElseThrow());
    held.add(admission.tryAcquire(1).orElseThrow());
    held.remove(0).onSuccess();
    held.remove(0).onIgnore();
    assertTrue(admission.tryAcquire(2).isEmpty(), "still 8 in flight");
    held.add(admission.tryAcquire(1).orElseThrow());
    held.forEach(RetryAwareAdmission.Permit::onSuccess);
    assertEquals(0, admission.inflight());
  }

  @Test
  void aReplicaFullAsksForAWaitTheWholeServiceOverloadedForNoRetry() {
    RetryAwareAdmission replica = RetryAwareAdmission.builder().limit(FixedLimit.of(1)).build();
    StoredResponse wait = replica.shedAnswer();
    assertEquals(503, wait.status());
    assertEquals("500", wait.header("X-Retry-Pushback-Ms"));
    assertEquals("1", wait.header("Retry-After"));
    assertTrue(new String(wait.body()).contains("replica-overloaded"));

    RetryAwareAdmission fleet = RetryAwareAdmission.builder().limit(FixedLimit.of(1)).serviceOverload(() -> true).build();
    StoredResponse stop = fleet.shedAnswer();
    assertEquals(503, stop.status());
    assertEquals("-1", stop.header("X-Retry-Pushback-Ms"));
    assertEquals("30", stop.header("Retry-After"));
    assertTrue(new String(stop.body()).contains("service-overloaded"));
    assertEquals(1, fleet.stats().shedDoNotRetry());
  }

  @Test
  void attemptNumbersAreReadSafely() {
    assertEquals(1, RetryAwareAdmission.attemptOf(null));
    assertEquals(1, RetryAwareAdmission.attemptOf("x"));
    assertEquals(1, RetryAwareAdmission.attemptOf("-4"));
    assertEquals(3, RetryAwareAdmission.attemptOf(" 3 "));
  }

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
