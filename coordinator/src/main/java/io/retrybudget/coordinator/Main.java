package io.retrybudget.coordinator;

import io.retrybudget.coordinator.api.RedisErrors;
import io.retrybudget.coordinator.relay.RelayServer;
import java.util.concurrent.CountDownLatch;
import java.util.logging.Logger;

/** {@code java -jar coordinator.jar}: configuration from the environment (see the README). */
public final class Main {
  private static final Logger LOG = Logger.getLogger(Main.class.getName());

  private Main() {}

  public static void main(String[] args) throws Exception {
    System.setProperty("java.util.logging.SimpleFormatter.format", "%1$tFT%1$tT.%1$tL %4$s %3$s: %5$s%6$s%n");
    CoordinatorConfig config;
    try {
      config = CoordinatorConfig.fromEnvironment(System.getenv());
    } catch (IllegalArgumentException e) {
      System.err.println("configuration error: " + e.getMessage());
      System.exit(2);
      return;
    }
    config.warnings().forEach(LOG::warning);
    if (config.relayOnly()) {
      runRelayOnly(config);
      return;
    }
    Coordinator coordinator;
    try {
      coordinator = Coordinator.start(config);
    } catch (Exception e) {
      // one line an operator can act on; the port, the budgets file or Redis named in the message
      System.err.println("coordinator did not start: " + startFailure(e, config));
      System.exit(1);
      return;
    }
    LOG.info("coordinator listening on port " + coordinator.port() + (config.hasManagementListener()
        ? ", health and metrics also on management port " + coordinator.managementPort()
        : " (health and metrics there too: no management port)") + ", Redis: " + config.describeRedis());
    if (config.relay() != null) {
      LOG.info("relay listening on " + config.relay().host() + ":" + coordinator.relayPort() + ", calling Redis as "
          + coordinator.relayClientId());
    }
    if (config.tokenGenerated()) {
      // shown once so the operator can write; set COORDINATOR_TOKEN to choose it
      System.out.println("COORDINATOR_TOKEN was not set; writes need: Authorization: Bearer " + config.token());
    }
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      // JUL's own shutdown hook may already have closed its handlers: print directly
      System.out.println("shutting down: draining HTTP, closing Redis");
      coordinator.close();
      System.out.println("stopped");
      stopped.countDown();
    }, "coordinator-shutdown"));
    stopped.await();
  }

  /** COORDINATOR_MODE=relay: the relay alone, on the shared Redis; SIGTERM closes it. */
  private static void runRelayOnly(CoordinatorConfig config) throws InterruptedException {
    RelayServer relay;
    try {
      relay = Coordinator.startRelay(config.relay(), config.redisOptions());
    } catch (Exception e) {
      System.err.println("relay did not start: " + startFailure(e, config));
      System.exit(1);
      return;
    }
    LOG.info("relay listening on " + config.relay().host() + ":" + relay.port() + " (relay only: no HTTP API), "
        + "calling Redis " + config.describeRedis() + " as " + relay.clientId());
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      System.out.println("shutting down: closing the relay listener, then Redis");
      relay.close();
      System.out.println("stopped");
      stopped.countDown();
    }, "relay-shutdown"));
    stopped.await();
  }

  /**
   * The one line for a failed start: Lettuce's "Unable to connect to 127.0.0.1/<unresolved>:1" says
   * neither which setting nor why, so a Redis that cannot be reached is described as the API
   * describes a failed call (RedisErrors: the configured endpoint, never a password, and the cause),
   * with the variable that names it.
   */
  static String startFailure(Throwable e, CoordinatorConfig config) {
    for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof io.lettuce.core.RedisConnectionException) {
        return RedisErrors.describe(e, config.redisEndpoint(), config.redisTimeoutMillis()) + " ("
            + (config.redisEndpoint().startsWith("cluster") ? "REDIS_CLUSTER_NODES" : "REDIS_URL") + ")";
      }
    }
    return e.getMessage();
  }
}
