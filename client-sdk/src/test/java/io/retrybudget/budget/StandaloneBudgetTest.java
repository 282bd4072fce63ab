package io.retrybudget.budget;

import io.retrybudget.testing.BudgetTestKit;
import io.retrybudget.testing.RedisExtension;
import org.junit.jupiter.api.extension.RegisterExtension;

class StandaloneBudgetTest extends BudgetTestKit {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();

  @Override
  protected RedisExtension redis() {
    return redis;
  }
}
