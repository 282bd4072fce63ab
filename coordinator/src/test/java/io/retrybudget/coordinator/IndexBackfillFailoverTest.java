package io.retrybudget.coordinator;

import io.retrybudget.coordinator.budgets.IndexBackfill;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.redis.protocol.BudgetKeys;
import io.retrybudget.budget.redis.protocol.BudgetScripts;
import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisClusterProcesses;
import io.retrybudget.testing.RedisExtension;
import io.retrybudget.testing.RedisServerProcess;
import io.vertx.core.Vertx;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The start's index backfill on a real 3-master / 3-replica Cluster with a master killed before the
 * coordinator starts: the other masters' budgets are listed while it is dead (the backfill does not
 * wait on it), its slots are scanned on its replica once that is promoted, and the backfill logs
 * one line. With no node left for some slots, it gives up after its failed steps with one WARNING
 * and has listed everything else.
 *
 * <p>The live nodes' cluster-node-timeout is raised for the test, so that no node marks the dead
 * master failed by itself (which would take the Cluster down, then promote the replica, at times
 * of Redis's choosing): the replica is promoted when the test says so ({@code CLUSTER FAILOVER
 * TAKEOVER}), and "dead but not yet replaced" lasts as long as the test needs.
 */
class IndexBackfillFailoverTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.clusterWithReplicas();

  @Test
  void aDeadMasterIsSkippedThenScannedOnItsReplicaOnceThatIsPromoted() throws Exception {
    RedisClusterProcesses nodes = redis.clusterProcesses();
    List<RedisServerProcess> all = new ArrayList<>(nodes.masters());
    all.addAll(nodes.replicas());
    for (RedisServerProcess n : all) {
      n.call("CONFIG", "SET", "cluster-node-timeout", "600000");
    }
    // the masters as started own slots 0-5460, 5461-10921, 10922-16383: the dead one holds the lowest
    // slots, so a backfill walking the masters in slot order meets it first
    RedisServerProcess dead = nodes.masters().get(0);
    RedisServerProcess heir = nodes.replicaOf(dead);
    Map<RedisServerProcess, List<String>> byMaster = writeOldBudgets("old-", 60);
    for (RedisServerProcess m : nodes.masters()) {
      assertTrue(byMaster.getOrDefault(m, List.of()).size() >= 5, "budgets on every master: " + byMaster);
    }
    Eventually.await("the replica has every write", Duration.ofSeconds(10), () -> RedisClusterProcesses.caughtUp(dead, heir));
    dead.kill();

    List<LogRecord> logged = new CopyOnWriteArrayList<>();
    Handler capture = capture(logged);
    Logger log = Logger.getLogger(IndexBackfill.class.getName());
    log.addHandler(capture);
    try (Coordinator c = Coordinator.start(CoordinatorConfig.fromEnvironment(Map.of(
            "REDIS_CLUSTER_NODES", String.join(",", redis.nodes()), "COORDINATOR_PORT", "0", "COORDINATOR_TOKEN", "t")));
        ApiClient api = new ApiClient(c.port(), "t")) {
      // the live masters' budgets are listed while the dead one is still the master of its slots
      List<String> live = new ArrayList<>();
      for (RedisServerProcess m : nodes.masters()) {
        if (m != dead) {
          live.addAll(byMaster.get(m));
        }
      }
      Eventually.await("the live masters' budgets listed with a master dead", Duration.ofSeconds(30),
          () -> live.stream().allMatch(name -> listed(name, serverOf(byMaster, name))));
      assertEquals(IndexBackfill.State.RUNNING, c.indexBackfill().state(), "the dead master's slots are still to do");
      assertTrue(c.indexBackfill().failedSteps() >= 1, "the dead master was tried");
      Eventually.await("counted", Duration.ofSeconds(5), () -> c.indexBackfill().added() == live.size());
      assertEquals(200, api.get("live", "/health/live").status(), "the API's event loop answers meanwhile");

      heir.call("CLUSTER", "FAILOVER", "TAKEOVER");
      Eventually.await("the replica is promoted", Duration.ofSeconds(10), () -> String.valueOf(heir.call("ROLE")).startsWith("[master"));
      // the client sees the new master at its next topology refresh (every 10 s), the backfill within a second of that
      Eventually.await("the backfill ends", Duration.ofSeconds(40), () -> c.indexBackfill().state() != IndexBackfill.State.RUNNING);
      assertEquals(IndexBackfill.State.DONE, c.indexBackfill().state());
      assertEquals(60, c.indexBackfill().added(), "every budget, the dead master's on its heir");
      for (String name : byMaster.get(dead)) {
        assertTrue(listed(name, heir), name + " listed on the promoted replica");
      }
      assertEquals(List.of("INFO"), logged.stream().map(r -> r.getLevel().getName()).toList(), "one line: " + messages(logged));
      assertTrue(logged.get(0).getMessage().contains("listed 60 budgets"), messages(logged));
    } finally {
      log.removeHandler(capture);
    }

    // now no node at all serves the heir's slots: the backfill lists the rest, then gives up, once
    Map<RedisServerProcess, List<String>> later = writeOldBudgets("later-", 60);
    heir.kill();
    logged.clear();
    log.addHandler(capture);
    Vertx vertx = Vertx.vertx();
    try (RedisBudgetStore store = RedisBudgetStore.connect(redis.connectionOptions().build())) {
      IndexBackfill b = IndexBackfill.start(new IndexBackfill(vertx, IndexBackfill.source(new BudgetScripts(store), store),
          1, 50, 20, System::nanoTime));
      Eventually.await("the backfill gives up", Duration.ofSeconds(30), () -> b.state() != IndexBackfill.State.RUNNING);
      assertEquals(IndexBackfill.State.GAVE_UP, b.state());
      int reachable = 0;
      for (Map.Entry<RedisServerProcess, List<String>> e : later.entrySet()) {
        if (e.getKey() != heir) {
          reachable += e.getValue().size();
          for (String name : e.getValue()) {
            assertTrue(listed(name, e.getKey()), name);
          }
        }
      }
      assertEquals(reachable, b.added());
      assertEquals(List.of("WARNING"), logged.stream().map(r -> r.getLevel().getName()).toList(), "one line: " + messages(logged));
      assertTrue(logged.get(0).getMessage().contains("127.0.0.1:" + heir.port()), messages(logged));
    } finally {
      log.removeHandler(capture);
      vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }
  }

  /** Configuration hashes as a version before the index wrote them (no index entry), on their masters. */
  private static Map<RedisServerProcess, List<String>> writeOldBudgets(String prefix, int n) {
    Map<RedisServerProcess, List<String>> byMaster = new HashMap<>();
    for (int i = 0; i < n; i++) {
      String name = prefix + i;
      String cfg = new BudgetKeys(name, true).config();
      RedisServerProcess master = redis.clusterProcesses().masterFor(cfg);
      master.call("HSET", cfg, "ratio_ppm", "500000", "window_s", "60", "min_rps", "0", "mode", "enforce", "src", "set",
          "max_calls_per_s", "2000");
      master.call("PEXPIRE", cfg, "3600000");
      assertNull(master.call("ZSCORE", new BudgetKeys(name, true).index(), name), "not listed yet");
      byMaster.computeIfAbsent(master, k -> new ArrayList<>()).add(name);
    }
    return byMaster;
  }

  private static RedisServerProcess serverOf(Map<RedisServerProcess, List<String>> byMaster, String name) {
    for (Map.Entry<RedisServerProcess, List<String>> e : byMaster.entrySet()) {
      if (e.getValue().contains(name)) {
        return e.getKey();
      }
    }
    throw new IllegalArgumentException(name);
  }

  private static boolean listed(String name, RedisServerProcess on) {
    Object score = on.call("ZSCORE", new BudgetKeys(name, true).index(), name);
    return score != null;
  }

  private static Handler capture(List<LogRecord> into) {
    Handler h = new Handler() {
      @Override
      public void publish(LogRecord r) {
        if (r.getLevel().intValue() >= Level.INFO.intValue()) {
          into.add(r);
        }
      }

      @Override
      public void flush() {}

      @Override
      public void close() {}
    };
    h.setLevel(Level.ALL);
    return h;
  }

  private static String messages(List<LogRecord> records) {
    return records.stream().map(r -> r.getLevel() + " " + r.getMessage()).toList().toString();
  }
}
