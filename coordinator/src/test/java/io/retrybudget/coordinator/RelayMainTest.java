package io.retrybudget.coordinator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.budget.redis.protocol.BudgetKeys;
import io.retrybudget.budget.redis.protocol.BudgetScripts;
import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import io.retrybudget.testing.RespClient;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The relay as the coordinator's Main runs it ({@code COORDINATOR_MODE=relay}), in a child JVM,
 * with a real redis-server and an unchanged {@link RedisBudgetClient} whose URI is the relay's. The
 * waits are {@link Eventually} bounds of seconds around steps that take milliseconds (a relay calls
 * Redis every 100-500 ms), so a load of 16 only slows them; the counts are checked exactly.
 */
class RelayMainTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();

  @Test
  void mainRunsTheRelayAloneAndSigtermClosesIt(@TempDir Path dir) throws Exception {
    try (RelayProcess relay = RelayProcess.start(dir, "relay", redis.uri(), 0, Map.of());
        RedisBudgetStore store = RedisBudgetStore.connect(redis.connectionOptions().build())) {
      BudgetScripts scripts = new BudgetScripts(store);
      try (RedisBudgetClient client = RedisBudgetClient.builder(RedisConnectionOptions.standalone(relay.uri()).build())
          .callTimeout(Duration.ofSeconds(1)).build()) {
        RetryBudget budget = client.budget(BudgetConfig.builder("main-relay").build());
        for (int i = 0; i < 40; i++) {
          budget.recordFirstAttempt();
        }
        Eventually.await("40 first attempts in Redis", Duration.ofSeconds(20), () -> requests(scripts, "main-relay") >= 40);
        assertEquals(40, requests(scripts, "main-relay"), "each applied once");
        assertFalse(budget.isDegraded(), "the client takes the relay for its Redis");
      }
      try (RespClient r = new RespClient("127.0.0.1", redis.server().port(), 5_000)) {
        List<?> flat = (List<?>) r.call("HGETALL", new BudgetKeys("main-relay").clients());
        List<String> callers = new java.util.ArrayList<>();
        for (int i = 0; i < flat.size(); i += 2) {
          if (!String.valueOf(flat.get(i)).isEmpty()) { // "" is budget.lua's fleet record
            callers.add(String.valueOf(flat.get(i)));
          }
        }
        assertEquals(List.of(relay.clientId()), callers, "Redis heard from the relay only");
      }
      List<String> started = relay.lines();
      assertTrue(started.stream().anyMatch(l -> l.contains("relay listening on 127.0.0.1:" + relay.port()
          + " (relay only: no HTTP API)")), started.toString());
      assertTrue(started.stream().noneMatch(l -> l.contains("COORDINATOR_TOKEN")), "no token in relay mode: " + started);

      assertEquals(143, relay.terminate(), "ended by SIGTERM after its shutdown hook ran: " + relay.lines());
      List<String> lines = relay.lines();
      assertTrue(lines.contains("shutting down: closing the relay listener, then Redis"), lines.toString());
      assertTrue(lines.contains("stopped"), "the hook's close returned: " + lines);
      assertTrue(lines.stream().noneMatch(l -> l.contains("did not stop cleanly") || l.contains("Exception")),
          lines.toString());
    }
  }

  private static long requests(BudgetScripts scripts, String name) {
    return scripts.status(name, BudgetConfig.builder(name).build()).orTimeout(5, TimeUnit.SECONDS).join().requests();
  }
}
