package io.retrybudget.coordinator;

import io.retrybudget.coordinator.api.BudgetApi;
import io.retrybudget.coordinator.budgets.BudgetStatus;
import io.retrybudget.coordinator.budgets.BudgetService;
import io.retrybudget.coordinator.budgets.ConfigUpdate;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.testing.RedisExtension;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * How listings share their work, on a real Redis: counted by the script calls Redis itself saw
 * (INFO commandstats), never by timing.
 */
class SharedListingTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();
  private Vertx vertx;
  private RedisBudgetStore store;
  private BudgetService budgets;

  @BeforeEach
  void start() throws Exception {
    redis.flushAll();
    vertx = Vertx.vertx();
    store = RedisBudgetStore.connect(redis.connectionOptions().commandTimeout(Duration.ofSeconds(5)).build());
    budgets = new BudgetService(store, vertx, Duration.ofSeconds(5), false);
    List<Future<BudgetStatus>> all = new ArrayList<>();
    for (int i = 0; i < 100; i++) {
      all.add(budgets.configure(String.format("b-%03d", i), new ConfigUpdate(100_000L, 10, 1, null, null)));
    }
    await(Future.all(all));
  }

  @AfterEach
  void stop() throws Exception {
    store.close();
    await(vertx.close());
  }

  private static <T> T await(Future<T> f) throws Exception {
    return f.toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
  }

  private long scriptCalls() {
    return redis.commandCalls("evalsha");
  }

  @Test
  void concurrentListingsShareTwoComputations() throws Exception {
    long before = scriptCalls();
    List<Future<BudgetService.Listing>> many = new ArrayList<>();
    for (int i = 0; i < 50; i++) {
      many.add(budgets.list(1000));
    }
    await(Future.all(many));
    assertEquals(100, many.get(0).result().budgets().size());
    assertEquals(200, scriptCalls() - before,
        "one status call per budget for the first listing, and as many for the 49 asked for while it ran");
    for (Future<BudgetService.Listing> f : many.subList(1, many.size())) {
      assertTrue(many.get(1).result() == f.result(), "the 49 share one computation");
    }
    await(budgets.list(1000));
    assertEquals(300, scriptCalls() - before, "a listing asked for when none runs is read anew");
  }

  @Test
  void aChangeInRedisBeforeAListingIsAskedForIsSeenByIt() throws Exception {
    // listings started 50 ms apart, not LISTING_SPACING (250 ms, which the flood test below checks):
    // the 20 rounds waited 5 s for the spacing; a round's listings still queue behind the one before
    BudgetService quick = new BudgetService(store, vertx, Duration.ofSeconds(5), false, Duration.ofMillis(50));
    try (RedisBudgetStore other = RedisBudgetStore.connect(redis.connectionOptions().build())) {
      BudgetService elsewhere = new BudgetService(other, vertx, Duration.ofSeconds(5), false);
      for (int round = 1; round <= 20; round++) {
        Future<BudgetService.Listing> running = quick.list(1000); // may be in flight during the change
        await(elsewhere.countRequests("b-000", 1)); // another replica, an SDK client
        BudgetService.Listing after = await(quick.list(1000));
        assertEquals(round, after.budgets().get(0).requests(), "round " + round);
        await(running);
      }
    }
  }

  @Test
  void aListingOfManyStatusCallsKeepsFewInFlight() throws Exception {
    // a connection whose queue holds 40 commands: a listing of 100 budgets succeeds only because at
    // most 32 of its status calls are in flight at once (all 100 at once are refused)
    try (RedisBudgetStore small = RedisBudgetStore.connect(redis.connectionOptions().requestQueueSize(40).build())) {
      BudgetService service = new BudgetService(small, vertx, Duration.ofSeconds(5), false);
      BudgetService.Listing listing = await(service.list(1000));
      assertEquals(100, listing.budgets().size());
      assertTrue(listing.broken().isEmpty());
    }
  }

  /**
   * Eight readers listing back to back for 2 s (a flood without a token): their listings start at
   * least LISTING_SPACING apart, so Redis sees at most 2 s / 250 ms + 1 listings' status calls (each
   * answer still read after it was asked for). Without the spacing they ran back to back: over 50.
   */
  @Test
  void aFloodOfListingsStartsThemAtMostFourASecond() throws Exception {
    long before = scriptCalls();
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
    java.util.concurrent.atomic.AtomicInteger answers = new java.util.concurrent.atomic.AtomicInteger();
    List<java.util.concurrent.CompletableFuture<Void>> readers = new ArrayList<>();
    for (int r = 0; r < 8; r++) {
      java.util.concurrent.CompletableFuture<Void> done = new java.util.concurrent.CompletableFuture<>();
      readers.add(done);
      readOn(end, answers, done);
    }
    java.util.concurrent.CompletableFuture.allOf(readers.toArray(java.util.concurrent.CompletableFuture[]::new))
        .get(30, TimeUnit.SECONDS);
    long listings = (scriptCalls() - before) / 100;
    System.out.println("8 readers for 2 s: " + answers.get() + " answers from " + listings + " listings");
    assertTrue(listings <= 2_000 / BudgetService.LISTING_SPACING.toMillis() + 2, listings + " listings in 2 s");
    assertTrue(answers.get() >= 8 * listings / 2, "every listing answered the readers waiting for it: " + answers.get());
  }

  /** One reader: lists again as soon as it has its answer, until {@code end}. */
  private void readOn(long end, java.util.concurrent.atomic.AtomicInteger answers, java.util.concurrent.CompletableFuture<Void> done) {
    if (System.nanoTime() >= end) {
      done.complete(null);
      return;
    }
    budgets.list(1000).onComplete(r -> {
      if (r.failed()) {
        done.completeExceptionally(r.cause());
        return;
      }
      assertEquals(100, r.result().budgets().size());
      answers.incrementAndGet();
      readOn(end, answers, done);
    });
  }

  /**
   * Many readers served by one listing get one encoding of it (per filter), written to each: every
   * reader encoded the 1,000-budget body again before, all in one event-loop turn, which blocked the
   * loop for seconds under a burst of 2,000 (review3). Over real HTTP, 40 readers at once.
   */
  @Test
  void readersSharingAListingShareOneEncodingOfIt() throws Exception {
    BudgetApi api = new BudgetApi(budgets, "listing-encode-token", 1000, "test", ctx -> ctx.response().end(),
        io.vertx.core.buffer.Buffer.buffer("{}"));
    io.vertx.ext.web.Router router = io.vertx.ext.web.Router.router(vertx);
    api.mount(router);
    io.vertx.core.http.HttpServer server = await(vertx.createHttpServer().requestHandler(router).listen(0, "127.0.0.1"));
    io.vertx.core.http.HttpClient http = vertx.createHttpClient(new io.vertx.core.http.PoolOptions().setHttp1MaxSize(40));
    try {
      List<Future<io.vertx.core.buffer.Buffer>> answers = new ArrayList<>();
      for (int i = 0; i < 40; i++) {
        String query = i % 4 == 0 ? "?exhausted=false" : "";
        answers.add(http.request(io.vertx.core.http.HttpMethod.GET, server.actualPort(), "127.0.0.1", "/v1/budgets" + query)
            .compose(req -> req.send()).compose(resp -> resp.statusCode() == 200 ? resp.body()
                : Future.failedFuture("status " + resp.statusCode())));
      }
      await(Future.all(answers));
      for (Future<io.vertx.core.buffer.Buffer> a : answers) {
        assertEquals(100, a.result().toJsonObject().getJsonArray("budgets").size());
      }
      long listings = api.listingEncodes();
      // the 40 share at most two listings (one running, one queued) and two filters
      assertTrue(listings <= 4, listings + " encodings for 40 readers");
    } finally {
      await(http.close());
      await(server.close());
    }
  }
}
