package io.retrybudget.coordinator.relay;

import io.retrybudget.budget.redis.protocol.BudgetScripts;
import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import io.retrybudget.coordinator.http.VertxInternals;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.logging.Logger;

/**
 * A running relay with everything it owns: a Vert.x of its own (one event loop, so the relay never
 * shares a thread with the HTTP API), its Redis connection on that same loop, and the
 * {@link RelayHost}. {@link #close()} stops listening and the relay's timers, then closes the Redis
 * connection, then Vert.x: no thread, timer or connection of the relay outlives it.
 */
public final class RelayServer implements AutoCloseable {
  private static final Logger LOG = Logger.getLogger(RelayServer.class.getName());
  private static final long WAIT_SECONDS = 30;

  private final Vertx vertx;
  private final RedisBudgetStore store;
  private final RelayHost host;

  private RelayServer(Vertx vertx, RedisBudgetStore store, RelayHost host) {
    this.vertx = vertx;
    this.store = store;
    this.host = host;
  }

  /**
   * Connects to Redis and listens; blocks until it does (at most 30 s), and on any failure closes
   * what it opened before throwing.
   */
  public static RelayServer start(RedisConnectionOptions redis, RelayHostOptions options) throws Exception {
    Vertx vertx = Vertx.builder()
        .with(new VertxOptions().setEventLoopPoolSize(1).setWorkerPoolSize(1).setInternalBlockingPoolSize(1))
        .build();
    RedisBudgetStore store = null;
    try {
      // Lettuce on the relay's own event loop: Redis's replies arrive on the thread that runs the relay
      store = RedisBudgetStore.connect(redis, VertxInternals.eventLoopGroup(vertx));
      RelayHost host = await(RelayHost.start(vertx, new BudgetScripts(store), options));
      return new RelayServer(vertx, store, host);
    } catch (Exception | Error e) {
      if (store != null) {
        store.close();
      }
      vertx.close();
      throw e;
    }
  }

  /** The port the relay listens on. */
  public int port() {
    return host.port();
  }

  /** The id the relay calls Redis with ({@code relay-<hex>}, new at every start). */
  public String clientId() {
    return host.clientId();
  }

  /** The relay itself (tests and diagnostics). */
  public RelayHost host() {
    return host;
  }

  @Override
  public void close() {
    try {
      await(host.close()); // the listener and its connections, the tick and sweep timers
    } catch (Exception e) {
      LOG.warning("relay did not stop cleanly: " + e.getMessage());
    }
    store.close(); // before Vert.x: the connection lives on its event loop
    try {
      await(vertx.close());
    } catch (Exception e) {
      LOG.warning("relay's Vert.x did not close cleanly: " + e.getMessage());
    }
  }

  private static <T> T await(Future<T> f) throws Exception {
    try {
      return f.toCompletionStage().toCompletableFuture().get(WAIT_SECONDS, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      throw e.getCause() instanceof Exception c ? c : e;
    } catch (TimeoutException e) {
      throw new TimeoutException("relay: no answer within " + WAIT_SECONDS + " s");
    }
  }
}
