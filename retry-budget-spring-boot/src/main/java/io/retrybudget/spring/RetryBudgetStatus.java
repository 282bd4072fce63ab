package io.retrybudget.spring;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.budget.redis.BudgetKeys;
import io.retrybudget.budget.redis.LuaScript;
import io.retrybudget.budget.redis.RedisBudgetStore;
import io.retrybudget.budget.redis.RedisConnectionOptions;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Reads budgets' fleet-wide status from Redis ({@code status.lua}, read only) for the actuator
 * endpoint and the health indicator, over a connection of its own (made on first use, remade after
 * a failure), every read bounded by {@code timeout}.
 */
final class RetryBudgetStatus implements AutoCloseable {
  private final RedisConnectionOptions options;
  private final Map<String, BudgetConfig> configs;
  private final long timeoutMillis;
  private RedisBudgetStore store;
  private boolean closed;

  RetryBudgetStatus(RedisConnectionOptions options, Map<String, BudgetConfig> configs, Duration timeout) {
    this.options = options;
    this.configs = configs;
    this.timeoutMillis = timeout.toMillis();
  }

  private synchronized RedisBudgetStore store() {
    if (closed) {
      throw new IllegalStateException("closed");
    }
    if (store == null) {
      store = RedisBudgetStore.connect(options);
    }
    return store;
  }

  private synchronized void forget(RedisBudgetStore failed) {
    if (store == failed && failed != null) {
      failed.close();
      store = null;
    }
  }

  /** Null when Redis answers PING in time, else why not. */
  String redisProblem() {
    RedisBudgetStore s = null;
    try {
      s = store();
      String pong = s.ping().get(timeoutMillis, TimeUnit.MILLISECONDS);
      return "PONG".equalsIgnoreCase(pong) ? null : "unexpected PING reply " + pong;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "interrupted";
    } catch (Exception e) {
      forget(s);
      return e.getClass().getSimpleName() + (e.getMessage() == null ? "" : ": " + e.getMessage());
    }
  }

  /** One budget as this client sees it, and as Redis counts it for the whole fleet. */
  Map<String, Object> status(String name, RetryBudget budget) {
    BudgetConfig seed = configs.get(name);
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("name", name);
    out.put("degraded", budget.isDegraded());
    RedisBudgetStore s = null;
    try {
      s = store();
      BudgetKeys k = new BudgetKeys(name);
      List<Object> r = s.run(LuaScript.STATUS, new String[] {k.config(), k.window(), k.pace(), k.clients()},
          Long.toString(seed.ratioPpm()), Integer.toString(seed.windowSeconds()),
          Integer.toString(seed.minRetriesPerSecond()), seed.mode().wireName()).get(timeoutMillis, TimeUnit.MILLISECONDS);
      long requests = (Long) r.get(1);
      long retries = (Long) r.get(2);
      long allowance = (Long) r.get(4);
      out.put("mode", r.get(9));
      out.put("ratio", ((Long) r.get(6)) / 1_000_000.0);
      out.put("window_seconds", r.get(7));
      out.put("min_retries_per_second", r.get(8));
      out.put("requests", requests);
      out.put("retries", retries);
      out.put("denied", r.get(3));
      out.put("retry_ratio", Double.parseDouble(String.valueOf(r.get(10))));
      // admission is paced (lua/README.md): what could be granted now is the balance's whole permits
      long available = (Long) r.get(12);
      out.put("remaining", available);
      out.put("exhausted", available < 1);
      out.put("active_clients", r.get(5));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      out.put("redis", "interrupted");
    } catch (Exception e) {
      forget(s);
      out.put("redis", "unavailable: " + e.getClass().getSimpleName());
    }
    return out;
  }

  @Override
  public synchronized void close() {
    closed = true;
    if (store != null) {
      store.close();
      store = null;
    }
  }
}
