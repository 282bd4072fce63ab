package io.retrybudget.coordinator.relay;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.budget.redis.protocol.BudgetScripts;
import io.retrybudget.budget.redis.protocol.LuaScript;
import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import io.vertx.core.Vertx;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A relay and a client of different SDK versions, whose budget.lua differs (here the relay runs one
 * with a line added), on real processes: a real redis-server, the relay host in-process, an unchanged
 * {@link RedisBudgetClient} whose route is that relay, then Redis. The relay refuses the client's
 * script; the client passes it over for a minute and goes to Redis directly, and the counts of the
 * call the relay refused are not lost: they go with the next call, once. Waits are {@link Eventually}
 * bounds of seconds against flushes of about half a second, so a loaded machine only slows it.
 */
class RelayVersionTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();

  private Vertx vertx;
  private RedisBudgetStore store;
  private BudgetScripts scripts;
  private RelayHost relay;
  private RedisBudgetClient client;

  @BeforeEach
  void start() {
    redis.flushAll();
    vertx = Vertx.vertx();
    store = RedisBudgetStore.connect(redis.connectionOptions().build());
    scripts = new BudgetScripts(store);
  }

  @AfterEach
  void stop() throws Exception {
    if (client != null) {
      client.close();
    }
    if (relay != null) {
      relay.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }
    store.close();
    vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
  }

  @Test
  void aClientOfAnotherVersionGoesToRedisDirectlyWithEveryCount() throws Exception {
    relay = RelayHost.start(vertx, scripts, RelayHostOptions.builder().build(),
        LuaScript.BUDGET.body() + "\n-- the next version\n").toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    client = RedisBudgetClient.builder(redis.connectionOptions().build())
        .relays(List.of(RedisConnectionOptions.standalone("redis://127.0.0.1:" + relay.port())
            .connectTimeout(Duration.ofSeconds(10)).build()))
        .callTimeout(Duration.ofSeconds(5)).build(); // a refusal that came after the timeout would be a call in doubt
    BudgetConfig config = BudgetConfig.builder("versions").build();
    RetryBudget budget = client.budget(config);
    for (int i = 0; i < 5; i++) {
      budget.recordFirstAttempt(); // before the budget's first call: that call carries them, and is refused
    }
    RelayHost r = relay;
    Eventually.await("the relay refused the client's script", Duration.ofSeconds(10), () -> refused(r) >= 1);
    Eventually.await("the 5 in Redis, sent directly", Duration.ofSeconds(10),
        () -> scripts.status("versions", config).join().requests() >= 5);
    for (int i = 0; i < 3; i++) {
      budget.recordFirstAttempt();
    }
    Eventually.await("the next 3 in Redis", Duration.ofSeconds(10),
        () -> scripts.status("versions", config).join().requests() >= 8);
    assertEquals(8, scripts.status("versions", config).join().requests(), "every count once, none lost");
    assertEquals(1, refused(relay), "the relay is passed over after its refusal, not asked on every call");
    assertFalse(budget.isDegraded(), "Redis directly answers the client");
  }

  /**
   * A client whose only way is a relay of another version (its URI names the relay, as a sidecar's):
   * every call is refused and its counts are dropped, as for any error reply, not piled up until the
   * versions match (they would then land in Redis's current bucket at once); it decides from its
   * fallback meanwhile, and once a relay of its version stands at that address its counts go again.
   */
  @Test
  void aSidecarOfAnotherVersionDropsTheRefusedCountsInsteadOfPilingThemUp() throws Exception {
    relay = RelayHost.start(vertx, scripts, RelayHostOptions.builder().build(),
        LuaScript.BUDGET.body() + "\n-- the next version\n").toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    int port = relay.port();
    client = RedisBudgetClient.builder(RedisConnectionOptions.standalone("redis://127.0.0.1:" + port)
        .connectTimeout(Duration.ofSeconds(10)).reconnectDelayMax(Duration.ofMillis(100)).build())
        .callTimeout(Duration.ofSeconds(5)).build();
    BudgetConfig config = BudgetConfig.builder("sidecar").build();
    RetryBudget budget = client.budget(config);
    RelayHost r = relay;
    // the 5 go with a call made after a refusal seen (the budget's first call may go before they are made)
    budget.recordFirstAttempt();
    Eventually.await("the relay refused a call of the client", Duration.ofSeconds(10), () -> refused(r) >= 1);
    long seen = refused(r);
    for (int i = 0; i < 4; i++) {
      budget.recordFirstAttempt();
    }
    Eventually.await("the relay refused the call with them", Duration.ofSeconds(20), () -> refused(r) > seen);
    relay.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    relay = RelayHost.start(vertx, scripts, RelayHostOptions.builder().port(port).build())
        .toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    for (int i = 0; i < 3; i++) {
      budget.recordFirstAttempt();
    }
    Eventually.await("the 3 made after the upgrade in Redis", Duration.ofSeconds(15),
        () -> scripts.status("sidecar", config).join().requests() >= 3);
    RelayHost upgraded = relay;
    Eventually.await("the relay applied what it was sent", Duration.ofSeconds(10),
        () -> upgraded.inspect("sidecar", b -> b == null ? -1L : b.pendingRequests())
            .toCompletionStage().toCompletableFuture().join() == 0);
    assertEquals(3, scripts.status("sidecar", config).join().requests(),
        "the refused calls' 5 were dropped, not carried into the upgrade");
  }

  private static long refused(RelayHost relay) {
    return relay.refusedScripts().toCompletionStage().toCompletableFuture().orTimeout(5, TimeUnit.SECONDS).join();
  }
}
