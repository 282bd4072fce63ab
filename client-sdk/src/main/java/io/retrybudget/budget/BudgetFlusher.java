package io.retrybudget.budget;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongSupplier;

/**
 * A budget's timer task: sends its pending counts when {@link FlushSchedule} says one is due, one at a
 * time; while the budget is SLOW or DEGRADED the same call is the probe that ends that state. An idle
 * healthy budget costs Redis nothing. Never throws: a failure is told to the {@link HealthTracker}.
 */
final class BudgetFlusher {
  private static final CompletableFuture<Void> DONE = CompletableFuture.completedFuture(null);
  private final EngineSettings settings;
  private final FleetRegistry fleet;
  private final FlushSchedule schedule;
  private final BudgetLink link;
  private final LocalFallback own;
  private final PendingCounts pending;
  private final HealthTracker health;
  private final AtomicBoolean inFlight = new AtomicBoolean();

  BudgetFlusher(EngineSettings settings, FleetRegistry fleet, FlushSchedule schedule, BudgetLink link, LocalFallback own,
      PendingCounts pending, HealthTracker health) {
    this.settings = settings;
    this.fleet = fleet;
    this.schedule = schedule;
    this.link = link;
    this.own = own;
    this.pending = pending;
    this.health = health;
  }

  /** Sends the pending counts if a flush is due ({@code evenIfIdle}: a hello or a probe, counts or not). */
  CompletableFuture<Void> flush(boolean evenIfIdle) {
    LongSupplier clock = settings.clock();
    FleetRegistry.Port port = fleet.port();
    long now = clock.getAsLong();
    if (port == null) {
      // never connected: keep the own window current so the fallback sees a window, not a backlog
      own.take(now, link.learned());
      return DONE;
    }
    FlushSchedule.Due due = schedule.due(now, evenIfIdle, link.learned());
    if (due == FlushSchedule.Due.NOT_YET || !inFlight.compareAndSet(false, true)) {
      return DONE;
    }
    try {
      if (due != FlushSchedule.Due.HELLO && health.state().asksRedis() && !pending.any() && !link.holdsDoubt()) {
        inFlight.set(false);
        return DONE; // an idle healthy client costs Redis nothing
      }
      CompletableFuture<Void> done = new CompletableFuture<>();
      // the timeout on a copy: a reply after it still teaches the fleet size and the configuration
      // (timing out the call itself would drop them, and an overloaded fleet would never learn N)
      settings.timer().within(link.call(port, now, 0, 0), settings.flushTimeoutMillis())
          .whenComplete((reply, error) -> {
            if (error != null) {
              health.failure(error);
            } else if (reply.applied()) {
              health.on(clock.getAsLong() - now <= settings.callTimeoutMillis() ? RedisHealth.Event.REPLY_IN_TIME
                  : RedisHealth.Event.REPLY_LATE, null);
            }
            inFlight.set(false);
            done.complete(null);
          });
      return done;
    } catch (RuntimeException e) {
      health.failure(e);
      inFlight.set(false);
      return DONE;
    }
  }
}
