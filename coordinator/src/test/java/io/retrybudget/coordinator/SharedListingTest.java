package io.retrybudget.coordinator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.redis.RedisBudgetStore;
import io.retrybudget.testing.RedisExtension;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * How listings share their work, on a real Redis with a fake clock: counted by the script calls
 * Redis itself saw (INFO commandstats), never by timing.
 */
class SharedListingTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();
  private final AtomicLong now = new AtomicLong(1_000_000_000L);
  private Vertx vertx;
  private RedisBudgetStore store;
  private BudgetService budgets;

  @BeforeEach
  void start() throws Exception {
    redis.flushAll();
    vertx = Vertx.vertx();
    store = RedisBudgetStore.connect(redis.connectionOptions().commandTimeout(Duration.ofSeconds(5)).build());
    budgets = new BudgetService(store, vertx, Duration.ofSeconds(5), false, now::get);
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
  void concurrentListingsShareOneComputationAndItsResultForASecond() throws Exception {
    long before = scriptCalls();
    List<Future<BudgetService.Listing>> many = new ArrayList<>();
    for (int i = 0; i < 50; i++) {
      many.add(budgets.list(1000));
    }
    await(Future.all(many));
    assertEquals(100, many.get(0).result().budgets().size());
    assertEquals(100, scriptCalls() - before, "one status call per budget for all 50 listings");
    for (Future<BudgetService.Listing> f : many) {
      assertSame(many.get(0).result(), f.result());
    }

    now.addAndGet(TimeUnit.MILLISECONDS.toNanos(999));
    await(budgets.list(1000));
    assertEquals(100, scriptCalls() - before, "served from the last second's listing");

    now.addAndGet(TimeUnit.MILLISECONDS.toNanos(1));
    await(budgets.list(1000));
    assertEquals(200, scriptCalls() - before, "a second old: listed again");
  }

  @Test
  void aWriteThroughTheCoordinatorIsSeenByTheNextListing() throws Exception {
    BudgetService.Listing first = await(budgets.list(1000));
    assertEquals(0, first.budgets().get(0).requests());
    await(budgets.countRequests("b-000", 7));
    BudgetService.Listing second = await(budgets.list(1000));
    assertEquals(7, second.budgets().get(0).requests(), "read your writes, with no time passed");
  }

  @Test
  void aListingAskedForAfterAWriteDoesNotJoinOneBegunBeforeIt() throws Exception {
    Future<BudgetService.Listing> before = budgets.list(1000);
    Future<Void> write = budgets.countRequests("b-000", 7).mapEmpty();
    Future<BudgetService.Listing> after = budgets.list(1000);
    Future<BudgetService.Listing> alsoAfter = budgets.list(1000);
    await(Future.all(before, write, after, alsoAfter));
    assertEquals(7, after.result().budgets().get(0).requests(), "queued behind the first, begun after the write");
    assertSame(after.result(), alsoAfter.result(), "the ones queued share one computation");
  }

  @Test
  void aListingOfManyStatusCallsKeepsFewInFlight() throws Exception {
    // a connection whose queue holds 40 commands: a listing of 100 budgets succeeds only because at
    // most 32 of its status calls are in flight at once (all 100 at once are refused)
    try (RedisBudgetStore small = RedisBudgetStore.connect(redis.connectionOptions().requestQueueSize(40).build())) {
      BudgetService service = new BudgetService(small, vertx, Duration.ofSeconds(5), false, now::get);
      BudgetService.Listing listing = await(service.list(1000));
      assertEquals(100, listing.budgets().size());
      assertTrue(listing.broken().isEmpty());
    }
  }
}
