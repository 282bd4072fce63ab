package io.retrybudget.budget;

import io.retrybudget.testing.BudgetTestKit;
import io.retrybudget.testing.RedisExtension;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The same kit against a real 3-master Redis Cluster of separate processes. */
class ClusterBudgetTest extends BudgetTestKit {
  @RegisterExtension static final RedisExtension redis = RedisExtension.cluster();

  @Override
  protected RedisExtension redis() {
    return redis;
  }
}
