package io.retrybudget.coordinator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.redis.protocol.BudgetKeys;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import io.retrybudget.testing.RedisServerProcess;
import io.vertx.core.json.JsonArray;
import java.net.URI;
import java.net.http.HttpRequest;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The coordinator on a real 3-master / 3-replica Cluster under faults: it starts and serves with a
 * replica dead; after the master of a budget's slot is killed, listing, permits and gauges work again
 * once its replica takes over, and a coordinator started while the dead master is still listed
 * starts and serves.
 */
class ClusterFaultCoordinatorTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.clusterWithReplicas();

  /** With the gauges read every 200 ms, not every 5 s: the test waits for one refresh after the failover. */
  private static Coordinator start() throws Exception {
    return Coordinator.start(CoordinatorConfig.fromEnvironment(Map.of(
        "REDIS_CLUSTER_NODES", String.join(",", redis.nodes()), "COORDINATOR_PORT", "0", "COORDINATOR_TOKEN", "t")), 200);
  }

  @Test
  void startsWithAReplicaDownAndServesAgainAfterAFailover() throws Exception {
    String name = "moved";
    RedisServerProcess master = redis.clusterProcesses().masterFor(new BudgetKeys(name, true).config());
    RedisServerProcess heir = redis.clusterProcesses().replicaOf(master);
    RedisServerProcess other = redis.clusterProcesses().masters().stream().filter(m -> m != master).findFirst().orElseThrow();
    redis.clusterProcesses().replicaOf(other).kill();

    try (Coordinator c = start(); ApiClient api = new ApiClient(c.port(), "t")) {
      for (int i = 0; i < 10; i++) {
        assertEquals(200, api.write("configureBudget", "PUT", "/v1/budgets/svc-" + i, "{\"ratio\": 0.5}").status());
      }
      assertEquals(200, api.write("configureBudget", "PUT", "/v1/budgets/" + name, "{\"ratio\": 0.5, \"window_seconds\": 3600}").status());
      assertEquals(200, api.write("countRequests", "POST", "/v1/budgets/" + name + "/requests", "{\"count\": 10}").status());
      long t0 = System.nanoTime();
      ApiClient.Response first = api.get("listBudgets", "/v1/budgets");
      System.out.println("Cluster listing (list.lua on each master) took " + (System.nanoTime() - t0) / 1_000_000 + " ms");
      assertEquals(200, first.status(), first.body());
      assertEquals(11, first.json().getJsonArray("budgets").size());
      // replication is asynchronous: let the replica have the writes before its master dies
      Eventually.await("replica has every write", Duration.ofSeconds(5),
          () -> io.retrybudget.testing.RedisClusterProcesses.caughtUp(master, heir));

      master.kill();
      // cluster-node-timeout (5 s), the failure agreement and the election: 7 to 9 s here, more under load
      Eventually.await("the replica takes over", Duration.ofSeconds(40),
          () -> String.valueOf(heir.call("ROLE")).startsWith("[master"));
      long served = Eventually.await("permits and listing again", Duration.ofSeconds(5), () -> {
        try {
          return api.write("countRequests", "POST", "/v1/budgets/" + name + "/requests", "{\"count\": 1}").status() == 200
              && api.get("listBudgets", "/v1/budgets").status() == 200;
        } catch (Exception | AssertionError e) {
          return false;
        }
      });
      System.out.println("coordinator serves again " + served + " ms after the replica's promotion");
      JsonArray listed = api.get("listBudgets", "/v1/budgets").json().getJsonArray("budgets");
      assertEquals(11, listed.size(), listed.encode());
      long requests = api.get("getBudget", "/v1/budgets/" + name).json().getLong("requests");
      assertTrue(requests >= 11, "requests " + requests);
      // the gauges' refresh follows the new master
      Eventually.await("gauges after the failover", Duration.ofSeconds(15), () -> gauge(api, name) == requests);

      try (Coordinator late = start(); ApiClient lateApi = new ApiClient(late.port(), "t")) {
        assertEquals(200, lateApi.get("listBudgets", "/v1/budgets").status());
        assertEquals(200, lateApi.write("acquireRetries", "POST", "/v1/budgets/" + name + "/retries", "{\"count\": 1}").status());
      }
    }
  }

  private static double gauge(ApiClient api, String budget) {
    String line = metric(api, budget);
    return line.isEmpty() ? -1 : Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
  }

  private static String metric(ApiClient api, String budget) {
    try {
      String body = api.raw(HttpRequest.newBuilder(URI.create(apiBase(api) + "/metrics")).build()).body();
      return body.lines().filter(l -> l.startsWith("retry_budget_window_requests{") && l.contains("budget=\"" + budget + "\""))
          .findFirst().orElse("");
    } catch (Exception e) {
      return "";
    }
  }

  private static String apiBase(ApiClient api) {
    return api.base();
  }
}
