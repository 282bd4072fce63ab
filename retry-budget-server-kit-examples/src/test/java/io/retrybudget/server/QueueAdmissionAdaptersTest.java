package io.retrybudget.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.server.servlet.QueueAdmissionFilter;
import io.retrybudget.server.vertx.VertxQueueAdmission;
import io.retrybudget.testing.Eventually;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.ext.web.Router;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The admission queue's adapters on real servers — a Vert.x Web route, and the servlet filter on
 * Jetty 12.1 and Tomcat 11 — with one worker and a handler that holds its request until the test
 * lets it go (no sleeps): a request whose deadline passes while it waits is answered 504
 * do-not-retry and never runs, one whose caller gave up never runs, a queued request runs when the
 * worker frees, first attempts before retries, a full queue sheds with a pushback. The queue's
 * timeouts are long here (30 s; never standing) so that only deadlines and the bound decide.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class QueueAdmissionAdaptersTest {
  private static final List<String> ADAPTERS = List.of("vertx", "plain", "jetty", "tomcat");
  private final Map<String, AdmissionQueue> queues = new ConcurrentHashMap<>();
  private final Map<String, Integer> ports = new ConcurrentHashMap<>();
  private final Map<String, CompletableFuture<Void>> holds = new ConcurrentHashMap<>();
  private final List<String> started = new CopyOnWriteArrayList<>();
  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();
  private Vertx vertx;
  private HttpServer vertxServer;
  private HttpServer plainServer;
  private ServletServer jetty;
  private ServletServer tomcat;

  private static AdmissionQueue queue(String name) {
    return AdmissionQueue.builder(QueueConfig.builder(1).name(name).maxQueue(2).longTimeout(Duration.ofSeconds(30))
        .interval(Duration.ofSeconds(60)).build()).build();
  }

  private CompletableFuture<Void> hold(String id) {
    return holds.computeIfAbsent(id, k -> new CompletableFuture<>());
  }

  private HttpServlet servlet() {
    return new HttpServlet() {
      @Override
      protected void doGet(HttpServletRequest req, HttpServletResponse res) throws IOException {
        String id = req.getParameter("id");
        started.add(id);
        hold(id).join();
        res.getOutputStream().write(("ok " + id).getBytes(StandardCharsets.UTF_8));
      }
    };
  }

  @BeforeAll
  void start() throws Exception {
    ADAPTERS.forEach(a -> queues.put(a, queue(a)));
    vertx = Vertx.vertx();
    Router router = Router.router(vertx);
    router.get("/work").handler(VertxQueueAdmission.handler(queues.get("vertx")));
    router.get("/work").handler(ctx -> {
      String id = ctx.request().getParam("id");
      started.add(id);
      Future.fromCompletionStage(hold(id), ctx.vertx().getOrCreateContext()).onComplete(v -> ctx.response().end("ok " + id));
    });
    vertxServer = vertx.createHttpServer().requestHandler(router).listen(0, "127.0.0.1").await();
    ports.put("vertx", vertxServer.actualPort());
    // a plain Vert.x HTTP server: no router; POST echoes its body (read after the request waited)
    plainServer = vertx.createHttpServer().requestHandler(VertxQueueAdmission.requestHandler(queues.get("plain"), req -> {
      String id = req.getParam("id");
      started.add(id);
      Future<io.vertx.core.buffer.Buffer> body = req.body();
      return Future.fromCompletionStage(hold(id), Vertx.currentContext()).compose(v -> body)
          .compose(b -> req.response().end("ok " + id + (b.length() > 0 ? " " + b : "")));
    })).listen(0, "127.0.0.1").await();
    ports.put("plain", plainServer.actualPort());
    jetty = ServletServer.jetty().filter("/work", new QueueAdmissionFilter(queues.get("jetty"))).servlet("/work", servlet());
    ports.put("jetty", jetty.start());
    tomcat = ServletServer.tomcat().filter("/work", new QueueAdmissionFilter(queues.get("tomcat"))).servlet("/work", servlet());
    ports.put("tomcat", tomcat.start());
  }

  @AfterEach
  void settle() {
    holds.values().forEach(h -> h.complete(null));
    for (AdmissionQueue q : queues.values()) {
      Eventually.await("the queue " + q.name() + " is idle", Duration.ofSeconds(20), () -> q.running() == 0 && q.queueLength() == 0);
    }
    started.clear();
  }

  @AfterAll
  void stop() throws Exception {
    plainServer.close().await();
    vertxServer.close().await();
    vertx.close().await();
    jetty.close();
    tomcat.close();
    queues.values().forEach(AdmissionQueue::close);
  }

  private CompletableFuture<HttpResponse<String>> get(String adapter, String id, Integer attempt, Long deadlineMs,
      Duration clientTimeout) {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + ports.get(adapter) + "/work?id=" + id))
        .timeout(clientTimeout).GET();
    if (attempt != null) {
      b.header("X-Retry-Attempt", attempt.toString());
    }
    if (deadlineMs != null) {
      b.header("X-Request-Deadline-Ms", deadlineMs.toString());
    }
    return http.sendAsync(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  private CompletableFuture<HttpResponse<String>> get(String adapter, String id, Integer attempt, Long deadlineMs) {
    return get(adapter, id, attempt, deadlineMs, Duration.ofSeconds(30));
  }

  /** Sends a request that the only worker takes and holds; returns once it runs. */
  private CompletableFuture<HttpResponse<String>> occupy(String adapter, String id) {
    CompletableFuture<HttpResponse<String>> r = get(adapter, id, null, null);
    Eventually.await(id + " runs", Duration.ofSeconds(20), () -> started.contains(id));
    return r;
  }

  private static String id(String what) {
    return what + "-" + UUID.randomUUID().toString().substring(0, 8);
  }

  @ParameterizedTest
  @ValueSource(strings = {"vertx", "plain", "jetty", "tomcat"})
  void aDeadlineThatPassesWhileWaitingIsAnswered504AndTheHandlerNeverRuns(String adapter) {
    AdmissionQueue q = queues.get(adapter);
    String a = id("a");
    CompletableFuture<HttpResponse<String>> first = occupy(adapter, a);
    String b = id("b");
    long sent = System.nanoTime();
    HttpResponse<String> late = get(adapter, b, null, 300L).join();
    long tookMs = (System.nanoTime() - sent) / 1_000_000;
    assertEquals(504, late.statusCode(), late.body());
    assertEquals("-1", late.headers().firstValue("X-Retry-Pushback-Ms").orElse(null));
    assertTrue(late.body().contains("urn:retrybudget:problem:deadline-exceeded"), late.body());
    // it waited for its deadline (the server counts from its arrival, after the client sent it),
    // and was answered while the worker was still busy: not when a worker came free
    assertTrue(tookMs >= 300, "answered after " + tookMs + " ms");
    assertTrue(!first.isDone(), "the worker is still held");
    String c = id("c");
    HttpResponse<String> gaveUp = get(adapter, c, null, 0L).join();
    assertEquals(504, gaveUp.statusCode(), "a caller that has given up");
    hold(a).complete(null);
    assertEquals(200, first.join().statusCode());
    assertEquals(List.of(a), started, "neither b nor c ran");
    assertEquals(2, q.stats().droppedDeadline());
  }

  @ParameterizedTest
  @ValueSource(strings = {"vertx", "plain", "jetty", "tomcat"})
  void aQueuedRequestRunsWhenTheWorkerFreesFirstAttemptsBeforeRetries(String adapter) {
    AdmissionQueue q = queues.get(adapter);
    String a = id("a");
    CompletableFuture<HttpResponse<String>> first = occupy(adapter, a);
    String retry = id("retry");
    CompletableFuture<HttpResponse<String>> r = get(adapter, retry, 2, 20_000L);
    Eventually.await("the retry waits", Duration.ofSeconds(20), () -> q.queueLength() == 1);
    String fresh = id("fresh");
    CompletableFuture<HttpResponse<String>> f = get(adapter, fresh, 1, null);
    Eventually.await("both wait", Duration.ofSeconds(20), () -> q.queueLength() == 2);
    hold(a).complete(null);
    Eventually.await("the first attempt runs", Duration.ofSeconds(20), () -> started.contains(fresh));
    assertEquals(List.of(a, fresh), started, "the first attempt went before the retry that came earlier");
    hold(fresh).complete(null);
    hold(retry).complete(null);
    assertEquals("ok " + fresh, f.join().body());
    assertEquals("ok " + retry, r.join().body());
    assertEquals(200, first.join().statusCode());
    assertEquals(List.of(a, fresh, retry), started);
  }

  @ParameterizedTest
  @ValueSource(strings = {"vertx", "plain", "jetty", "tomcat"})
  void aFullQueueShedsWithAPushback(String adapter) {
    AdmissionQueue q = queues.get(adapter);
    String a = id("a");
    String w1 = id("w1");
    String w2 = id("w2");
    CompletableFuture<HttpResponse<String>> first = occupy(adapter, a);
    List<CompletableFuture<HttpResponse<String>>> waiting = List.of(get(adapter, w1, null, null),
        get(adapter, w2, null, null));
    Eventually.await("two wait", Duration.ofSeconds(20), () -> q.queueLength() == 2);
    String shedId = id("shed");
    HttpResponse<String> shed = get(adapter, shedId, null, null).join();
    assertEquals(503, shed.statusCode());
    assertTrue(shed.body().contains("urn:retrybudget:problem:queue-full"), shed.body());
    long pushback = Long.parseLong(shed.headers().firstValue("X-Retry-Pushback-Ms").orElseThrow());
    assertTrue(pushback >= 100 && pushback <= 20_000, "pushback " + pushback);
    List.of(a, w1, w2).forEach(id -> hold(id).complete(null));
    assertEquals(200, first.join().statusCode());
    waiting.forEach(w -> assertEquals(200, w.join().statusCode()));
    assertTrue(!started.contains(shedId), "the shed request never ran");
    assertEquals(1, q.stats().droppedFull());
  }

  @ParameterizedTest
  @ValueSource(strings = {"vertx", "plain"})
  void onVertxAClientThatLeavesWhileWaitingTakesItsRequestOutOfTheQueue(String adapter) {
    AdmissionQueue q = queues.get(adapter);
    String a = id("a");
    CompletableFuture<HttpResponse<String>> first = occupy(adapter, a);
    String gone = id("gone");
    CompletableFuture<HttpResponse<String>> left = get(adapter, gone, null, null, Duration.ofMillis(300));
    CompletionException e = org.junit.jupiter.api.Assertions.assertThrows(CompletionException.class, left::join);
    assertTrue(e.getCause() instanceof HttpTimeoutException, String.valueOf(e.getCause()));
    Eventually.await("the request left the queue", Duration.ofSeconds(20), () -> q.stats().cancelled() == 1);
    assertEquals(0, q.queueLength());
    hold(a).complete(null);
    assertEquals(200, first.join().statusCode());
    assertEquals(List.of(a), started, "the request of the client that left never ran");
  }

  @Test
  void onAPlainVertxServerTheBodyOfARequestThatWaitedReachesTheWork() {
    AdmissionQueue q = queues.get("plain");
    String a = id("a");
    CompletableFuture<HttpResponse<String>> first = occupy("plain", a);
    String b = id("b");
    HttpRequest post = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + ports.get("plain") + "/work?id=" + b))
        .timeout(Duration.ofSeconds(30)).POST(HttpRequest.BodyPublishers.ofString("x".repeat(100_000))).build();
    CompletableFuture<HttpResponse<String>> waited = http.sendAsync(post, HttpResponse.BodyHandlers.ofString());
    Eventually.await("b waits", Duration.ofSeconds(20), () -> q.queueLength() == 1);
    hold(a).complete(null);
    hold(b).complete(null);
    assertEquals(200, first.join().statusCode());
    assertEquals("ok " + b + " " + "x".repeat(100_000), waited.join().body(), "the whole body, after waiting");
  }
}
