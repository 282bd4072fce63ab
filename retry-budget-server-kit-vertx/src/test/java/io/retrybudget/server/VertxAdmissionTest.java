package io.retrybudget.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.netflix.concurrency.limits.limit.FixedLimit;
import io.retrybudget.server.vertx.VertxAdmission;
import io.retrybudget.testing.Eventually;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * {@link VertxAdmission} in front of a real overloaded Vert.x server: retries are shed first. The
 * overload runs on a schedule of steps, not on time: each step a retry and then a first attempt
 * arrive, each shed or admitted before the next is sent, and an admitted request is worked on for
 * {@link #HOLD} steps (the test ends its response then). So what is admitted depends on the
 * admission's rules alone, not on how fast this machine runs the client, the server or a timer.
 */
class VertxAdmissionTest {
  /**
   * Steps of the schedule: each offers one retry and one first attempt. The admission settles into
   * a cycle of {@link #HOLD} steps after the first few, so 200 is 20 cycles: first attempts 160 of
   * 200 admitted, retries 3 (the first three steps, below the retries' headroom). About five
   * loopback exchanges a step, one after another: a second on an idle machine, half a minute at a
   * load of 16.
   */
  private static final int STEPS = 200;
  /**
   * Steps an admitted request is worked on. At the limit of 8 in flight the server completes 0.8
   * requests a step against the 2 offered: overloaded 2.5 times, as 1,000/s against 400/s.
   */
  private static final int HOLD = 10;
  /**
   * The longest wait for one loopback exchange or for a permit's release. Nothing is measured
   * against it: an exchange takes milliseconds, and at a load of 16 on 2 cores (an eighth of a core
   * for this process) still well under a second; it only ends a test that hangs.
   */
  private static final Duration EXCHANGE = Duration.ofSeconds(30);
  private static final String ID = "X-Test-Id";

  /** A request the admission let through, held until its step comes to end it. */
  private record Held(RoutingContext ctx, Context context) {}

  /** A response as the client read it, body and all. */
  private record Answer(int status, String pushback) {}

  @Test
  void underOverloadFirstAttemptsSucceedAtLeastTwiceAsOftenAsRetries() throws Exception {
    Vertx vertx = Vertx.vertx();
    try {
      RetryAwareAdmission admission = RetryAwareAdmission.builder().limit(FixedLimit.of(8)).build();
      Map<String, CompletableFuture<Held>> admitted = new ConcurrentHashMap<>();
      Router router = Router.router(vertx);
      router.post("/work").handler(VertxAdmission.handler(admission));
      router.post("/work").handler(ctx ->
          admitted.get(ctx.request().getHeader(ID)).complete(new Held(ctx, Vertx.currentContext())));
      int port = vertx.createHttpServer().requestHandler(router).listen(0, "127.0.0.1").await().actualPort();
      HttpClient client = vertx.createHttpClient(new HttpClientOptions().setDefaultHost("127.0.0.1").setDefaultPort(port),
          new PoolOptions().setHttp1MaxSize(200));
      int[] ok = new int[2];
      int[] sent = new int[2];
      int positivePushback = 0;
      List<List<CompletableFuture<Answer>>> answersOfStep = new ArrayList<>(); // the statuses of the requests held
      List<List<Held>> heldOfStep = new ArrayList<>();
      int inflight = 0;
      for (int step = 0; step < STEPS + HOLD; step++) {
        if (step >= HOLD) {
          // the requests admitted HOLD steps ago are done: their responses end, their permits return
          List<Held> done = heldOfStep.get(step - HOLD);
          for (Held h : done) {
            h.context().runOnContext(v -> h.ctx().response().end("done"));
          }
          for (CompletableFuture<Answer> answer : answersOfStep.get(step - HOLD)) {
            assertEquals(200, answer.get(EXCHANGE.toSeconds(), TimeUnit.SECONDS).status());
          }
          inflight -= done.size();
          int expected = inflight;
          Eventually.await(expected + " in flight once the responses ended", EXCHANGE, () -> admission.inflight() == expected);
        }
        List<Held> held = new ArrayList<>();
        List<CompletableFuture<Answer>> answers = new ArrayList<>();
        heldOfStep.add(held);
        answersOfStep.add(answers);
        if (step >= STEPS) {
          continue; // the last HOLD steps only end what is still held
        }
        // the retry first: it finds the slot the step's ended requests left, and must leave it to the first attempt
        for (int cls : new int[] {1, 0}) {
          String id = step + "-" + cls;
          CompletableFuture<Held> reached = new CompletableFuture<>();
          admitted.put(id, reached);
          sent[cls]++;
          CompletableFuture<Answer> response = client.request(HttpMethod.POST, "/work")
              .compose(req -> req.putHeader(ID, id).putHeader("X-Retry-Attempt", cls == 0 ? "1" : "2").send()
                  .compose(r -> r.body().map(b -> new Answer(r.statusCode(), r.getHeader("X-Retry-Pushback-Ms")))))
              .toCompletionStage().toCompletableFuture();
          CompletableFuture.anyOf(reached, response).get(EXCHANGE.toSeconds(), TimeUnit.SECONDS);
          if (reached.isDone()) {
            held.add(reached.join());
            inflight++;
            ok[cls]++;
            answers.add(response);
          } else {
            Answer shed = response.join();
            assertEquals(503, shed.status());
            if (Long.parseLong(shed.pushback()) > 0) {
              positivePushback++;
            }
          }
          assertEquals(inflight, admission.inflight(), "in flight after " + id);
        }
      }
      double firstRate = ok[0] / (double) sent[0];
      double retryRate = ok[1] / (double) sent[1];
      String figures = "first " + ok[0] + "/" + sent[0] + ", retries " + ok[1] + "/" + sent[1];
      System.out.println("admission under overload: " + figures);
      assertTrue(admission.stats().shedFirst() + admission.stats().shedRetry() > 100, "overloaded: " + figures);
      assertTrue(firstRate >= 2 * retryRate, figures);
      assertTrue(firstRate > 0.3, figures);
      assertEquals(sent[0] + sent[1] - ok[0] - ok[1], positivePushback,
          "every shed answer asks for a positive wait: one replica is never the whole service");
      assertEquals(0, admission.inflight(), "every permit returned");
      client.close().await();
    } finally {
      vertx.close().await();
    }
  }
}
