package io.retrybudget.coordinator.budgets;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.MultiGauge;
import io.micrometer.core.instrument.Tags;
import java.util.ArrayList;
import java.util.List;
import java.util.function.ToDoubleFunction;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Per-budget gauges of the window, refreshed from Redis on a timer (at most {@code maxBudgets}
 * series per gauge). Windowed state is a gauge, never a counter: don't {@code rate()} it. Several
 * coordinator replicas export the same values; aggregate with {@code max by (budget)}. While a
 * refresh fails (Redis down, a listing that times out) no per-budget series is exported.
 */
public final class BudgetGauges {
  private static final Logger LOG = Logger.getLogger(BudgetGauges.class.getName());
  private final BudgetService budgets;
  private final int maxBudgets;
  private final List<Row> rows = new ArrayList<>();
  private volatile double redisUp;
  private volatile double budgetCount;
  private final MultiGauge broken;
  private boolean refreshing; // event loop only

  private record Row(MultiGauge gauge, ToDoubleFunction<BudgetStatus> value) {}

  public BudgetGauges(MeterRegistry registry, BudgetService budgets, int maxBudgets) {
    this.budgets = budgets;
    this.maxBudgets = maxBudgets;
    add(registry, "retry.budget.window.requests", "First attempts in the budget's window", BudgetStatus::requests);
    add(registry, "retry.budget.window.retries", "Extra attempts granted in the window", BudgetStatus::retries);
    add(registry, "retry.budget.window.denied", "Extra attempts refused in the window", BudgetStatus::denied);
    add(registry, "retry.budget.allowance", "Extra attempts the window allows", BudgetStatus::allowance);
    add(registry, "retry.budget.remaining", "Extra attempts still allowed in the window", BudgetStatus::remaining);
    add(registry, "retry.budget.retry.ratio", "Retries over first attempts in the window", BudgetStatus::retryRatio);
    add(registry, "retry.budget.limit.ratio", "The budget's configured ratio", BudgetStatus::ratio);
    add(registry, "retry.budget.exhausted", "1 while no extra attempt is allowed", s -> s.exhausted() ? 1 : 0);
    add(registry, "retry.budget.active.clients", "Budget clients seen in the window", BudgetStatus::activeClients);
    broken = MultiGauge.builder("retry.budget.broken")
        .description("1 for a budget whose keys in Redis hold bad state (fix it with PUT or DELETE)").register(registry);
    Gauge.builder("retry.budget.redis.up", this, g -> g.redisUp)
        .description("1 while the coordinator reaches Redis").register(registry);
    Gauge.builder("retry.budget.count", this, g -> g.budgetCount)
        .description("Budgets with keys in Redis, at most the listing limit (COORDINATOR_MAX_BUDGETS); NaN while "
            + "the refresh fails").register(registry);
  }

  private void add(MeterRegistry registry, String name, String description, ToDoubleFunction<BudgetStatus> value) {
    rows.add(new Row(MultiGauge.builder(name).description(description).register(registry), value));
  }

  /** One refresh; call from a Vert.x timer (event loop). Skipped while the previous one runs. */
  public void refresh() {
    budgets.ping().onComplete(p -> redisUp = p.succeeded() ? 1 : 0);
    if (refreshing) {
      return;
    }
    refreshing = true;
    budgets.list(maxBudgets).onComplete(r -> {
      refreshing = false;
      if (r.failed()) {
        // values that could not be read are not exported as if current: the per-budget series are
        // dropped (absent, as Prometheus marks a vanished series stale) until a refresh succeeds,
        // and the count is NaN; redis.up comes from PING
        LOG.log(Level.FINE, "gauge refresh failed", r.cause());
        budgetCount = Double.NaN;
        broken.register(List.of(), true);
        for (Row row : rows) {
          row.gauge().register(List.of(), true);
        }
        return;
      }
      List<BudgetStatus> statuses = r.result().budgets();
      budgetCount = statuses.size() + r.result().broken().size();
      List<MultiGauge.Row<?>> brokenRows = new ArrayList<>();
      for (var b : r.result().broken()) {
        brokenRows.add(MultiGauge.Row.of(Tags.of("budget", b.budget()), 1));
      }
      broken.register(brokenRows, true);
      for (Row row : rows) {
        List<MultiGauge.Row<?>> values = new ArrayList<>(statuses.size());
        for (BudgetStatus s : statuses) {
          double v = row.value().applyAsDouble(s);
          values.add(MultiGauge.Row.of(Tags.of("budget", s.name()), v));
        }
        row.gauge().register(values, true);
      }
    });
  }
}
