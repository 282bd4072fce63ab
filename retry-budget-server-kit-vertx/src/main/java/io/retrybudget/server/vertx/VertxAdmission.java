package io.retrybudget.server.vertx;

import io.retrybudget.server.KeyLookup;
import io.retrybudget.server.RequestView;
import io.retrybudget.server.RetryAwareAdmission;
import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.ext.web.RoutingContext;
import java.util.Objects;
import java.util.Optional;

/**
 * {@link RetryAwareAdmission} as the first handler of a Vert.x Web route (before body handling, so
 * a shed request costs nothing more): sheds with 503 and pushback, or admits and reports the
 * outcome when the response ends (2xx-4xx success, 5xx ignored, a connection lost dropped).
 * With a {@link KeyLookup}, a request with an idempotency key that would be shed is looked up
 * first (the request paused meanwhile, so a {@code BodyHandler} after this one still gets the
 * body): a stored answer is a replay and goes on to the guard, a claimed key makes it a retry.
 */
public final class VertxAdmission {
  private VertxAdmission() {}

  public static Handler<RoutingContext> handler(RetryAwareAdmission admission) {
    Objects.requireNonNull(admission, "admission must not be null");
    return handler(admission, null);
  }

  /**
   * As {@link #handler(RetryAwareAdmission)}; a keyed request is looked up in the store before it
   * is shed. Authenticate before this handler when keys are scoped by principal, so that the
   * lookup sees the caller the guard will see.
   */
  public static Handler<RoutingContext> handler(RetryAwareAdmission admission, KeyLookup lookup) {
    Objects.requireNonNull(admission, "admission must not be null");
    return ctx -> {
      int attempt = RetryAwareAdmission.attemptOf(ctx.request().getHeader(RetryAwareAdmission.ATTEMPT_HEADER));
      RequestView view = lookup == null ? null : VertxIdempotency.view(ctx);
      boolean keyed = view != null && lookup.applies(view);
      Optional<RetryAwareAdmission.Permit> permit = keyed ? admission.tryAcquireBeforeLookup(attempt)
          : admission.tryAcquire(attempt);
      if (permit.isPresent()) {
        proceed(ctx, permit.get());
        return;
      }
      if (!keyed) {
        VertxIdempotency.write(ctx.response(), admission.shedAnswer());
        return;
      }
      ctx.request().pause(); // the body waits for the BodyHandler after this one
      Future.fromCompletionStage(lookup.lookup(view), ctx.vertx().getOrCreateContext()).onComplete(seen -> {
        Optional<RetryAwareAdmission.Permit> decided =
            admission.tryAcquire(attempt, seen.succeeded() ? seen.result() : KeyLookup.Seen.NONE);
        ctx.request().resume();
        if (decided.isEmpty()) {
          VertxIdempotency.write(ctx.response(), admission.shedAnswer());
        } else {
          proceed(ctx, decided.get());
        }
      });
    };
  }

  private static void proceed(RoutingContext ctx, RetryAwareAdmission.Permit p) {
    ctx.addEndHandler(ended -> {
      if (ended.failed()) {
        p.onDropped();
      } else if (ctx.response().getStatusCode() >= 500) {
        p.onIgnore();
      } else {
        p.onSuccess();
      }
    });
    ctx.next();
  }
}
