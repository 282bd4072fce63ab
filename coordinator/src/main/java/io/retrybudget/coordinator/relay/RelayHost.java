package io.retrybudget.coordinator.relay;

import io.retrybudget.budget.redis.protocol.BudgetCall;
import io.retrybudget.budget.redis.protocol.BudgetKeys;
import io.retrybudget.budget.redis.protocol.BudgetScripts;
import io.retrybudget.budget.redis.protocol.CallExtras;
import io.retrybudget.budget.redis.protocol.ClientSequence;
import io.retrybudget.budget.redis.protocol.NumberedCall;
import io.retrybudget.relay.BudgetRelay;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.VerticleBase;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.net.NetServer;
import io.vertx.core.net.NetServerOptions;
import io.vertx.core.net.NetSocket;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A relay: a RESP server that SDK clients take for their Redis (their URI points here), answering
 * budget.lua's calls from each budget's {@link BudgetRelay}, which draws its paced share from the real
 * Redis through the SDK's own {@link BudgetScripts} under one id of its own ({@code relay-<hex>}, new
 * at every start). One verticle: every connection, timer and reply from Redis runs on its one event
 * loop, and nothing there blocks. Bounded: connections ({@link RelayHostOptions#maxConnections}),
 * budgets, each request ({@link RespParser}), one call to Redis in flight per budget; a client whose
 * replies pile up unread is not read from until they drain.
 *
 * <pre>{@code
 * RedisBudgetStore store = RedisBudgetStore.connect(RedisConnectionOptions.standalone(redisUri).build());
 * RelayHost relay = RelayHost.start(vertx, new BudgetScripts(store), RelayHostOptions.builder().port(6380).build())
 *     .await();
 * // clients: RedisBudgetClient.builder(RedisConnectionOptions.standalone("redis://relay-host:6380").build())
 * }</pre>
 */
public final class RelayHost extends VerticleBase {
  private static final java.util.logging.Logger LOG = java.util.logging.Logger.getLogger(RelayHost.class.getName());
  private static final long TICK_MILLIS = 10;
  private static final long SWEEP_MILLIS = 1_000;
  private static final int MAX_ARGS = 80; // 2 + 5 keys + 13 + 8 groups of 4 + 16 held items, and some

  private final BudgetScripts scripts;
  private final RelayHostOptions options;
  private final ClientSequence identity;
  private final Map<String, BudgetKeys> keys = new HashMap<>();
  private RelayBudgets budgets;
  private ForeignScripts foreign;
  private final String budgetBody; // the budget.lua its clients must send
  private NetServer server;
  private int connections;
  private long nextConnectionId;
  private long tickTimer = -1;
  private long sweepTimer = -1;

  private RelayHost(BudgetScripts scripts, RelayHostOptions options, String budgetBody) {
    this.budgetBody = budgetBody;
    this.scripts = scripts;
    this.options = options;
    this.identity = new ClientSequence("relay-" + Long.toHexString((long) (options.random().getAsDouble() * Long.MAX_VALUE))
        + Long.toHexString(System.nanoTime() & 0xffff));
  }

  /**
   * Deploys a relay on {@code vertx} that draws from Redis through {@code scripts} (whose store the
   * caller opened and closes after the relay); completes once it listens.
   */
  public static Future<RelayHost> start(Vertx vertx, BudgetScripts scripts, RelayHostOptions options) {
    return start(vertx, scripts, options, io.retrybudget.budget.redis.protocol.LuaScript.BUDGET.body());
  }

  /** As above, answering clients whose budget.lua is {@code budgetBody}: a relay of another version, for tests. */
  static Future<RelayHost> start(Vertx vertx, BudgetScripts scripts, RelayHostOptions options, String budgetBody) {
    RelayHost host = new RelayHost(scripts, options, budgetBody);
    return vertx.deployVerticle(host).map(id -> host);
  }

  @Override
  public Future<?> start() {
    foreign = new ForeignScripts(options.clock(), LOG::warning,
        RelaySession.sha1(budgetBody.getBytes(java.nio.charset.StandardCharsets.UTF_8)));
    budgets = new RelayBudgets(options.settings(), options.maxBudgets(), options.clock(), options.random(),
        new RelayBudgets.Upstream() {
          @Override
          public RelayBudgets.Sent send(BudgetCall call, CallExtras extras) {
            return timed(scripts.numbered(call, keys(call), identity, java.util.List.of(), extras));
          }

          @Override
          public RelayBudgets.Sent again(BudgetCall call, long number, CallExtras extras) {
            return timed(scripts.again(call, keys(call), identity, number, extras));
          }
        },
        task -> context.runOnContext(v -> task.run()), identity.clientId());
    tickTimer = vertx.setPeriodic(TICK_MILLIS, id -> budgets.tick());
    sweepTimer = vertx.setPeriodic(SWEEP_MILLIS, id -> budgets.sweep());
    server = vertx.createNetServer(new NetServerOptions().setHost(options.host()).setPort(options.port())
        .setTcpNoDelay(true));
    server.connectHandler(this::connected);
    return server.listen();
  }

  private BudgetKeys keys(BudgetCall call) {
    return keys.computeIfAbsent(call.name(), scripts::keys);
  }

  /** The host's timeout on a call to Redis: after it no attempt of the call is sent. */
  private RelayBudgets.Sent timed(NumberedCall call) {
    call.reply().orTimeout(options.upstreamTimeoutMillis(), TimeUnit.MILLISECONDS);
    return RelayBudgets.Sent.of(call);
  }

  private void connected(NetSocket socket) {
    if (connections >= options.maxConnections()) {
      socket.write(Buffer.buffer(new RespWriter().error("ERR max number of clients reached").take()));
      socket.close();
      return;
    }
    connections++;
    socket.closeHandler(v -> connections--);
    RespWriter out = new RespWriter();
    RespParser parser = new RespParser(MAX_ARGS, options.maxCommandBytes(), options.maxCommandBytes());
    RelaySession session = new RelaySession(options.password(), ++nextConnectionId, budgets, out, foreign::refused,
        budgetBody);
    boolean[] open = {true};
    socket.handler(data -> {
      if (!open[0]) {
        return;
      }
      byte[] bytes = data.getBytes();
      try {
        parser.feed(bytes, 0, bytes.length, command -> {
          if (open[0]) {
            open[0] = session.handle(command);
          }
        });
      } catch (RespProtocolException e) {
        out.error("ERR " + e.getMessage());
        open[0] = false;
      }
      if (out.size() > 0) {
        socket.write(Buffer.buffer(out.take()));
      }
      if (!open[0]) {
        socket.end(); // after the replies written
      } else if (socket.writeQueueFull()) {
        socket.pause();
        socket.drainHandler(v -> socket.resume());
      }
    });
  }

  /** The port the relay listens on (the one chosen when 0 was asked for). */
  public int port() {
    return server.actualPort();
  }

  /** The id the relay calls Redis with. */
  public String clientId() {
    return identity.clientId();
  }

  /**
   * Runs {@code query} on the relay's event loop against the budget's relay (null when no client called
   * for it): for tests and diagnostics, as the relay is not thread-safe.
   */
  public <T> Future<T> inspect(String budget, java.util.function.Function<BudgetRelay, T> query) {
    Promise<T> p = Promise.promise();
    context.runOnContext(v -> p.complete(query.apply(budgets.relay(budget))));
    return p.future();
  }

  /** Calls to Redis sent so far and, of them, those that failed or timed out (on the relay's loop). */
  public Future<long[]> upstreamCounts() {
    Promise<long[]> p = Promise.promise();
    context.runOnContext(v -> p.complete(new long[] {budgets.upstreamCalls(), budgets.upstreamFailures()}));
    return p.future();
  }

  /**
   * Calls refused since the start because their script was not this relay's budget.lua: clients of
   * another SDK version (logged at most once a minute; docs/RELAY.md, "Upgrading").
   */
  public Future<Long> refusedScripts() {
    Promise<Long> p = Promise.promise();
    context.runOnContext(v -> p.complete(foreign.refused()));
    return p.future();
  }

  @Override
  public Future<?> stop() {
    vertx.cancelTimer(tickTimer);
    vertx.cancelTimer(sweepTimer);
    return server == null ? Future.succeededFuture() : server.close();
  }

  /** Undeploys the relay: it stops listening and its timers stop (the store stays the caller's). */
  public Future<Void> close() {
    return vertx.undeploy(deploymentID());
  }
}
