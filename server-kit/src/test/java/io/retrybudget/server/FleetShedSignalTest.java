package io.retrybudget.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.netflix.concurrency.limits.limit.FixedLimit;
import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The service-wide overload signal through a shared budget in a real Redis, two replicas. */
class FleetShedSignalTest {
  @RegisterExtension
  static final RedisExtension redis = RedisExtension.standalone();

  private static long waitForDecision(FleetShedSignal signal, long before) {
    Eventually.await("the budget answers", Duration.ofSeconds(15), () -> signal.decisions() > before);
    return signal.decisions();
  }

  @Test
  void oneReplicaSheddingAmongHealthyOnesIsNotTheWholeService() {
    String service = "svc-" + UUID.randomUUID().toString().substring(0, 8) + ".shed";
    BudgetConfig config = BudgetConfig.builder(service).ratio(0.5).minRetriesPerSecond(0).build();
    // Redis's answers, not the fallback's: at the default 20 ms a loaded build machine timed B's first
    // permit call out once, and the fallback (which starts from nothing) refused it (overloaded: true);
    // at 1 s once more, in a clean-clone CI run with two test JVMs in the coordinator beside it
    try (RedisBudgetClient replicaA = RedisBudgetClient.builder(redis.connectionOptions().build())
            .callTimeout(Duration.ofSeconds(5)).build();
         RedisBudgetClient replicaB = RedisBudgetClient.builder(redis.connectionOptions().build())
            .callTimeout(Duration.ofSeconds(5)).build()) {
      RetryBudget budgetA = replicaA.budget(config);
      RetryBudget budgetB = replicaB.budget(config);
      FleetShedSignal a = new FleetShedSignal(budgetA);
      FleetShedSignal b = new FleetShedSignal(budgetB);
      for (int i = 0; i < 1000; i++) {
        b.onAdmitted(); // the healthy replica serves
      }
      Eventually.await("B's first attempts reach Redis", Duration.ofSeconds(15), () -> {
        b.onShed(); // a permit call flushes B's counts
        return b.decisions() > 0;
      });
      assertFalse(b.wholeServiceOverloaded());
      long seen = 0;
      for (int i = 0; i < 20; i++) {
        a.onShed(); // A is full and sheds a little
        seen = waitForDecision(a, seen);
      }
      assertFalse(a.wholeServiceOverloaded(), "20 sheds against 1000 served fleet-wide: ask for a wait, not for no retry");

      RetryAwareAdmission admission = RetryAwareAdmission.builder().limit(FixedLimit.of(1)).serviceOverload(a).build();
      assertEquals("500", admission.shedAnswer().header("X-Retry-Pushback-Ms"));

      // now the whole fleet sheds far more than half of what it serves
      Eventually.await("the fleet's sheds exceed its allowance", Duration.ofSeconds(10), () -> {
        a.onShed();
        return a.wholeServiceOverloaded();
      });
      // the budget is paced: 1,000 served over its 10 s window at ratio 0.5 allow 50 sheds a second,
      // with half a second of them (25) saved up; a burst beyond that is the whole service overloaded
      assertTrue(a.decisions() >= 25, "the saved-up sheds were counted first: " + a.decisions());
      assertEquals("-1", admission.shedAnswer().header("X-Retry-Pushback-Ms"));
    }
  }

  @Test
  void anOldDecisionCountsForNothing() {
    long[] now = {0};
    RetryBudget exhausted = new io.retrybudget.budget.LocalRetryBudget(
        BudgetConfig.builder("local.shed").ratio(0.01).minRetriesPerSecond(0).build());
    FleetShedSignal signal = new FleetShedSignal(exhausted, 1, 1_000_000_000L, () -> now[0]);
    signal.onShed();
    Eventually.await("decided", Duration.ofSeconds(5), () -> signal.decisions() == 1);
    assertTrue(signal.wholeServiceOverloaded(), "no requests served, sheds: the service is down");
    now[0] += 2_000_000_000L;
    assertFalse(signal.wholeServiceOverloaded(), "a decision older than its freshness is unknown");
  }
}
