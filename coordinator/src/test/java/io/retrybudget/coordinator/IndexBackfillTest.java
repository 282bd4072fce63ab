package io.retrybudget.coordinator;

import io.retrybudget.coordinator.budgets.IndexBackfill;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.redis.protocol.BudgetKeys;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.BiConsumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Budgets whose configuration was written before the index of names existed (by hand here, as an
 * older version wrote them: a config hash and no index entry) are listed after a coordinator start
 * without being used, on a standalone Redis and on a 3-master Cluster; a configuration key of the
 * wrong type is listed as broken; unrelated keys and keys that only look like ours are left alone.
 */
class IndexBackfillTest {
  @RegisterExtension static final RedisExtension standalone = RedisExtension.standalone();
  @RegisterExtension static final RedisExtension cluster = RedisExtension.cluster();

  @Test
  void standaloneBudgetsFromBeforeTheIndexAreListedAfterAStart() throws Exception {
    standalone.flushAll();
    run(Map.of("REDIS_URL", standalone.uri()), (key, args) -> standalone.server().call(concat(key, args)));
  }

  @Test
  void clusterBudgetsFromBeforeTheIndexAreListedAfterAStart() throws Exception {
    run(Map.of("REDIS_CLUSTER_NODES", String.join(",", cluster.nodes())),
        (key, args) -> cluster.serverFor(key).call(concat(key, args)));
  }

  private static String[] concat(String key, String[] args) {
    String[] all = new String[args.length + 1];
    all[0] = args[0];
    all[1] = key;
    System.arraycopy(args, 1, all, 2, args.length - 1);
    return all;
  }

  private static void run(Map<String, String> redis, BiConsumer<String, String[]> call) throws Exception {
    Set<String> old = new TreeSet<>();
    for (int i = 0; i < 30; i++) {
      String name = "old-" + i;
      old.add(name);
      String cfg = new BudgetKeys(name).config();
      call.accept(cfg, new String[] {"HSET", "ratio_ppm", "500000", "window_s", "60", "min_rps", "0", "mode", "enforce",
          "src", "set", "max_calls_per_s", "2000"});
      call.accept(cfg, new String[] {"PEXPIRE", "3600000"});
    }
    call.accept(new BudgetKeys("old-broken").config(), new String[] {"SET", "hello"});
    // not ours: an unrelated key, and one with our prefix that is no budget's configuration
    call.accept("unrelated:1", new String[] {"SET", "x"});
    call.accept("rb:v2:{not a name}:cfg", new String[] {"HSET", "ratio_ppm", "1"});

    Map<String, String> env = new java.util.HashMap<>(redis);
    env.put("COORDINATOR_PORT", "0");
    env.put("COORDINATOR_TOKEN", "t");
    try (Coordinator c = Coordinator.start(CoordinatorConfig.fromEnvironment(env)); ApiClient api = new ApiClient(c.port(), "t")) {
      Eventually.await("the backfill ends", Duration.ofSeconds(30), () -> c.indexBackfill().state() != IndexBackfill.State.RUNNING);
      assertEquals(IndexBackfill.State.DONE, c.indexBackfill().state());
      assertEquals(31, c.indexBackfill().added(), "30 budgets and the broken one");
      JsonObject listing = api.get("listBudgets", "/v1/budgets").json();
      Set<String> listed = new TreeSet<>();
      JsonArray budgets = listing.getJsonArray("budgets");
      for (int i = 0; i < budgets.size(); i++) {
        listed.add(budgets.getJsonObject(i).getString("name"));
      }
      assertEquals(old, listed, listing.encode());
      JsonArray broken = listing.getJsonArray("broken");
      assertEquals(1, broken.size(), listing.encode());
      assertTrue(broken.encode().contains("old-broken"), broken.encode());
      assertEquals(0.5, api.get("getBudget", "/v1/budgets/old-7").json().getDouble("ratio"), 1e-9);
    }
    // a second start finds them listed: nothing to add
    try (Coordinator c = Coordinator.start(CoordinatorConfig.fromEnvironment(env))) {
      Eventually.await("the backfill ends", Duration.ofSeconds(30), () -> c.indexBackfill().state() != IndexBackfill.State.RUNNING);
      assertEquals(IndexBackfill.State.DONE, c.indexBackfill().state());
      assertEquals(0, c.indexBackfill().added());
    }
  }
}
