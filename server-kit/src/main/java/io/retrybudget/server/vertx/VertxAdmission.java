package io.retrybudget.server.vertx;

import io.retrybudget.server.RetryAwareAdmission;
import io.vertx.core.Handler;
import io.vertx.ext.web.RoutingContext;
import java.util.Objects;
import java.util.Optional;

/**
 * {@link RetryAwareAdmission} as the first handler of a Vert.x Web route (before body handling, so
 * a shed request costs nothing more): sheds with 503 and pushback, or admits and reports the
 * outcome when the response ends (2xx-4xx success, 5xx ignored, a connection lost dropped).
 */
public final class VertxAdmission {
  private VertxAdmission() {}

  public static Handler<RoutingContext> handler(RetryAwareAdmission admission) {
    Objects.requireNonNull(admission, "admission must not be null");
    return ctx -> {
      int attempt = RetryAwareAdmission.attemptOf(ctx.request().getHeader(RetryAwareAdmission.ATTEMPT_HEADER));
      Optional<RetryAwareAdmission.Permit> permit = admission.tryAcquire(attempt);
      if (permit.isEmpty()) {
        VertxIdempotency.write(ctx.response(), admission.shedAnswer());
        return;
      }
      RetryAwareAdmission.Permit p = permit.get();
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
    };
  }
}
