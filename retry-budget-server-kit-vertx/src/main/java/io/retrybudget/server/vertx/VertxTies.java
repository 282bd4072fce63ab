package io.retrybudget.server.vertx;

import io.retrybudget.server.TieGuard;
import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.ext.web.RoutingContext;
import java.util.Objects;

/**
 * {@link TieGuard} as a Vert.x Web route handler, placed right before the handler that does the
 * work (and before the idempotency and admission handlers): a tied copy that lost answers at once;
 * a tied copy that runs gets {@code X-Tie-Won: true} on its answer; anything else goes on.
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
            if (ctx.request().getHeader(TieGuard.TIE_HEADER) != null) {
              ctx.response().putHeader(TieGuard.WON_HEADER, "true"); // this copy runs: its answer decides the call
            }
            ctx.next();
          }
        });
  }
}
