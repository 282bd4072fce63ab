package sample;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.lettuce.core.RedisClient;
import io.lettuce.core.resource.ClientResources;
import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.spring.RetryBudgets;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.data.redis.core.StringRedisTemplate;

/**
 * The application against the Redis that BootSampleMatrixTest started, standalone and Cluster, on
 * the Lettuce this build resolved: the budgets run on the application's Lettuce resources, decide
 * from Redis (a grant, a refusal), and keep their state in the application's Redis.
 */
class SampleApplicationTest {
  /** Which build runs this (both run at once against the same Redis): the budgets' names differ. */
  private static final String cell = System.getProperty("sample.cell");

  /** The first decision Redis makes (before the client has connected, the fallback denies). */
  private static BudgetDecision answerFromRedis(RetryBudget budget) {
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    BudgetDecision d = budget.acquireBlocking();
    while (d.reason() == BudgetDecision.Reason.DENIED_FALLBACK && System.nanoTime() < until) {
      d = budget.acquireBlocking();
    }
    return d;
  }

  private static void check(String redisProperty) throws Exception {
    try (ConfigurableApplicationContext context = new SpringApplicationBuilder(SampleApplication.class)
        .web(WebApplicationType.NONE).properties(redisProperty,
            "retrybudget.budgets." + cell + "-floor.min-retries-per-second=5",
            "retrybudget.budgets." + cell + "-strict.ratio=0.1",
            "retrybudget.budgets." + cell + "-strict.min-retries-per-second=0").run()) {
      String running = RedisClient.class.getPackage().getImplementationVersion();
      assertTrue(running.startsWith(System.getProperty("expected.lettuce.version")),
          "Lettuce " + running + ", expected " + System.getProperty("expected.lettuce.version"));

      // by bean name and reflection: this code stays off the SDK's package layout
      Object options = context.getBean("retryBudgetRedisConnection");
      assertSame(context.getBean(ClientResources.class), options.getClass().getMethod("clientResources").invoke(options),
          "the budgets run on the application's Lettuce resources");

      // a floor of 5 a second has half a second saved up: granted by Redis
      RetryBudget withFloor = context.getBean(RetryBudgets.class).budget(cell + "-floor");
      withFloor.recordFirstAttempt();
      assertEquals(BudgetDecision.Reason.GRANTED, answerFromRedis(withFloor).reason());
      // no floor, 10 % of one first attempt: no whole retry, refused by Redis
      RetryBudget noFloor = context.getBean(RetryBudgets.class).budget(cell + "-strict");
      noFloor.recordFirstAttempt();
      assertEquals(BudgetDecision.Reason.DENIED_EXHAUSTED, answerFromRedis(noFloor).reason());

      StringRedisTemplate redis = context.getBean(StringRedisTemplate.class);
      assertTrue(redis.hasKey("rb:v2:{" + cell + "-floor}:cfg"), "the budget lives in the application's Redis");
    }
  }

  @Test
  void standaloneRedis() throws Exception {
    check("spring.data.redis.url=" + System.getProperty("sample.redis.url"));
  }

  @Test
  void redisCluster() throws Exception {
    check("spring.data.redis.cluster.nodes=" + System.getProperty("sample.redis.cluster-nodes"));
  }
}
