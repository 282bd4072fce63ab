package io.retrybudget.relay;

/**
 * The client's route across relays, Redis and its fallback: the SDK's
 * {@link io.retrybudget.budget.redis.transport.FailoverRoute} (the one policy, which
 * {@code RedisBudgetClient} runs), under the name this module gave it first. Every method forwards.
 */
public final class FailoverRoute {
  /** No way is open: the client's fallback decides. */
  public static final int NONE = io.retrybudget.budget.redis.transport.FailoverRoute.NONE;

  private final io.retrybudget.budget.redis.transport.FailoverRoute route;

  /** See {@link io.retrybudget.budget.redis.transport.FailoverRoute#FailoverRoute(int, long)}. */
  public FailoverRoute(int ways, long retryAfterMillis) {
    this.route = new io.retrybudget.budget.redis.transport.FailoverRoute(ways, retryAfterMillis);
  }

  /** The way to send a call at {@code now}: the most preferred one not passed over, else {@link #NONE}. */
  public int pick(long now) {
    return route.pick(now);
  }

  /** A call on way {@code way} failed at {@code now}: it is passed over until {@code now + retryAfterMillis}. */
  public void failed(int way, long now) {
    route.failed(way, now);
  }

  /** A call on way {@code way} was answered. */
  public void answered(int way) {
    route.answered(way);
  }

  /** The way picked last ({@link #NONE} when none was open). */
  public int current() {
    return route.current();
  }

  /** How many ways the route has. */
  public int ways() {
    return route.ways();
  }
}
