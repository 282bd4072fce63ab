package io.retrybudget.server.vertx;

import io.retrybudget.server.IdempotencyGuard;
import io.retrybudget.server.Problems;
import io.retrybudget.server.RequestView;
import io.retrybudget.server.StoredResponse;
import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.ext.web.RoutingContext;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;

/**
 * The Idempotency-Key store on a Vert.x Web route. The application's handler does not write the
 * response itself: it returns its answer as a {@link StoredResponse}, which this handler stores
 * (or not, as the outcome policy says) and sends. Put a {@code BodyHandler} (with a body limit)
 * before it on the route: without one, a guarded request is answered 500
 * {@code urn:retrybudget:problem:body-handler-missing} (logged once, SEVERE) rather than
 * fingerprinted without its body. Never blocks the event loop; every continuation runs on the request's
 * context. The guard renews the claim while the handler's future runs; past {@link
 * io.retrybudget.server.IdempotencyConfig#handlerTimeout()} the request is answered 503
 * {@code urn:retrybudget:problem:handler-timeout}, renewal stops and the claim holds until its lease
 * ends (not released: the work may still be going on); a late answer is still stored.
 *
 * <pre>{@code
 * router.post("/payments").handler(BodyHandler.create().setBodyLimit(64 * 1024));
 * router.post("/payments").handler(VertxIdempotency.handler(guard, ctx -> charge(ctx)));
 * }</pre>
 */
public final class VertxIdempotency {
  private static final java.util.logging.Logger LOG = java.util.logging.Logger.getLogger(VertxIdempotency.class.getName());

  private VertxIdempotency() {}

  public static Handler<RoutingContext> handler(IdempotencyGuard guard, Function<RoutingContext, Future<StoredResponse>> app) {
    Objects.requireNonNull(guard, "guard must not be null");
    Objects.requireNonNull(app, "app must not be null");
    AtomicBoolean warned = new AtomicBoolean();
    return ctx -> {
      if (!ctx.body().available()
          && guard.config().methods().contains(ctx.request().method().name().toUpperCase(java.util.Locale.ROOT))) {
        // without a BodyHandler the fingerprint would silently leave the body out (another body
        // under the same key would get the first answer's replay): refuse to guard
        if (warned.compareAndSet(false, true)) {
          LOG.severe("VertxIdempotency on " + ctx.request().method() + " " + ctx.request().path()
              + ": no BodyHandler ran before it on this route; every guarded request is answered 500 until one is added");
        }
        write(ctx.response(), Problems.of(500, "body-handler-missing", "Server misconfigured",
            "the idempotency guard needs the request body (no BodyHandler on this route)"));
        return;
      }
      var context = ctx.vertx().getOrCreateContext();
      Future.fromCompletionStage(guard.begin(view(ctx)), context).onComplete(begun -> {
        if (begun.failed()) {
          ctx.fail(begun.cause());
          return;
        }
        if (begun.result() instanceof IdempotencyGuard.Answer a) {
          write(ctx.response(), a.response());
          return;
        }
        IdempotencyGuard.Execution execution = ((IdempotencyGuard.Execute) begun.result()).execution();
        Future<StoredResponse> answer;
        try {
          answer = Objects.requireNonNull(app.apply(ctx), "the handler returned no future");
        } catch (RuntimeException e) {
          answer = Future.failedFuture(e);
        }
        // the handler's deadline: past it the request is answered 503 and the claim, no longer
        // renewed, holds until its lease ends (the handler may still be working)
        AtomicBoolean settled = new AtomicBoolean();
        long deadline = execution.guarded() ? ctx.vertx().setTimer(Math.max(1, guard.config().handlerTimeout().toMillis()), t -> {
          if (settled.compareAndSet(false, true)) {
            guard.timedOut(execution);
            write(ctx.response(), Problems.withPushback(Problems.of(503, "handler-timeout", "Handler timed out",
                "the request did not complete within its deadline; retry later with the same key"),
                guard.config().inProgressRetryAfter()));
          }
        }) : -1;
        answer.onComplete(done -> {
          boolean inTime = settled.compareAndSet(false, true);
          if (inTime && deadline >= 0) {
            ctx.vertx().cancelTimer(deadline);
          }
          // a late answer is still stored (or the claim released) so that a retry finds it
          if (done.failed()) {
            Future.fromCompletionStage(guard.abandon(execution), context).onComplete(x -> {
              if (inTime) {
                ctx.fail(done.cause());
              }
            });
          } else {
            Future.fromCompletionStage(guard.finish(execution, done.result()), context).onComplete(x -> {
              if (inTime) {
                write(ctx.response(), done.result());
              }
            });
          }
        });
      });
    };
  }

  /** Sends a stored answer (status, headers, body) unless the response has ended already. */
  public static void write(HttpServerResponse response, StoredResponse answer) {
    if (response.ended() || response.closed()) {
      return;
    }
    response.setStatusCode(answer.status());
    for (StoredResponse.Header h : answer.headers()) {
      response.headers().add(h.name(), h.value());
    }
    response.end(Buffer.buffer(answer.body()));
  }

  /** What the server kit reads of a Vert.x Web request. */
  public static RequestView view(RoutingContext ctx) {
    return new RequestView() {
      @Override
      public String method() {
        return ctx.request().method().name();
      }

      @Override
      public String route() {
        String path = ctx.currentRoute() == null ? null : ctx.currentRoute().getPath();
        return path != null ? path : "";
      }

      @Override
      public String target() {
        return ctx.request().uri();
      }

      @Override
      public String header(String name) {
        return ctx.request().getHeader(name);
      }

      @Override
      public java.util.List<String> headers(String name, int max) {
        if (max < 1) {
          throw new IllegalArgumentException("max must be >= 1, was " + max);
        }
        java.util.List<String> all = ctx.request().headers().getAll(name);
        return java.util.List.copyOf(all.size() <= max ? all : all.subList(all.size() - max, all.size()));
      }

      @Override
      public int headerLines(String name) {
        return ctx.request().headers().getAll(name).size();
      }

      @Override
      public String principal() {
        return ctx.user() == null ? null : ctx.user().subject();
      }

      @Override
      public byte[] body() {
        Buffer b = ctx.body() == null ? null : ctx.body().buffer();
        return b == null ? new byte[0] : b.getBytes();
      }
    };
  }
}
