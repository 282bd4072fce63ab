package io.retrybudget.server.vertx;

import io.retrybudget.server.TieGuard;
import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.ext.web.RoutingContext;
import java.util.Objects;

/**
 * {@link TieGuard} as a Vert.x Web route handler, placed right before the handler that does the
 * work: a tied copy that lost answers at once; anything else goes on.
 */
public final class VertxTies {
  private VertxTies() {}

  public static Handler<RoutingContext> handler(TieGuard ties) {
    Objects.requireNonNull(ties, "ties must not be null");
    return ctx -> Future.fromCompletionStage(ties.begin(VertxIdempotency.view(ctx)), ctx.vertx().getOrCreateContext())
        .onComplete(d -> {
          if (d.succeeded() && d.result() == TieGuard.Decision.LOST) {
            VertxIdempotency.write(ctx.response(), TieGuard.lostAnswer());
          } else {
            ctx.next();
          }
        });
  }
}
