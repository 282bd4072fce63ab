package io.retrybudget.coordinator.relay;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.budget.redis.protocol.BudgetScripts;
import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import io.retrybudget.relay.BudgetRelay;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import io.vertx.core.Vertx;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A relay whose call to a real Redis times out (Redis stopped with SIGSTOP past the relay's 200 ms
 * timeout, its call then run late when Redis wakes): the relay holds the call in doubt and sends it again
 * with its own number, which Redis answers stale, so the first attempts are counted exactly once and
 * none is given up as lost. Waits are {@link Eventually}s of seconds against 100-500 ms upstream calls.
 */
class RelayInDoubtTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();

  @Test
  void aCallThatTimedOutAndRanLateIsCountedOnceAndNotLost() throws Exception {
    Vertx vertx = Vertx.vertx();
    RedisBudgetStore store = RedisBudgetStore.connect(redis.connectionOptions().build());
    BudgetScripts scripts = new BudgetScripts(store);
    RelayHost relay = RelayHost.start(vertx, scripts, RelayHostOptions.builder().upstreamTimeoutMillis(200).build())
        .toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    RedisBudgetClient client = RedisBudgetClient.builder(
        RedisConnectionOptions.standalone("redis://127.0.0.1:" + relay.port()).build()).callTimeout(Duration.ofSeconds(1)).build();
    try {
      BudgetConfig config = BudgetConfig.builder("in-doubt").build();
      RetryBudget budget = client.budget(config);
      for (int i = 0; i < 50; i++) {
        budget.recordFirstAttempt();
      }
      Eventually.await("50 first attempts in Redis", Duration.ofSeconds(10),
          () -> scripts.status("in-doubt", config).orTimeout(5, TimeUnit.SECONDS).join().requests() == 50);
      redis.server().pause();
      try {
        for (int i = 0; i < 30; i++) {
          budget.recordFirstAttempt();
        }
        Eventually.await("the relay's call with the 30 timed out: in doubt", Duration.ofSeconds(10),
            () -> inspect(relay, BudgetRelay::inDoubt));
      } finally {
        redis.server().resume(); // the call in flight runs now; its re-send will be stale
      }
      Eventually.await("the call answered, once", Duration.ofSeconds(10), () -> !inspect(relay, BudgetRelay::inDoubt));
      budget.recordFirstAttempt();
      Eventually.await("the 81st in Redis", Duration.ofSeconds(10),
          () -> scripts.status("in-doubt", config).orTimeout(5, TimeUnit.SECONDS).join().requests() >= 81);
      assertEquals(81, scripts.status("in-doubt", config).orTimeout(5, TimeUnit.SECONDS).join().requests(),
          "the 30 applied once, not twice");
      assertEquals(0L, (long) inspect(relay, BudgetRelay::lostRequests), "nothing given up");
    } finally {
      client.close();
      relay.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
      store.close();
      vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }
  }

  private static <T> T inspect(RelayHost relay, Function<BudgetRelay, T> query) {
    return relay.inspect("in-doubt", query).toCompletionStage().toCompletableFuture().orTimeout(5, TimeUnit.SECONDS)
        .join();
  }
}
