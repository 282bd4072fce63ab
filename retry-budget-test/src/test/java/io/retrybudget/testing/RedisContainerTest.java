package io.retrybudget.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.retrybudget.budget.redis.protocol.BudgetReply;
import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.redis.protocol.BudgetCall;
import io.retrybudget.budget.redis.protocol.BudgetScripts;
import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
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
      BudgetReply r = new BudgetScripts(store).budget(new BudgetCall("docker", 100, 0, 1, 1,
          BudgetConfig.builder("docker").ratio(0.1).minRetriesPerSecond(0).build())).get(10, TimeUnit.SECONDS);
      assertEquals(BudgetReply.GRANTED, r.status());
      assertEquals(10, r.allowance());
    }
  }
}
