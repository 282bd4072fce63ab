package io.retrybudget.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.server.servlet.AdmissionFilter;
import io.retrybudget.server.servlet.IdempotencyFilter;
import io.retrybudget.server.servlet.TieFilter;
import io.retrybudget.server.servlet.Waiting;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.Filter;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.eclipse.jetty.ee11.servlet.FilterHolder;
import org.eclipse.jetty.ee11.servlet.ServletContextHandler;
import org.eclipse.jetty.ee11.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.util.thread.QueuedThreadPool;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The servlet filters wait for Redis off the container's thread ({@link Waiting#ASYNC}): a real
 * Jetty 12.1 with a tiny thread pool (4 threads for requests) and a real Redis paused (SIGSTOP)
 * under a store whose timeout is long, so every claim is outstanding; other requests are still
 * served, and when Redis answers every waiting request gets its right answer. The blocking path
 * (a request that does not support async) still decides right.
 */
class ServletAsyncWaitTest {
  @RegisterExtension
  static final RedisExtension redis = RedisExtension.standalone();

  private static final EnumSet<DispatcherType> REQUEST_AND_ASYNC = EnumSet.of(DispatcherType.REQUEST, DispatcherType.ASYNC);
  /** More waiting requests than the pool has threads for requests. */
  private static final int WAITING = 12;

  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  private final AtomicInteger arrived = new AtomicInteger();
  private final AtomicInteger executed = new AtomicInteger();
  /** What the servlet does as its work (the tests' hook); nothing by default. */
  private volatile Runnable duringWork = () -> { };
  private RedisBudgetStore connection;
  private ClaimStore claims;
  private Server server;
  private URI base;

  @BeforeEach
  void connect() {
    // the store's bound is long: while Redis is paused every claim stays outstanding for the test
    connection = RedisBudgetStore.connect(redis.connectionOptions().commandTimeout(Duration.ofSeconds(30)).build());
    claims = new ClaimStore(connection, Duration.ofSeconds(30));
  }

  @AfterEach
  void stop() throws Exception {
    redis.server().resume();
    if (server != null) {
      server.stop();
    }
    connection.close();
  }

  /** A Jetty whose pool leaves 4 threads for requests: 6 threads, 1 acceptor, 1 selector, none reserved. */
  private void start(java.util.function.Consumer<ServletContextHandler> filters, boolean asyncSupported) throws Exception {
    QueuedThreadPool pool = new QueuedThreadPool(6, 6);
    pool.setReservedThreads(0);
    server = new Server(pool);
    ServerConnector connector = new ServerConnector(server, 1, 1);
    connector.setHost("127.0.0.1");
    server.addConnector(connector);
    ServletContextHandler context = new ServletContextHandler();
    ServletHolder work = new ServletHolder(new HttpServlet() {
      @Override
      protected void service(HttpServletRequest req, HttpServletResponse res) throws IOException {
        executed.incrementAndGet();
        duringWork.run();
        byte[] body = req.getInputStream().readAllBytes();
        res.setStatus(201);
        res.setContentType("text/plain");
        res.getOutputStream().write(("worked " + new String(body, StandardCharsets.UTF_8)).getBytes(StandardCharsets.UTF_8));
      }
    });
    work.setAsyncSupported(asyncSupported);
    context.addServlet(work, "/work");
    context.addServlet(new ServletHolder(new HttpServlet() {
      @Override
      protected void doGet(HttpServletRequest req, HttpServletResponse res) throws IOException {
        res.getWriter().write("pong");
      }
    }), "/ping");
    FilterHolder counting = new FilterHolder((Filter) (req, res, chain) -> {
      arrived.incrementAndGet();
      chain.doFilter(req, res);
    });
    counting.setAsyncSupported(asyncSupported);
    context.addFilter(counting, "/work", EnumSet.of(DispatcherType.REQUEST));
    filters.accept(context);
    server.setHandler(context);
    server.start();
    base = URI.create("http://127.0.0.1:" + connector.getLocalPort());
  }

  private static FilterHolder holder(Filter filter, boolean asyncSupported) {
    FilterHolder h = new FilterHolder(filter);
    h.setAsyncSupported(asyncSupported);
    return h;
  }

  private CompletableFuture<HttpResponse<String>> tied(String tie) {
    return http.sendAsync(HttpRequest.newBuilder(base.resolve("/work")).timeout(Duration.ofSeconds(60))
        .header(TieGuard.TIE_HEADER, tie).GET().build(), HttpResponse.BodyHandlers.ofString());
  }

  private HttpResponse<String> ping() throws Exception {
    // the container has threads for it only if the waiting requests do not hold them
    return http.send(HttpRequest.newBuilder(base.resolve("/ping")).timeout(Duration.ofSeconds(5)).GET().build(),
        HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void aSlowTieClaimDoesNotHoldTheContainersThread() throws Exception {
    TieGuard ties = new TieGuard(claims, Duration.ofSeconds(5));
    start(c -> c.addFilter(holder(new TieFilter(ties, Waiting.ASYNC), true), "/work", REQUEST_AND_ASYNC), true);
    redis.server().pause();
    List<String> tieIds = new ArrayList<>();
    List<CompletableFuture<HttpResponse<String>>> copies = new ArrayList<>();
    for (int i = 0; i < WAITING; i++) {
      tieIds.add(UUID.randomUUID().toString());
      copies.add(tied(tieIds.get(i)));
    }
    // a copy that cannot reach the filter waits for a container thread that another copy's claim holds
    Eventually.await("every copy reached the tie filter", Duration.ofSeconds(20), () -> arrived.get() == WAITING);
    HttpResponse<String> pong = ping();
    assertEquals("pong", pong.body(), "served while " + WAITING + " claims wait for Redis");
    assertTrue(copies.stream().noneMatch(CompletableFuture::isDone), "the claims were still outstanding");
    redis.server().resume();
    for (CompletableFuture<HttpResponse<String>> copy : copies) {
      HttpResponse<String> r = copy.join();
      assertEquals(201, r.statusCode(), r.body());
      assertEquals("true", r.headers().firstValue(TieGuard.WON_HEADER).orElse(null));
      assertEquals("worked ", r.body());
    }
    assertEquals(WAITING, executed.get());
    // the other copy of each tie loses, and is answered without running
    redis.server().pause();
    CompletableFuture<HttpResponse<String>> loser = tied(tieIds.get(0));
    Eventually.await("the second copy reached the filter", Duration.ofSeconds(20), () -> arrived.get() == WAITING + 1);
    redis.server().resume();
    HttpResponse<String> lost = loser.join();
    assertEquals(409, lost.statusCode());
    assertEquals("true", lost.headers().firstValue(TieGuard.LOST_HEADER).orElse(null));
    assertEquals(WAITING, executed.get(), "the losing copy did no work");
    assertEquals(WAITING, ties.stats()[0]);
    assertEquals(1, ties.stats()[1]);
  }

  @Test
  void withoutAsyncSupportTheTieIsWaitedForOnTheThreadAndStillDecided() throws Exception {
    TieGuard ties = new TieGuard(claims, Duration.ofSeconds(5));
    start(c -> c.addFilter(holder(new TieFilter(ties, Waiting.ASYNC), false), "/work", REQUEST_AND_ASYNC), false);
    String tie = UUID.randomUUID().toString();
    HttpResponse<String> won = tied(tie).join();
    assertEquals(201, won.statusCode());
    assertEquals("true", won.headers().firstValue(TieGuard.WON_HEADER).orElse(null));
    HttpResponse<String> lost = tied(tie).join();
    assertEquals(409, lost.statusCode());
    assertNull(lost.headers().firstValue(TieGuard.WON_HEADER).orElse(null));
    assertEquals(1, executed.get());
  }

  private CompletableFuture<HttpResponse<String>> post(String key, String body, String tie) {
    HttpRequest.Builder b = HttpRequest.newBuilder(base.resolve("/work")).timeout(Duration.ofSeconds(60))
        .header("Idempotency-Key", key).header("Content-Type", "text/plain")
        .POST(HttpRequest.BodyPublishers.ofString(body));
    if (tie != null) {
      b.header(TieGuard.TIE_HEADER, tie);
    }
    return http.sendAsync(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void aSlowIdempotencyClaimDoesNotHoldTheContainersThread() throws Exception {
    try (IdempotencyGuard guard = new IdempotencyGuard(claims, IdempotencyConfig.builder().build())) {
      start(c -> c.addFilter(holder(new IdempotencyFilter(guard, 1024, Waiting.ASYNC), true), "/work", REQUEST_AND_ASYNC),
          true);
      redis.server().pause();
      List<String> keys = new ArrayList<>();
      List<CompletableFuture<HttpResponse<String>>> posts = new ArrayList<>();
      for (int i = 0; i < WAITING; i++) {
        keys.add(UUID.randomUUID().toString());
        posts.add(post(keys.get(i), "body " + i, null));
      }
      // a request that cannot reach the filter waits for a container thread that another's claim holds
      Eventually.await("every request reached the filter", Duration.ofSeconds(20), () -> arrived.get() == WAITING);
      assertEquals("pong", ping().body(), "served while " + WAITING + " claims wait for Redis");
      assertTrue(posts.stream().noneMatch(CompletableFuture::isDone), "the claims were still outstanding");
      redis.server().resume();
      for (int i = 0; i < WAITING; i++) {
        HttpResponse<String> r = posts.get(i).join();
        assertEquals(201, r.statusCode(), r.body());
        assertEquals("worked body " + i, r.body(), "the servlet read the body the filter had read");
      }
      assertEquals(WAITING, executed.get());
      HttpResponse<String> replay = post(keys.get(3), "body 3", null).join();
      assertEquals(201, replay.statusCode());
      assertEquals("worked body 3", replay.body());
      assertEquals("true", replay.headers().firstValue("Idempotent-Replayed").orElse(null), "its answer was stored");
      assertEquals(422, post(keys.get(3), "another body", null).join().statusCode());
      assertEquals(WAITING, executed.get());
      Eventually.await("no claim left renewing", Duration.ofSeconds(10), () -> guard.renewing() == 0);
    }
  }

  @Test
  void admissionTieAndKeyFiltersInOneChainEachDecideOnceAndThePermitLastsUntilTheAnswer() throws Exception {
    RetryAwareAdmission admission = RetryAwareAdmission.builder().build();
    TieGuard ties = new TieGuard(claims, Duration.ofSeconds(5));
    try (IdempotencyGuard guard = new IdempotencyGuard(claims, IdempotencyConfig.builder().build())) {
      start(c -> {
        c.addFilter(holder(new AdmissionFilter(admission), true), "/work", REQUEST_AND_ASYNC);
        c.addFilter(holder(new TieFilter(ties, Waiting.ASYNC), true), "/work", REQUEST_AND_ASYNC);
        c.addFilter(holder(new IdempotencyFilter(guard, 1024, Waiting.ASYNC), true), "/work", REQUEST_AND_ASYNC);
      }, true);
      redis.server().pause();
      String tie = UUID.randomUUID().toString();
      String key = UUID.randomUUID().toString();
      CompletableFuture<HttpResponse<String>> first = post(key, "once", tie);
      Eventually.await("the copy reached the chain", Duration.ofSeconds(20), () -> arrived.get() == 1);
      assertEquals(1, admission.inflight(), "admitted, waiting for the tie's claim, the permit held");
      redis.server().resume();
      HttpResponse<String> r = first.join();
      assertEquals(201, r.statusCode(), r.body());
      assertEquals("true", r.headers().firstValue(TieGuard.WON_HEADER).orElse(null));
      assertEquals("worked once", r.body());
      Eventually.await("the permit ended with the request", Duration.ofSeconds(10), () -> admission.inflight() == 0);
      assertEquals(1, admission.stats().admittedFirst(), "admitted once, though the request passed the filter twice or thrice");
      assertEquals(409, post(key, "once", tie).join().statusCode(), "the other copy lost the tie");
      HttpResponse<String> replay = post(key, "once", UUID.randomUUID().toString()).join();
      assertEquals("true", replay.headers().firstValue("Idempotent-Replayed").orElse(null));
      assertEquals(1, executed.get());
      Eventually.await("every permit ended", Duration.ofSeconds(10), () -> admission.inflight() == 0);
      assertEquals(2, ties.stats()[0], "won: the first copy and the replayed request's own tie");
    }
  }

  @Test
  void aFilterNotMappedForAsyncDispatchesFindsOutReleasesItsClaimAndWaitsBlockingFromThenOn() throws Exception {
    try (IdempotencyGuard guard = new IdempotencyGuard(claims, IdempotencyConfig.builder().build())) {
      // the mapping the README showed before: REQUEST only, so the claim's dispatch skips the filter
      start(c -> c.addFilter(holder(new IdempotencyFilter(guard, 1024, Waiting.ASYNC), true), "/work",
          EnumSet.of(DispatcherType.REQUEST)), true);
      String key = UUID.randomUUID().toString();
      redis.server().pause();
      CompletableFuture<HttpResponse<String>> first = post(key, "a", null);
      Eventually.await("the request reached the filter", Duration.ofSeconds(20), () -> arrived.get() == 1);
      redis.server().resume();
      assertEquals(201, first.join().statusCode());
      Eventually.await("its claim released, not renewed for ever", Duration.ofSeconds(10), () -> guard.renewing() == 0);
      assertEquals(201, post(key, "a", null).join().statusCode(), "the key was free again (its answer was never stored)");
      assertEquals(2, executed.get());
      // from now on blocking: guarded as before
      String next = UUID.randomUUID().toString();
      assertEquals(201, post(next, "b", null).join().statusCode());
      HttpResponse<String> replay = post(next, "b", null).join();
      assertEquals("true", replay.headers().firstValue("Idempotent-Replayed").orElse(null));
      assertEquals(3, executed.get());
    }
  }

  @Test
  void aClaimThatOutlastsTheAsyncTimeoutIsAnsweredOnceAndALateClaimIsReleased() throws Exception {
    // the async bound (10 s for a tie, 10 s + waitForInProgress for a key) before the store's 30 s
    TieGuard ties = new TieGuard(claims, Duration.ofSeconds(5));
    try (IdempotencyGuard guard = new IdempotencyGuard(claims, IdempotencyConfig.builder().build())) {
      IdempotencyFilter keys = new IdempotencyFilter(guard, 1024, Waiting.ASYNC);
      TieFilter tieFilter = new TieFilter(ties, Waiting.ASYNC);
      start(c -> c.addFilter(holder((Filter) (req, res, chain) -> {
        // ties on GET, keys on POST, one route
        if ("GET".equals(((HttpServletRequest) req).getMethod())) {
          tieFilter.doFilter(req, res, chain);
        } else {
          keys.doFilter(req, res, chain);
        }
      }, true), "/work", REQUEST_AND_ASYNC), true);
      redis.server().pause();
      String key = UUID.randomUUID().toString();
      CompletableFuture<HttpResponse<String>> copy = tied(UUID.randomUUID().toString());
      CompletableFuture<HttpResponse<String>> keyed = post(key, "slow", null);
      HttpResponse<String> ran = copy.join();
      assertEquals(201, ran.statusCode(), "a tie not decided in time runs the copy, as the blocking path");
      assertEquals("true", ran.headers().firstValue(TieGuard.WON_HEADER).orElse(null));
      HttpResponse<String> refused = keyed.join();
      assertEquals(503, refused.statusCode(), refused.body());
      assertTrue(refused.body().contains("idempotency-store-unavailable"), refused.body());
      assertEquals(1, executed.get(), "the keyed request did not run");
      redis.server().resume();
      // the claim Redis made after the answer went out is released, not left for its lease (35 s)
      Eventually.await("the late claim made and released", Duration.ofSeconds(10), () -> guard.stats().executed() == 1
          && guard.stats().released() == 1 && guard.renewing() == 0);
      assertEquals(0L, redis.server().call("EXISTS", ClaimStore.idempotencyKey("", key)));
      HttpResponse<String> retry = post(key, "slow", null).join();
      assertEquals(201, retry.statusCode(), retry.body());
      assertEquals(2, executed.get());
    }
  }

  @Test
  void aClientThatLeavesWhileItsClaimWaitsLeavesNothingBehind() throws Exception {
    try (IdempotencyGuard guard = new IdempotencyGuard(claims, IdempotencyConfig.builder().build())) {
      start(c -> c.addFilter(holder(new IdempotencyFilter(guard, 1024, Waiting.ASYNC), true), "/work", REQUEST_AND_ASYNC),
          true);
      redis.server().pause();
      String key = UUID.randomUUID().toString();
      try (java.net.Socket socket = new java.net.Socket("127.0.0.1", base.getPort())) {
        socket.getOutputStream().write(("POST /work HTTP/1.1\r\nHost: x\r\nIdempotency-Key: " + key
            + "\r\nContent-Type: text/plain\r\nContent-Length: 4\r\n\r\ngone").getBytes(StandardCharsets.US_ASCII));
        socket.getOutputStream().flush();
        Eventually.await("the request reached the filter", Duration.ofSeconds(20), () -> arrived.get() == 1);
      } // the client leaves while its claim waits
      redis.server().resume();
      // whether the container noticed (the claim is then released when it comes) or not (the request
      // ran for nobody and its answer was stored), nothing is left holding the key or a timer
      String record = ClaimStore.idempotencyKey("", key);
      Eventually.await("the claim ended", Duration.ofSeconds(10), () -> guard.stats().executed() == 1
          && guard.renewing() == 0
          && (guard.stats().released() == 1 || "done".equals(String.valueOf(redis.server().call("HGET", record, "state")))));
      HttpResponse<String> retry = post(key, "gone", null).join();
      assertEquals(201, retry.statusCode(), "a replay of the stored answer, or a run of the released key: " + retry.body());
      assertEquals("pong", ping().body());
    }
  }

  @Test
  void theWriteOfTheAnswerDoesNotHoldTheContainersThreadEither() throws Exception {
    try (IdempotencyGuard guard = new IdempotencyGuard(claims, IdempotencyConfig.builder().build())) {
      start(c -> c.addFilter(holder(new IdempotencyFilter(guard, 1024, Waiting.ASYNC), true), "/work", REQUEST_AND_ASYNC),
          true);
      int busy = 4; // as many as the pool has threads for requests
      java.util.concurrent.CountDownLatch working = new java.util.concurrent.CountDownLatch(busy);
      java.util.concurrent.CountDownLatch paused = new java.util.concurrent.CountDownLatch(1);
      java.util.concurrent.atomic.AtomicBoolean pausing = new java.util.concurrent.atomic.AtomicBoolean();
      duringWork = () -> {
        // every request has claimed its key and runs; then Redis stops, before any answer is stored
        working.countDown();
        try {
          if (working.await(20, java.util.concurrent.TimeUnit.SECONDS) && pausing.compareAndSet(false, true)) {
            redis.server().pause();
            paused.countDown();
          }
          paused.await(20, java.util.concurrent.TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      };
      List<String> keys = new ArrayList<>();
      List<CompletableFuture<HttpResponse<String>>> posts = new ArrayList<>();
      for (int i = 0; i < busy; i++) {
        keys.add(UUID.randomUUID().toString());
        posts.add(post(keys.get(i), "body " + i, null));
      }
      assertTrue(paused.await(30, java.util.concurrent.TimeUnit.SECONDS), "every request ran, then Redis was paused");
      assertEquals("pong", ping().body(), "served while " + busy + " answers wait to be stored");
      assertTrue(posts.stream().noneMatch(CompletableFuture::isDone), "no answer goes out before it is stored");
      redis.server().resume();
      for (int i = 0; i < busy; i++) {
        HttpResponse<String> r = posts.get(i).join();
        assertEquals(201, r.statusCode(), r.body());
        assertEquals("worked body " + i, r.body());
      }
      duringWork = () -> { };
      HttpResponse<String> replay = post(keys.get(2), "body 2", null).join();
      assertEquals("worked body 2", replay.body());
      assertEquals("true", replay.headers().firstValue("Idempotent-Replayed").orElse(null), "stored before it was sent");
      assertEquals(busy, executed.get());
    }
  }
}
