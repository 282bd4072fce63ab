package io.retrybudget.bench.metastable;

import io.retrybudget.retry.RetryScheduler;
import io.retrybudget.retry.http.HttpRetryRules;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.HttpServerRequest;
import java.util.function.Function;

/**
 * One arm's backend: a real Vert.x HTTP server in front of a {@link ServerCore} (K workers, service
 * time S by a timer, the {@link Admission} the {@code admissions} function makes, given a scheduler
 * on this verticle's event loop). Deployed as its own verticle, so its requests and timers all run
 * on one event loop and the core needs no lock; nothing blocks that loop. A request's deadline is
 * its arrival plus {@code X-Request-Deadline-Ms} (the client's attempt timeout): the FIFO queue
 * reads it only to count the work served after it as wasted, server-kit's queue to drop the
 * request instead. Every answer carries the backend's clock in {@code X-Answered-Ms}.
 *
 * <p>Until {@link #begin} it serves with the base service time into a table nobody reads, so that
 * the fleet's warm-up runs the real code paths (the JIT compiles them before the clock starts). A
 * 10 ms probe timer on the same event loop records how late the loop runs it ({@code lag_max}).
 */
final class Backend extends VerticleBase {
  /** The lag probe timer's period, milliseconds. */
  static final long PROBE_MILLIS = 10;

  private final int port;
  private final Params params;
  private final Scenario scenario;
  private final Function<RetryScheduler, Admission> admissions;
  private final PerSecond stats;
  private ServerCore core;
  private HttpServer server;
  private long startMillis = Long.MAX_VALUE;
  private long probeMillis;

  /** Listens at once; serves the warm-up until {@link #begin}, then the run. */
  Backend(int port, Params params, Scenario scenario, Function<RetryScheduler, Admission> admissions,
      PerSecond stats) {
    this.port = port;
    this.params = params;
    this.scenario = scenario;
    this.admissions = admissions;
    this.stats = stats;
  }

  @Override
  public Future<?> start() {
    server = vertx.createHttpServer(new HttpServerOptions().setHost("127.0.0.1").setPort(port)
        .setIdleTimeout(60).setTcpNoDelay(true).setAcceptBacklog(4096));
    core = newCore(System.currentTimeMillis(), m -> params.serviceMillis(),
        new PerSecond(1, ServerCore.COLUMNS));
    probeMillis = System.currentTimeMillis();
    int lag = stats.column("lag_max");
    vertx.setPeriodic(PROBE_MILLIS, id -> {
      long now = System.currentTimeMillis();
      if (now >= startMillis) {
        stats.max((int) Math.min(Integer.MAX_VALUE, (now - startMillis) / 1000), lag,
            Math.max(0, now - probeMillis - PROBE_MILLIS));
      }
      probeMillis = now;
    });
    return server.requestHandler(this::handle).listen();
  }

  /** The run's clock starts at {@code startMillis} (epoch millis): builds the core on this verticle's loop. */
  void begin(long startMillis) {
    context.runOnContext(v -> {
      this.startMillis = startMillis;
      core = newCore(startMillis, m -> scenario.serviceMillis(params.serviceMillis(), m), stats);
    });
  }

  private ServerCore newCore(long startMillis, java.util.function.LongToDoubleFunction serviceMillisAt,
      PerSecond table) {
    // timers set on this verticle's loop fire on it: the admission's expiry runs where requests do
    RetryScheduler onLoop = (task, delayNanos) -> {
      long id = vertx.setTimer(Math.max(1, delayNanos / 1_000_000 + (delayNanos % 1_000_000 == 0 ? 0 : 1)),
          t -> task.run());
      return () -> vertx.cancelTimer(id);
    };
    return new ServerCore(admissions.apply(onLoop), new ServerCore.Timers() {
      @Override
      public long nowMillis() {
        return System.currentTimeMillis();
      }

      @Override
      public void after(long delayMillis, Runnable task) {
        vertx.setTimer(delayMillis, id -> task.run());
      }
    }, startMillis, serviceMillisAt, table);
  }

  private void handle(HttpServerRequest request) {
    long now = System.currentTimeMillis();
    long deadline = Long.MAX_VALUE;
    String left = request.getHeader(HttpRetryRules.DEADLINE_HEADER);
    if (left != null) {
      try {
        deadline = now + Math.max(0, Long.parseLong(left.trim()));
      } catch (NumberFormatException e) {
        request.response().setStatusCode(400).end();
        return;
      }
    }
    int attempt = 1;
    String a = request.getHeader("X-Retry-Attempt");
    if (a != null && a.trim().matches("[0-9]{1,3}")) {
      attempt = Integer.parseInt(a.trim());
    }
    core.arrive(new Job(now, deadline, attempt, (status, headers) -> {
      if (!request.response().closed()) {
        headers.forEach(request.response()::putHeader);
        request.response().putHeader(CallStats.ANSWERED_HEADER, Long.toString(System.currentTimeMillis()));
        request.response().setStatusCode(status).end();
      }
    }));
  }

  @Override
  public Future<?> stop() {
    return server == null ? Future.succeededFuture() : server.close();
  }
}
