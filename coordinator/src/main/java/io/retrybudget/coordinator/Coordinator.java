package io.retrybudget.coordinator;

import io.retrybudget.coordinator.http.ConnectionGuard;
import io.retrybudget.coordinator.http.GuardedTransport;
import io.retrybudget.coordinator.http.PipelineSelfTest;
import io.retrybudget.coordinator.http.VertxInternals;
import io.retrybudget.coordinator.http.BoundedHttpTags;
import io.retrybudget.coordinator.budgets.BudgetsFile;
import io.retrybudget.coordinator.budgets.BudgetService;
import io.retrybudget.coordinator.budgets.IndexBackfill;
import io.retrybudget.coordinator.budgets.ConfigUpdate;
import io.retrybudget.coordinator.relay.RelayServer;
import io.retrybudget.coordinator.status.StatusPage;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.core.instrument.distribution.DistributionStatisticConfig;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.retrybudget.budget.redis.protocol.BudgetScripts;
import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import io.retrybudget.localredis.LocalRedis;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.micrometer.Label;
import io.vertx.micrometer.MicrometerMetricsFactory;
import io.vertx.micrometer.MicrometerMetricsOptions;
import java.io.IOException;
import java.io.InputStream;
import java.net.BindException;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.logging.Logger;

/**
 * The running coordinator: a local Redis when none is configured, the Redis connection, Vert.x with
 * Micrometer metrics, and the HTTP verticle. {@link #close()} shuts down in order: the HTTP server
 * (draining in-flight requests), the Redis connection, Vert.x, the local Redis.
 */
public final class Coordinator implements AutoCloseable {
  private static final Logger LOG = Logger.getLogger(Coordinator.class.getName());
  /**
   * Vert.x's Micrometer metrics register their connection and request gauges again for every
   * connection and request (vertx.http.server.active.connections, ...active.requests), by design:
   * the registration returns the id after the registry's filters, which picks the LongAdder to count
   * in (vertx-micrometer-metrics issue 259). Since Micrometer 1.13.9 the second registration of a
   * gauge logs a WARNING ("This Gauge has been already registered"), seen at the first scrape or
   * shutdown of every coordinator. Only that message, and only for Vert.x's own gauges, is dropped;
   * held here so the filtered logger is never collected.
   */
  private static final Logger MICROMETER_LOG = Logger.getLogger("io.micrometer.core.instrument.MeterRegistry");

  static {
    java.util.logging.Filter previous = MICROMETER_LOG.getFilter();
    MICROMETER_LOG.setFilter(r -> !isVertxGaugeReRegistration(r.getMessage())
        && (previous == null || previous.isLoggable(r)));
  }

  static boolean isVertxGaugeReRegistration(String message) {
    return message != null && message.startsWith("This Gauge has been already registered")
        && message.contains("MeterId{name='vertx.");
  }

  private final LocalRedis localRedis;
  private final RedisBudgetStore store;
  private final Vertx vertx;
  private final String deploymentId;
  private final CoordinatorVerticle verticle;
  private final CoordinatorConfig config;
  private final ConnectionGuard guard;
  private final IndexBackfill backfill;
  private final Management management;
  private final RelayServer relay;

  /** The management listener's own Vert.x, verticle and guard; null when health shares the API port. */
  private record Management(Vertx vertx, ManagementVerticle verticle, ConnectionGuard guard) {}

  private Coordinator(CoordinatorConfig config, LocalRedis localRedis, RedisBudgetStore store, Vertx vertx,
      CoordinatorVerticle verticle, String deploymentId, ConnectionGuard guard, IndexBackfill backfill,
      Management management, RelayServer relay) {
    this.config = config;
    this.relay = relay;
    this.backfill = backfill;
    this.guard = guard;
    this.management = management;
    this.localRedis = localRedis;
    this.store = store;
    this.vertx = vertx;
    this.verticle = verticle;
    this.deploymentId = deploymentId;
  }

  /** Starts everything; blocks until the HTTP server listens. Throws when any part cannot start. */
  public static Coordinator start(CoordinatorConfig config) throws Exception {
    LettuceLogThrottle.install(); // Lettuce's per-command WARNINGs, at most one per kind every 10 s
    PipelineSelfTest.run(); // the Vert.x internals the connection guard relies on, once per process
    Map<String, ConfigUpdate> fileBudgets = config.budgetsFile() == null ? Map.of() : BudgetsFile.read(config.budgetsFile());
    LocalRedis local = null;
    RedisBudgetStore store = null;
    Vertx vertx = null;
    Vertx managementVertx = null;
    try {
      RedisConnectionOptions redis;
      if (config.hasRedis()) {
        redis = config.redisOptions();
      } else {
        local = LocalRedis.start();
        LOG.info("no REDIS_URL or REDIS_CLUSTER_NODES: started a local Redis (" + local.binary() + ") at "
            + local.uri() + "; it stops with the coordinator and keeps nothing");
        redis = RedisConnectionOptions.standalone(local.uri()).commandTimeout(config.redisTimeout()).build();
      }
      PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
      BoundedHttpTags httpTags = new BoundedHttpTags();
      registry.config().meterFilter(httpTags);
      // histogram buckets for the HTTP server's response times, so dashboards can take p99s
      registry.config().meterFilter(new MeterFilter() {
        @Override
        public DistributionStatisticConfig configure(Meter.Id id, DistributionStatisticConfig config) {
          if (id.getName().startsWith("vertx.http.server.response.time")) {
            return DistributionStatisticConfig.builder().percentilesHistogram(true).build().merge(config);
          }
          return config;
        }
      });
      HttpServerOptions serverOptions = CoordinatorVerticle.serverOptions(config.port());
      ConnectionGuard guard = new ConnectionGuard(config.http(), serverOptions, registry, "api");
      // One event loop serves HTTP (one verticle instance) and carries the Redis connection too:
      // a request's script call and its reply stay on that thread, with no hop to Lettuce's own.
      vertx = Vertx.builder()
          .with(new VertxOptions().setEventLoopPoolSize(1)
              .setMetricsOptions(new MicrometerMetricsOptions().setEnabled(true)
                  .setLabels(EnumSet.of(Label.HTTP_METHOD, Label.HTTP_CODE, Label.HTTP_ROUTE, Label.POOL_TYPE,
                      Label.POOL_NAME, Label.EB_SIDE))))
          .withMetrics(new MicrometerMetricsFactory(registry))
          .withTransport(new GuardedTransport(guard))
          .build();
      store = RedisBudgetStore.connect(redis, VertxInternals.eventLoopGroup(vertx));
      BudgetService budgets = new BudgetService(store, vertx, config.redisTimeout(), config.autoCreate());
      for (Map.Entry<String, ConfigUpdate> e : fileBudgets.entrySet()) {
        await(budgets.configure(e.getKey(), e.getValue()));
      }
      if (!fileBudgets.isEmpty()) {
        LOG.info("applied " + fileBudgets.size() + " budgets from " + config.budgetsFile());
      }
      StatusPage.load(); // the page's files, read from the jar here, not on the event loop
      String endpoint = local != null ? "127.0.0.1:" + local.port() : config.redisEndpoint();
      ManagementVerticle.Heartbeat heartbeat = new ManagementVerticle.Heartbeat(System::nanoTime);
      CoordinatorVerticle verticle = new CoordinatorVerticle(config, budgets, registry, fileBudgets, serverOptions,
          httpTags, endpoint, openApiDocument(), heartbeat);
      String id = deploy(vertx, verticle, config.port(), "COORDINATOR_PORT");
      // only now has Vert.x made the server's metrics: a connection taken before would lack its part
      guard.startAccepting();
      Management management = null;
      if (config.hasManagementListener()) {
        // a Vert.x of its own: its own acceptor thread, event loop, kernel accept queue and guard, so
        // a flood of the API port (thousands of new connections a second) never queues a probe
        HttpServerOptions managementOptions = CoordinatorVerticle.serverOptions(config.managementPort());
        ConnectionGuard managementGuard = new ConnectionGuard(config.http().withCap(config.managementMaxConnections()),
            managementOptions, registry, "management");
        managementVertx = Vertx.builder()
            .with(new VertxOptions().setEventLoopPoolSize(1).setWorkerPoolSize(1).setInternalBlockingPoolSize(1))
            .withTransport(new GuardedTransport(managementGuard))
            .build();
        ManagementVerticle mv = new ManagementVerticle(budgets, registry, managementOptions, heartbeat,
            config.livenessStallMillis(), config.http().metricsCacheMillis(), endpoint);
        deploy(managementVertx, mv, config.managementPort(), "COORDINATOR_MANAGEMENT_PORT");
        managementGuard.startAccepting();
        management = new Management(managementVertx, mv, managementGuard);
      }
      // budgets configured before the index of names existed: listed in the background, paced
      IndexBackfill backfill = IndexBackfill.start(vertx, new BudgetScripts(store), store);
      // last: relay clients are served only by a coordinator that has started whole
      RelayServer relay = config.relay() == null ? null : startRelay(config.relay(), redis);
      return new Coordinator(config, local, store, vertx, verticle, id, guard, backfill, management, relay);
    } catch (Exception | Error e) {
      if (managementVertx != null) {
        managementVertx.close();
      }
      if (store != null) {
        store.close();
      }
      if (vertx != null) {
        vertx.close();
      }
      if (local != null) {
        local.close();
      }
      throw e;
    }
  }

  /**
   * Starts the relay of {@code listener} on a Vert.x and Redis connection of its own
   * ({@link RelayServer}); a taken port is a {@link PortInUseException} naming COORDINATOR_RELAY_PORT.
   */
  public static RelayServer startRelay(RelayListener listener, RedisConnectionOptions redis) throws Exception {
    try {
      return RelayServer.start(redis, listener.options());
    } catch (Exception e) {
      if (causedBy(e, BindException.class)) {
        throw new PortInUseException(listener.port(), "COORDINATOR_RELAY_PORT");
      }
      throw e;
    }
  }

  private static String deploy(Vertx vertx, VerticleBase verticle, int port, String variable) throws IOException {
    try {
      return await(vertx.deployVerticle(verticle));
    } catch (IOException e) {
      if (causedBy(e, BindException.class)) {
        throw new PortInUseException(port, variable);
      }
      throw e;
    }
  }

  /** A port is taken: one line for the operator, no stack trace needed. */
  public static final class PortInUseException extends IOException {
    PortInUseException(int port, String variable) {
      super("port " + port + " is already in use: stop what listens there or set " + variable + " to a free port");
    }
  }

  private static boolean causedBy(Throwable t, Class<? extends Throwable> type) {
    for (; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (type.isInstance(t)) {
        return true;
      }
    }
    return false;
  }

  /** coordinator/openapi.yaml, packaged as a resource; served at GET /openapi.yaml. */
  static Buffer openApiDocument() throws IOException {
    try (InputStream in = Coordinator.class.getResourceAsStream("/openapi.yaml")) {
      if (in == null) {
        throw new IOException("openapi.yaml missing from the classpath");
      }
      return Buffer.buffer(in.readAllBytes());
    }
  }

  private static <T> T await(Future<T> f) throws IOException {
    try {
      return f.toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted", e);
    } catch (ExecutionException | TimeoutException e) {
      throw new IOException("coordinator start failed: " + (e.getCause() != null ? e.getCause() : e), e);
    }
  }

  /** Open HTTP connections, as the connection guard counts them. */
  public int openConnections() {
    return guard.open();
  }

  /** The most deadline closes the connection guard had queued on the event loop at once. */
  int mostExpiringAtOnce() {
    return guard.mostExpiringAtOnce();
  }

  /** Open HTTP connections without a request in progress. */
  int waitingConnections() {
    return guard.waiting();
  }

  public int port() {
    return verticle.actualPort();
  }

  /**
   * The port of the management listener (/health/live, /health/ready, /metrics), or the API port
   * when they share it (COORDINATOR_MANAGEMENT_PORT equal to COORDINATOR_PORT).
   */
  public int managementPort() {
    return management == null ? port() : management.verticle().actualPort();
  }

  /** Open connections on the management listener (0 without one). */
  int managementConnections() {
    return management == null ? 0 : management.guard().open();
  }

  /** Client addresses the API listener's per-address limit counts (0 when it is off). */
  int apiAddressesHeld() {
    return guard.addressesHeld();
  }

  /** Runs {@code task} on the API event loop (tests: a stalled loop). */
  void onApiLoop(Runnable task) {
    vertx.runOnContext(v -> task.run());
  }

  public CoordinatorConfig config() {
    return config;
  }

  /** The start's index backfill (tests). */
  IndexBackfill indexBackfill() {
    return backfill;
  }

  /** The relay's port, or -1 when it is off (COORDINATOR_RELAY_PORT unset). */
  public int relayPort() {
    return relay == null ? -1 : relay.port();
  }

  /** The relay's id towards Redis, or null when it is off. */
  public String relayClientId() {
    return relay == null ? null : relay.clientId();
  }

  @Override
  public void close() {
    if (relay != null) {
      relay.close(); // first: its clients move to another relay while the API drains
    }
    backfill.stop();
    try {
      await(vertx.undeploy(deploymentId));
    } catch (IOException | RuntimeException e) {
      LOG.warning("HTTP server did not stop cleanly: " + e.getMessage());
    }
    store.close(); // before Vert.x: its connection lives on a Vert.x event loop
    try {
      await(vertx.close());
    } catch (IOException | RuntimeException e) {
      LOG.warning("Vert.x did not close cleanly: " + e.getMessage());
    }
    if (management != null) {
      // last: the kubelet's probes keep their answers while the API drains
      try {
        await(management.vertx().close());
      } catch (IOException | RuntimeException e) {
        LOG.warning("management listener did not close cleanly: " + e.getMessage());
      }
    }
    if (localRedis != null) {
      localRedis.close();
    }
  }

}
