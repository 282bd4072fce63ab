package io.retrybudget.server.vertx;

import io.retrybudget.server.AdmissionQueue;
import io.retrybudget.server.KeyLookup;
import io.retrybudget.server.RequestView;
import io.retrybudget.server.RetryAwareAdmission;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.Vertx;
import io.vertx.ext.web.RoutingContext;
import java.util.Objects;

/**
 * {@link AdmissionQueue} as the first handler of a Vert.x Web route: a request runs the rest of the
 * route ({@code ctx.next()}) once it holds a worker, and the worker is released when its response
 * ends (or its connection is lost). A request that waits holds nothing but its place in the queue:
 * it is paused (a {@code BodyHandler} after this one still gets the body) and no event loop is
 * blocked. A request whose deadline passes while it waits is answered 504 do-not-retry at once, one
 * that waits too long or finds the queue full 503 with a spread pushback; the rest of the route
 * never runs for either. A client that goes away while its request waits takes it out of the queue.
 *
 * <pre>{@code
 * AdmissionQueue queue = AdmissionQueue.builder(QueueConfig.builder(8).maxQueue(64).build()).build();
 * router.route("/work").handler(VertxQueueAdmission.handler(queue));
 * router.route("/work").handler(ctx -> work(ctx));      // at most 8 at a time
 * }</pre>
 */
public final class VertxQueueAdmission {
  private VertxQueueAdmission() {}

  public static Handler<RoutingContext> handler(AdmissionQueue queue) {
    return handler(queue, null);
  }

  /**
   * As {@link #handler(AdmissionQueue)}; with a {@link KeyLookup} (or null for none), a request with
   * an idempotency key that would have to wait is looked up in the store first: a stored answer is
   * a replay, which runs no handler, so it bypasses the queue and is never shed; a claimed key makes
   * the request a retry. Nothing is looked up while a worker is free. Authenticate before this
   * handler when keys are scoped by principal.
   */
  public static Handler<RoutingContext> handler(AdmissionQueue queue, KeyLookup lookup) {
    Objects.requireNonNull(queue, "queue must not be null");
    return ctx -> {
      long received = queue.nanoTime();
      RequestView view = VertxIdempotency.view(ctx);
      int attempt = RetryAwareAdmission.attemptOf(ctx.request().getHeader(RetryAwareAdmission.ATTEMPT_HEADER));
      long deadline = queue.deadlineMillis(view);
      Context context = ctx.vertx().getOrCreateContext();
      ctx.request().pause(); // the body waits for the BodyHandler after this one
      if (lookup != null && lookup.applies(view) && queue.saturated()) {
        Future.fromCompletionStage(lookup.lookup(view), context).onComplete(seen -> {
          KeyLookup.Seen s = seen.succeeded() ? seen.result() : KeyLookup.Seen.NONE;
          if (s == KeyLookup.Seen.STORED) {
            queue.replayAdmitted();
            ctx.request().resume();
            ctx.next();
          } else {
            new Slot(ctx, context).submit(queue, s == KeyLookup.Seen.IN_PROGRESS ? Math.max(2, attempt) : attempt,
                deadline, received);
          }
        });
        return;
      }
      new Slot(ctx, context).submit(queue, attempt, deadline, received);
    };
  }

  /** One request's place: its decision is acted on on the request's context, where its end is seen too. */
  private static final class Slot implements AdmissionQueue.Waiter {
    private final RoutingContext ctx;
    private final Context context;
    private AdmissionQueue.Ticket ticket; // on the context only
    private AdmissionQueue.Permit permit;
    private boolean ended;

    Slot(RoutingContext ctx, Context context) {
      this.ctx = ctx;
      this.context = context;
    }

    void submit(AdmissionQueue queue, int attempt, long deadline, long received) {
      ctx.addEndHandler(done -> ended());
      AdmissionQueue.Ticket t = queue.submit(attempt, deadline, received, this);
      if (!ended) {
        ticket = t;
      }
    }

    private void ended() {
      ended = true;
      if (permit != null) {
        permit.release();
      } else if (ticket != null) {
        ticket.cancel(); // the client left while its request waited
      }
    }

    private void onContext(Runnable r) {
      if (Vertx.currentContext() == context) {
        r.run();
      } else {
        context.runOnContext(v -> r.run());
      }
    }

    @Override
    public void start(AdmissionQueue.Permit p) {
      onContext(() -> {
        if (ended || ctx.response().closed()) {
          p.release();
          return;
        }
        permit = p;
        ctx.request().resume();
        ctx.next();
      });
    }

    @Override
    public void reject(AdmissionQueue.Rejection rejection) {
      onContext(() -> VertxIdempotency.write(ctx.response(), rejection.answer()));
    }
  }
}
