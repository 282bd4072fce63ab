package io.retrybudget.bench.relay;

import io.retrybudget.budget.VirtualFleet;
import io.retrybudget.budget.VirtualRedis;
import io.retrybudget.budget.WheelTime;
import io.retrybudget.budget.redis.protocol.BudgetCall;
import io.retrybudget.budget.redis.protocol.BudgetReply;
import io.retrybudget.budget.redis.protocol.ClientSequence;
import io.retrybudget.relay.FailoverRoute;
import java.net.ConnectException;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.IntSupplier;

/**
 * One client process's way to its budget: its home relay, then the next relay, then Redis directly
 * ({@link FailoverRoute}); with none open a call fails at once and the engine's fallback decides. Each
 * client's reports are numbered here (per client id, strictly increasing across relays), so a relay
 * applies each at most once; a call that failed is never sent again on another way.
 */
final class RoutedPort implements VirtualFleet.Upstream {
  static final long RETRY_AFTER_MILLIS = 1_000;
  private final WheelTime time;
  private final VirtualRelay[] relays; // in the route's order; empty: Redis directly only
  private final VirtualRedis redis;
  private final boolean direct;
  private final IntSupplier second;
  private final FailoverRoute route;
  private final Map<String, long[]> numbers = new HashMap<>();
  private Map<String, Long> answeredSince; // client id -> its first call answered since watch(), or null
  private long watchFrom;
  long permitCalls; // calls with need > 0, sent on any way
  long redisPermitCalls; // of those, sent to Redis directly
  long lostRequests; // first attempts of calls that failed

  /** {@code relays} in order of preference; {@code direct}: Redis is the last way. */
  RoutedPort(WheelTime time, VirtualRelay[] relays, VirtualRedis redis, boolean direct, IntSupplier second) {
    this.time = time;
    this.relays = relays;
    this.redis = redis;
    this.direct = direct;
    this.second = second;
    this.route = new FailoverRoute(relays.length + (direct ? 1 : 0), RETRY_AFTER_MILLIS);
  }

  @Override
  public CompletableFuture<BudgetReply> budget(BudgetCall call, ClientSequence sequence) {
    return call(call, sequence).reply();
  }

  /** As {@link #budget}; a relay's reply says so (the engine then decides its storm's asks ahead). */
  @Override
  public VirtualFleet.Answer call(BudgetCall call, ClientSequence sequence) {
    long now = time.millis();
    int way = route.pick(now);
    if (way == FailoverRoute.NONE) {
      lostRequests += call.requests();
      return new VirtualFleet.Answer(CompletableFuture.failedFuture(new ConnectException("no relay and no Redis")), false);
    }
    if (call.need() > 0) {
      permitCalls++;
    }
    if (way == relays.length) {
      if (call.need() > 0) {
        redisPermitCalls++;
      }
      route.answered(way);
      answered(sequence.clientId(), now);
      return new VirtualFleet.Answer(redis.budget(call, sequence), false);
    }
    long seq = ++numbers.computeIfAbsent(sequence.clientId(), id -> new long[1])[0];
    CompletableFuture<BudgetReply> reply = relays[way].call(sequence.clientId(), seq, call, second.getAsInt());
    if (reply.isCompletedExceptionally()) {
      lostRequests += call.requests();
      route.failed(way, now);
    } else {
      route.answered(way);
      answered(sequence.clientId(), now);
    }
    return new VirtualFleet.Answer(reply, true);
  }

  /** From {@code now} on, notes when each client's first call is answered. */
  void watch(long now) {
    watchFrom = now;
    answeredSince = new HashMap<>();
  }

  /** When client {@code clientId}'s first call since {@link #watch} was answered, or -1. */
  long answeredSince(String clientId) {
    Long at = answeredSince == null ? null : answeredSince.get(clientId);
    return at == null ? -1 : at;
  }

  private void answered(String clientId, long now) {
    if (answeredSince != null && now >= watchFrom) {
      answeredSince.putIfAbsent(clientId, now);
    }
  }

  /** The way the last call took (the relay's index in the route, its length for Redis, -1 none). */
  int currentWay() {
    return route.current();
  }
}
