package io.retrybudget.spring;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.budget.redis.protocol.BudgetScripts;
import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import io.retrybudget.budget.redis.protocol.StatusReply;
import java.time.Duration;
import java.util.LinkedHashMap;
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
    out.put("slow", budget.isSlow());
    RedisBudgetStore s = null;
    try {
      s = store();
      // the SDK's one reader of status.lua (keys for standalone or Cluster, the reply by name)
      StatusReply r = new BudgetScripts(s).status(name, seed).get(timeoutMillis, TimeUnit.MILLISECONDS);
      out.put("mode", r.settings().mode());
      out.put("ratio", r.settings().ratioPpm() / 1_000_000.0);
      out.put("window_seconds", r.settings().windowSeconds());
      out.put("min_retries_per_second", r.settings().minRetriesPerSecond());
      out.put("requests", r.requests());
      out.put("retries", r.retries());
      out.put("denied", r.denied());
      out.put("retry_ratio", r.retryRatio());
      // admission is paced (lua/README.md): what could be granted now is the balance's whole permits
      out.put("remaining", r.available());
      out.put("exhausted", r.available() < 1);
      out.put("active_clients", r.activeClients());
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
