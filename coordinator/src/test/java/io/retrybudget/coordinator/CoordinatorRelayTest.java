package io.retrybudget.coordinator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.budget.redis.protocol.BudgetScripts;
import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import io.retrybudget.testing.RespClient;
import java.net.Socket;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The relay beside the HTTP API in one coordinator (COORDINATOR_RELAY_PORT set), and its close: no
 * thread, timer or connection of the relay outlives {@link Coordinator#close()}. Waits are
 * {@link Eventually} bounds of seconds around steps of milliseconds, so load only slows them.
 */
class CoordinatorRelayTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();

  private static final Set<String> JDK_SINGLETONS = Set.of("CompletableFutureDelayScheduler", "Cleaner-0");

  @Test
  void aTakenRelayPortNamesTheVariable() throws Exception {
    try (java.net.ServerSocket taken = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      CoordinatorConfig config = CoordinatorConfig.fromEnvironment(Map.of("REDIS_URL", redis.uri(), "COORDINATOR_MODE",
          "relay", "COORDINATOR_RELAY_HOST", "127.0.0.1", "COORDINATOR_RELAY_PORT", Integer.toString(taken.getLocalPort())));
      Exception e = assertThrows(Coordinator.PortInUseException.class,
          () -> Coordinator.startRelay(config.relay(), config.redisOptions()).close());
      assertEquals("port " + taken.getLocalPort() + " is already in use: stop what listens there or set "
          + "COORDINATOR_RELAY_PORT to a free port", e.getMessage());
    }
  }

  @Test
  void theCoordinatorServesTheRelayAndItsCloseLeavesNothingBehind() throws Exception {
    Set<Thread> before = Thread.getAllStackTraces().keySet();
    long redisClientsBefore = redisClients();
    Coordinator coordinator = Coordinator.start(CoordinatorConfig.fromEnvironment(Map.of("REDIS_URL", redis.uri(),
        "COORDINATOR_PORT", "0", "COORDINATOR_TOKEN", "relay-beside-the-api", "COORDINATOR_RELAY_PORT", "0",
        "COORDINATOR_RELAY_HOST", "127.0.0.1")));
    int relayPort = coordinator.relayPort();
    try (RedisBudgetStore store = RedisBudgetStore.connect(redis.connectionOptions().build());
        RedisBudgetClient client = RedisBudgetClient.builder(
            RedisConnectionOptions.standalone("redis://127.0.0.1:" + relayPort).build()).build()) {
      RetryBudget budget = client.budget(BudgetConfig.builder("beside-the-api").build());
      for (int i = 0; i < 7; i++) {
        budget.recordFirstAttempt();
      }
      BudgetScripts scripts = new BudgetScripts(store);
      Eventually.await("7 first attempts in Redis through the relay", Duration.ofSeconds(20),
          () -> scripts.status("beside-the-api", BudgetConfig.builder("beside-the-api").build())
              .orTimeout(5, TimeUnit.SECONDS).join().requests() == 7);
      assertTrue(HostileAttacks.live(coordinator.port(), 5_000), "the API serves beside the relay");
    } finally {
      coordinator.close();
    }
    assertThrows(java.io.IOException.class, () -> new Socket("127.0.0.1", relayPort).close(), "the relay stopped listening");
    Eventually.await("every connection of the coordinator and its relay closed in Redis", Duration.ofSeconds(10),
        () -> redisClients() == redisClientsBefore);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!newThreads(before).isEmpty() && System.nanoTime() < deadline) {
      Thread.sleep(20); // threads end a moment after their executor's termination is signalled
    }
    assertEquals(Set.of(), newThreads(before), "threads left behind");
  }

  /**
   * Threads started since {@code before}, but the JDK's own that start once per JVM and live with it
   * (the delay scheduler of {@code CompletableFuture.orTimeout}, a common {@code Cleaner}).
   */
  private static Set<String> newThreads(Set<Thread> before) {
    return Thread.getAllStackTraces().keySet().stream().filter(t -> t.isAlive() && !before.contains(t))
        .filter(t -> !JDK_SINGLETONS.contains(t.getName()))
        .map(Thread::getName).collect(Collectors.toSet());
  }

  /** Connections Redis has open, less the one asking. */
  private static long redisClients() {
    try (RespClient r = new RespClient("127.0.0.1", redis.server().port(), 5_000)) {
      return String.valueOf(r.call("CLIENT", "LIST")).lines().count() - 1;
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }
}
