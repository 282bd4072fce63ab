package io.retrybudget.coordinator;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.redis.BudgetKeys;
import io.retrybudget.budget.redis.BudgetReply;
import io.retrybudget.budget.redis.LuaScript;
import io.retrybudget.budget.redis.RedisBudgetStore;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * The budget operations of the HTTP API, on the same scripts as the SDK (one implementation of the
 * rule). Every Redis call has a short timeout and completes on the caller's Vert.x context; the
 * event loop never waits for Redis.
 */
final class BudgetService {
  static final BudgetConfig DEFAULTS = BudgetConfig.builder("defaults").build();
  private static final String[] DEFAULT_ARGS = {
      Long.toString(DEFAULTS.ratioPpm()), Integer.toString(DEFAULTS.windowSeconds()),
      Integer.toString(DEFAULTS.minRetriesPerSecond()), DEFAULTS.mode().wireName()};

  private final RedisBudgetStore store;
  private final Vertx vertx;
  private final long timeoutMillis;

  BudgetService(RedisBudgetStore store, Vertx vertx, Duration timeout) {
    this.store = store;
    this.vertx = vertx;
    this.timeoutMillis = timeout.toMillis();
  }

  /** A call of one command (two on NOSCRIPT), each already bounded by Lettuce's command timeout. */
  private <T> Future<T> onContext(CompletableFuture<T> redisCall) {
    return Future.fromCompletionStage(redisCall, vertx.getOrCreateContext());
  }

  /** A chain of commands of unknown length (SCAN pages): one deadline for the whole chain. */
  private <T> Future<T> onContextWithin(CompletableFuture<T> chain) {
    return onContext(chain.orTimeout(timeoutMillis, TimeUnit.MILLISECONDS));
  }

  Future<BudgetStatus> status(String name) {
    BudgetKeys k = new BudgetKeys(name);
    return onContext(store.run(LuaScript.STATUS, new String[] {k.config(), k.window()}, DEFAULT_ARGS))
        .map(reply -> BudgetStatus.fromStatusReply(name, reply));
  }

  Future<BudgetStatus> configure(String name, ConfigUpdate update) {
    BudgetKeys k = new BudgetKeys(name);
    String[] args = new String[8];
    System.arraycopy(update.scriptArgs(), 0, args, 0, 4);
    System.arraycopy(DEFAULT_ARGS, 0, args, 4, 4);
    return onContext(store.run(LuaScript.CONFIGURE, new String[] {k.config()}, args)).compose(ignored -> status(name));
  }

  Future<Boolean> hasConfiguration(String name) {
    return onContext(store.exists(new BudgetKeys(name).config()));
  }

  /** Counts first attempts of a non-JVM client. */
  Future<BudgetReply> countRequests(String name, long count) {
    return budget(name, count, 0);
  }

  /** Asks for {@code count} permits, all or none. */
  Future<BudgetReply> acquire(String name, long count) {
    return budget(name, 0, count);
  }

  private Future<BudgetReply> budget(String name, long requests, long permits) {
    BudgetKeys k = new BudgetKeys(name);
    String p = Long.toString(permits);
    // no client id: HTTP callers are many and unordered, so the script does not de-duplicate them
    return onContext(store.run(LuaScript.BUDGET, new String[] {k.config(), k.window(), k.clients()},
        "", "1", Long.toString(requests), "0", p, p, DEFAULT_ARGS[0], DEFAULT_ARGS[1], DEFAULT_ARGS[2], DEFAULT_ARGS[3]))
        .map(BudgetReply::parse);
  }

  /** Every budget with keys (at most {@code limit}, every Cluster master scanned) and its status. */
  Future<List<BudgetStatus>> list(int limit) {
    return onContextWithin(store.scanBudgetNames(limit)).compose(names -> {
      List<Future<BudgetStatus>> all = new ArrayList<>();
      for (String n : names) {
        all.add(status(n));
      }
      return Future.all(all).map(done -> {
        List<BudgetStatus> out = new ArrayList<>();
        for (int i = 0; i < all.size(); i++) {
          BudgetStatus s = done.resultAt(i);
          if (s.exists()) {
            out.add(s);
          }
        }
        return out;
      });
    });
  }

  Future<String> ping() {
    return onContext(store.ping());
  }
}
