package io.retrybudget.server.vertx;

import io.retrybudget.server.AdmissionQueue;
import io.retrybudget.server.KeyLookup;
import io.retrybudget.server.RequestView;
import io.retrybudget.server.RetryAwareAdmission;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.ext.web.RoutingContext;
import java.util.Objects;
import java.util.function.Function;

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
 *
 * <p>On a plain Vert.x HTTP server (no router), {@link #requestHandler} runs a function that
 * returns when the work is done.
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

  /**
   * For a plain Vert.x HTTP server ({@code vertx.createHttpServer().requestHandler(...)}): each
   * request waits in the queue, then {@code work} runs it and writes its response; the worker is
   * released when the future {@code work} returns completes (or fails, or {@code work} throws).
   * The request is paused while it waits and resumed right after {@code work} is called, so read
   * the body in {@code work}'s synchronous part ({@code req.body()}). While the request waits the
   * adapter owns the response's close handler (a client that leaves takes its request out of the
   * queue); it is cleared before {@code work} runs. Replays are not told apart here (no key
   * lookup): put the idempotency guard's own replay path in front if you need it.
   *
   * <pre>{@code
   * vertx.createHttpServer().requestHandler(VertxQueueAdmission.requestHandler(queue,
   *     req -> vertx.timer(10).compose(v -> req.response().end("done")))).listen(8080);
   * }</pre>
   */
  public static Handler<HttpServerRequest> requestHandler(AdmissionQueue queue,
      Function<HttpServerRequest, Future<?>> work) {
    Objects.requireNonNull(queue, "queue must not be null");
    Objects.requireNonNull(work, "work must not be null");
    return req -> {
      long received = queue.nanoTime();
      int attempt = RetryAwareAdmission.attemptOf(req.getHeader(RetryAwareAdmission.ATTEMPT_HEADER));
      long deadline = queue.deadlineMillis(new PlainView(req));
      Context context = Vertx.currentContext();
      req.pause();
      boolean[] decided = {false};
      boolean[] submitting = {true};
      AdmissionQueue.Ticket[] ticket = {null};
      AdmissionQueue.Waiter waiter = new AdmissionQueue.Waiter() {
        @Override
        public void start(AdmissionQueue.Permit permit) {
          run(context, submitting[0], () -> {
            decided[0] = true;
            if (req.response().closed()) {
              permit.release();
              return;
            }
            req.response().closeHandler(null);
            Future<?> done;
            try {
              done = work.apply(req);
            } catch (RuntimeException e) {
              permit.release();
              req.resume();
              throw e;
            }
            req.resume();
            if (done == null) {
              permit.release();
            } else {
              done.onComplete(r -> permit.release());
            }
          });
        }

        @Override
        public void reject(AdmissionQueue.Rejection rejection) {
          run(context, submitting[0], () -> {
            decided[0] = true;
            VertxIdempotency.write(req.response(), rejection.answer());
          });
        }
      };
      req.response().closeHandler(v -> {
        if (!decided[0] && ticket[0] != null) {
          ticket[0].cancel(); // the client left while its request waited
        }
      });
      try {
        ticket[0] = queue.submit(attempt, deadline, received, waiter);
      } finally {
        submitting[0] = false;
      }
    };
  }

  /** As {@code Slot.onContext}: at once only when decided on arrival, on the request's context. */
  private static void run(Context context, boolean onArrival, Runnable r) {
    if (context == null || (onArrival && Vertx.currentContext() == context)) {
      r.run();
    } else {
      context.runOnContext(v -> r.run());
    }
  }

  /** The headers the queue reads of a plain request. */
  private record PlainView(HttpServerRequest req) implements RequestView {
    @Override
    public String method() {
      return req.method().name();
    }

    @Override
    public String route() {
      return "";
    }

    @Override
    public String target() {
      return req.uri();
    }

    @Override
    public String header(String name) {
      return req.getHeader(name);
    }

    @Override
    public java.util.List<String> headers(String name, int max) {
      if (max < 1) {
        throw new IllegalArgumentException("max must be >= 1, was " + max);
      }
      java.util.List<String> all = req.headers().getAll(name);
      return java.util.List.copyOf(all.size() <= max ? all : all.subList(all.size() - max, all.size()));
    }

    @Override
    public byte[] body() {
      return new byte[0];
    }
  }

  /** One request's place: its decision is acted on on the request's context, where its end is seen too. */
  private static final class Slot implements AdmissionQueue.Waiter {
    private final RoutingContext ctx;
    private final Context context;
    private AdmissionQueue.Ticket ticket; // on the context only
    private AdmissionQueue.Permit permit;
    private boolean ended;
    private boolean submitting;

    Slot(RoutingContext ctx, Context context) {
      this.ctx = ctx;
      this.context = context;
    }

    void submit(AdmissionQueue queue, int attempt, long deadline, long received) {
      ctx.addEndHandler(done -> ended());
      submitting = true;
      AdmissionQueue.Ticket t;
      try {
        t = queue.submit(attempt, deadline, received, this);
      } finally {
        submitting = false;
      }
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

    /**
     * Decided on arrival: at once. Decided later (another request's release, the timer): on the
     * request's context, as a task of its own — never inside the releasing request's end, which
     * would nest one handler in the other for every request in the queue.
     */
    private void onContext(Runnable r) {
      if (submitting && Vertx.currentContext() == context) {
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
