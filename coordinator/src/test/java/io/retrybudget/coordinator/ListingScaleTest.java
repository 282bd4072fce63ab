package io.retrybudget.coordinator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.coordinator.budgets.IndexBackfill;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisBinary;
import io.retrybudget.testing.RedisServerProcess;
import io.retrybudget.testing.RespClient;
import java.net.URI;
import java.net.http.HttpRequest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Listing cost does not grow with unrelated keys: 2,000,000 of them (DEBUG POPULATE) beside three
 * budgets, and GET /v1/budgets costs Redis what a listing of three budgets costs (names come from
 * the index the scripts keep, not from walking the key space), and the gauges appear. The cost is
 * counted in the commands Redis ran (INFO commandstats), not timed: a walk of the key space is
 * thousands of SCAN pages or a KEYS however fast the machine is, and a listing's own few commands
 * take whatever time the machine's load gives them.
 */
class ListingScaleTest {
  /**
   * Commands one listing may cost Redis: the index read and a status call per budget, with the
   * commands each script runs inside (counted by commandstats too), and room for the gauges' own
   * listing every 5 s should it fall in the same moment. A listing that walked 2,000,000 keys would
   * need 2,000 SCAN pages of 1,000 keys.
   */
  private static final long MAX_COMMANDS_PER_LISTING = 100;

  /** Calls of each command since Redis started ("info" left out: the snapshots' own). */
  private static Map<String, Long> commandCalls(RedisServerProcess redis) {
    Map<String, Long> calls = new HashMap<>();
    for (String line : String.valueOf(redis.call("INFO", "commandstats")).split("\r?\n")) {
      if (line.startsWith("cmdstat_") && !line.startsWith("cmdstat_info:")) {
        int colon = line.indexOf(':');
        int from = line.indexOf("calls=", colon) + "calls=".length();
        int to = line.indexOf(',', from);
        calls.put(line.substring("cmdstat_".length(), colon), Long.parseLong(line.substring(from, to)));
      }
    }
    return calls;
  }

  private static long total(Map<String, Long> calls) {
    return calls.values().stream().mapToLong(Long::longValue).sum();
  }

  @Test
  void twoMillionUnrelatedKeysDoNotSlowTheListing() throws Exception {
    List<String> args = new ArrayList<>();
    if (!RedisBinary.version().startsWith("6.")) {
      args.addAll(List.of("--enable-debug-command", "yes")); // Redis 7 refuses DEBUG by default
    }
    RedisServerProcess redis = RedisServerProcess.startOnFreePort(args);
    // a listing's few commands take milliseconds, and at a load of 16 on 2 cores still well under a
    // second; the default 1 s Redis timeout was within reach of such a load (a 503 for a listing
    // that was merely slow): 30 s is no part of the claim, which is counted in commands
    try (Coordinator c = Coordinator.start(CoordinatorConfig.fromEnvironment(Map.of(
            "REDIS_URL", redis.uri(), "COORDINATOR_PORT", "0", "COORDINATOR_TOKEN", "t",
            "COORDINATOR_REDIS_TIMEOUT_MS", "30000")));
        ApiClient api = new ApiClient(c.port(), "t")) {
      // the start's index backfill SCANs the key space once, paced: over before the unrelated keys
      // come (an empty Redis: one SCAN page), so every SCAN counted below would be a listing's
      Eventually.await("the start's backfill ends", Duration.ofSeconds(30),
          () -> c.indexBackfill().state() != IndexBackfill.State.RUNNING);
      assertEquals(IndexBackfill.State.DONE, c.indexBackfill().state());
      // a few seconds of work for Redis on a loaded machine: more than the harness's 5 s read timeout
      try (RespClient admin = new RespClient("127.0.0.1", redis.port(), 120_000)) {
        admin.call("DEBUG", "POPULATE", "2000000", "unrelated");
      }
      assertEquals(2_000_000L, redis.call("DBSIZE"));
      for (String name : List.of("alpha", "beta", "gamma")) {
        assertEquals(200, api.write("configureBudget", "PUT", "/v1/budgets/" + name, "{\"ratio\": 0.2}").status());
      }
      assertEquals(200, api.write("countRequests", "POST", "/v1/budgets/beta/requests", "{\"count\": 7}").status());
      long worst = 0;
      long mostCommands = 0;
      for (int i = 0; i < 5; i++) {
        Map<String, Long> before = commandCalls(redis);
        long start = System.nanoTime();
        ApiClient.Response r = api.get("listBudgets", "/v1/budgets");
        worst = Math.max(worst, (System.nanoTime() - start) / 1_000_000);
        Map<String, Long> after = commandCalls(redis);
        assertEquals(200, r.status(), r.body());
        assertEquals(3, r.json().getJsonArray("budgets").size());
        for (String walk : List.of("scan", "keys")) {
          assertEquals(before.getOrDefault(walk, 0L), after.getOrDefault(walk, 0L), "the listing ran " + walk.toUpperCase());
        }
        long commands = total(after) - total(before);
        mostCommands = Math.max(mostCommands, commands);
        assertTrue(commands <= MAX_COMMANDS_PER_LISTING, "a listing of 3 budgets cost Redis " + commands + " commands: "
            + before + " -> " + after);
      }
      System.out.println("listing beside 2,000,000 unrelated keys: at most " + mostCommands
          + " Redis commands, slowest of 5 took " + worst + " ms");
      // the gauges are read every 5 s and /metrics is cached for 1 s: 30 s is room for a loaded
      // machine's late timers, not part of the claim
      Eventually.await("gauges appear", Duration.ofSeconds(30), () -> {
        try {
          String metrics = api.raw(HttpRequest.newBuilder(URI.create(api.base() + "/metrics")).build()).body();
          return metrics.contains("retry_budget_window_requests{budget=\"beta\"} 7.0")
              && metrics.contains("retry_budget_count 3.0");
        } catch (Exception e) {
          return false;
        }
      });
    } finally {
      redis.close();
    }
  }
}
