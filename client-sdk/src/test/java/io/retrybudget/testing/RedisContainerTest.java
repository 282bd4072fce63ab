package io.retrybudget.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.retrybudget.budget.redis.BudgetKeys;
import io.retrybudget.budget.redis.BudgetReply;
import io.retrybudget.budget.redis.LuaScript;
import io.retrybudget.budget.redis.RedisBudgetStore;
import io.retrybudget.budget.redis.RedisConnectionOptions;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/** The harness's Testcontainers path, where a Docker engine runs (skipped elsewhere, saying so). */
class RedisContainerTest {

  @Test
  void theBudgetScriptRunsOnAContainerRedis() throws Exception {
    Assumptions.assumeTrue(RedisContainer.dockerAvailable(), "no Docker engine: the Testcontainers path is not exercised here");
    try (RedisContainer redis = RedisContainer.start();
        RedisBudgetStore store = RedisBudgetStore.connect(RedisConnectionOptions.standalone(redis.uri()).build())) {
      BudgetKeys k = new BudgetKeys("docker");
      BudgetReply r = BudgetReply.parse(store.run(LuaScript.BUDGET, new String[] {k.config(), k.window(), k.clients()},
          "c", "1", "100", "0", "1", "1", "100000", "10", "0", "enforce").get(10, TimeUnit.SECONDS));
      assertEquals(BudgetReply.GRANTED, r.status());
      assertEquals(10, r.allowance());
    }
  }
}
