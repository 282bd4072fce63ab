package io.retrybudget.budget;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.testing.RedisExtension;
import java.net.URI;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The Java model of the scripts that {@link SeededBudgetScheduleTest} runs its schedules against,
 * checked against the scripts themselves: the first 20 schedules again, every call the model applies
 * replayed into lua/budget.lua on a real Redis (on the model's clock, {@link ScriptParity}) and every
 * reply compared, field by field, as it comes. {@code -Dparity.schedules=N} runs N.
 */
class ScheduleParityTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();

  @Test
  void everyReplyOfTheModelIsTheScriptsOnARealRedis() {
    URI uri = URI.create(redis.uri());
    int schedules = Integer.getInteger("parity.schedules", 20);
    SeededBudgetScheduleTest test = new SeededBudgetScheduleTest();
    long compared = 0;
    long started = System.nanoTime();
    for (long seed = 0; seed < schedules; seed++) {
      redis.flushAll();
      try (ScriptParity parity = new ScriptParity(uri.getHost(), uri.getPort(), "seeded")) {
        long s = seed;
        try {
          test.schedule(seed, engine -> engine.store.mirror(parity), new double[2]);
        } catch (AssertionError e) {
          throw new AssertionError("schedule with seed " + s + ": " + e.getMessage(), e);
        }
        compared += parity.compared();
      }
    }
    System.out.printf("ScheduleParityTest: %d schedules, %,d calls compared with budget.lua, %.1f s%n", schedules,
        compared, (System.nanoTime() - started) / 1e9);
    assertTrue(compared >= 100L * schedules, "only " + compared + " calls compared");
  }
}
