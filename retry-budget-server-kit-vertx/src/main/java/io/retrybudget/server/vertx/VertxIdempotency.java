package io.retrybudget.server.vertx;

import io.retrybudget.server.IdempotencyContext;
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
 * context. The guard renews the claim while the handler's future runs (at most {@link
 * io.retrybudget.server.IdempotencyConfig#maxHold()}); past {@link
 * io.retrybudget.server.IdempotencyConfig#handlerTimeout()} the request is answered 503
 * {@code urn:retrybudget:problem:handler-timeout} while the claim is kept (duplicates get 409) and
 * the late answer is still stored and replayed. The handler finds its fencing token with {@link
 * #context(RoutingContext)}.
 *
 * <pre>{@code
 * router.post("/payments").handler(BodyHandler.create().setBodyLimit(64 * 1024));
 * router.post("/payments").handler(VertxIdempotency.handler(guard, ctx -> charge(ctx)));
 * }</pre>
 */
public final class VertxIdempotency {
  private static final System.Logger LOG = System.getLogger(VertxIdempotency.class.getName());

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
          LOG.log(System.Logger.Level.ERROR, () -> "VertxIdempotency on " + ctx.request().method() + " " + ctx.request().path()
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
        ctx.put(IdempotencyContext.ATTRIBUTE, execution.context());
        Future<StoredResponse> answer;
        try {
          answer = Objects.requireNonNull(app.apply(ctx), "the handler returned no future");
        } catch (RuntimeException e) {
          answer = Future.failedFuture(e);
        }
        // the guard runs the claim's lifecycle: the deadline, the renewals, the store; its reply
        // is what this client gets (the late answer of a timed-out handler is still stored)
        Future.fromCompletionStage(guard.handle(execution, answer.toCompletionStage()), context).onComplete(reply -> {
          if (reply.failed()) {
            ctx.fail(reply.cause());
          } else if (reply.result().failure() != null) {
            ctx.fail(reply.result().failure());
          } else {
            write(ctx.response(), reply.result().response());
          }
        });
      });
    };
  }

  /**
   * The idempotency context of the request being handled (its fencing token): {@link
   * IdempotencyContext#UNGUARDED} outside a guarded execution.
   */
  public static IdempotencyContext context(RoutingContext ctx) {
    IdempotencyContext c = ctx.get(IdempotencyContext.ATTRIBUTE);
    return c != null ? c : IdempotencyContext.UNGUARDED;
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
