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
 * request instead.
 */
final class Backend extends VerticleBase {
  private final int port;
  private final Params params;
  private final Scenario scenario;
  private final Function<RetryScheduler, Admission> admissions;
  private final PerSecond stats;
  private ServerCore core;
  private HttpServer server;

  /** Listens at once; serves from {@link #begin} on (answers 503 before). */
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
    return server.requestHandler(this::handle).listen();
  }

  /** The run's clock starts at {@code startMillis} (epoch millis): builds the core on this verticle's loop. */
  void begin(long startMillis) {
    context.runOnContext(v -> core = newCore(startMillis));
  }

  private ServerCore newCore(long startMillis) {
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
    }, startMillis, m -> scenario.serviceMillis(params.serviceMillis(), m), stats);
  }

  private void handle(HttpServerRequest request) {
    if (core == null) {
      request.response().setStatusCode(503).end();
      return;
    }
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
        request.response().setStatusCode(status).end();
      }
    }));
  }

  @Override
  public Future<?> stop() {
    return server == null ? Future.succeededFuture() : server.close();
  }
}
