package io.retrybudget.budget;

import java.lang.System.Logger.Level;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The configuration Redis holds for one budget, as a {@link BudgetConfig} (empty until Redis has
 * answered), and the one INFO line that says when it is not the one the client was built with.
 */
final class ConfigInForce {
  // the engine's logger: what users configure for RedisRetryBudget covers this line too
  private static final System.Logger LOG = System.getLogger(RedisRetryBudget.class.getName());
  private final BudgetConfig seed;
  private volatile BudgetConfig inForce;
  private final AtomicBoolean differenceLogged = new AtomicBoolean();

  ConfigInForce(BudgetConfig seed) {
    this.seed = seed;
  }

  Optional<BudgetConfig> get() {
    return Optional.ofNullable(inForce);
  }

  /**
   * Keeps what Redis said, every field the scripts store (the call ceiling too: a ceiling left out read
   * as the builder's default, 2,000, and a client built with Redis's own ceiling of 10 logged a
   * difference that was not there); says once when it is not the configuration this client was built with.
   */
  void learn(Learned told) {
    if (told.sameConfig(inForce)) {
      return; // the usual case: nothing allocated
    }
    BudgetConfig config;
    try {
      config = BudgetConfig.builder(seed.name()).ratioPpm(told.ratioPpm()).windowSeconds(told.windowSeconds())
          .minRetriesPerSecond(told.minRetriesPerSecond()).mode(told.mode()).maxCallsPerSecond(told.maxCallsPerSecond())
          .build();
    } catch (IllegalArgumentException e) {
      return; // the scripts validate what they store; a value outside the builder's range is not exposed
    }
    inForce = config;
    if (!config.equals(seed) && differenceLogged.compareAndSet(false, true)) {
      LOG.log(Level.INFO, () -> "budget " + seed.name() + ": Redis already holds another configuration, which is in force: "
          + config + "; this client was built with " + seed
          + " (the first registration wins; change a budget with the coordinator's PUT /v1/budgets/" + seed.name() + ")");
    }
  }
}
