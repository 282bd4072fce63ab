package io.retrybudget.budget.redis.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.redis.protocol.BudgetCall;
import io.retrybudget.budget.redis.protocol.BudgetScripts;
import io.retrybudget.budget.redis.protocol.ClientSequence;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A store counts the connections it opens (what a client's floor at a relay rests on,
 * {@code ConnectionFloor}): one at connect, one more for each reconnect after Redis dropped it.
 */
class ConnectionsOpenedTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();

  @Test
  void aReconnectIsCountedAndCallsToldTheirFloorStillRunOnRedis() throws Exception {
    try (RedisBudgetStore store = RedisBudgetStore.connect(redis.connectionOptions().build())) {
      assertEquals(1, store.connectionsOpened());
      BudgetScripts scripts = new BudgetScripts(store); // each numbered call tells its floor in ARGV[13]
      ClientSequence sequence = new ClientSequence("counted");
      BudgetConfig config = BudgetConfig.builder("counted").build();
      assertTrue(scripts.budget(new BudgetCall("counted", 3, 0, 0, 0, 0, config), sequence).get(5, TimeUnit.SECONDS)
          .applied(), "budget.lua ignores a floor in ARGV[13]");
      redis.server().call("CLIENT", "KILL", "TYPE", "normal"); // drops the store's connection
      Eventually.await("reconnected", Duration.ofSeconds(20), () -> store.connectionsOpened() >= 2 && store.isConnected());
      assertTrue(scripts.budget(new BudgetCall("counted", 4, 0, 0, 0, 0, config), sequence).get(5, TimeUnit.SECONDS)
          .applied());
      assertEquals(7, new BudgetScripts(store).status("counted", config).get(5, TimeUnit.SECONDS).requests());
    }
  }
}
