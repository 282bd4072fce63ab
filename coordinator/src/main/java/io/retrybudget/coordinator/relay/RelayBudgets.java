package io.retrybudget.coordinator.relay;

import io.retrybudget.budget.redis.protocol.BudgetCall;
import io.retrybudget.budget.redis.protocol.BudgetReply;
import io.retrybudget.budget.redis.protocol.BudgetScripts;
import io.retrybudget.relay.BudgetRelay;
import io.retrybudget.relay.RelaySettings;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.function.DoubleSupplier;
import java.util.function.Function;
import java.util.function.LongSupplier;

/**
 * The budgets of one relay host, each a {@link BudgetRelay}, all run on one thread (the host's event
 * loop): clients' calls are answered at once from what the relay holds; {@link #tick} sends each
 * budget's call to Redis when one is due (at most one in flight per budget) and its answer comes back
 * through {@code loop}, the same thread. Nothing here blocks: the upstream is a future.
 */
final class RelayBudgets implements RelaySession.Budgets {
  private final Map<String, BudgetRelay> relays = new LinkedHashMap<>();
  private final RelaySettings settings;
  private final int maxBudgets;
  private final LongSupplier clock;
  private final DoubleSupplier random;
  private final Function<BudgetCall, CompletableFuture<BudgetReply>> upstream;
  private final Executor loop;
  private long upstreamCalls;
  private long upstreamFailures;

  /**
   * {@code upstream} sends one budget.lua call of the relay's own to Redis (its own timeout included);
   * {@code loop} runs a task on the thread that runs this object.
   */
  RelayBudgets(RelaySettings settings, int maxBudgets, LongSupplier clock, DoubleSupplier random,
      Function<BudgetCall, CompletableFuture<BudgetReply>> upstream, Executor loop) {
    this.settings = settings;
    this.maxBudgets = maxBudgets;
    this.clock = clock;
    this.random = random;
    this.upstream = upstream;
    this.loop = loop;
  }

  @Override
  public BudgetReply call(RelayCall call) {
    String name = call.call().name();
    BudgetRelay relay = relays.get(name);
    if (relay == null) {
      if (relays.size() >= maxBudgets) {
        throw new IllegalStateException("this relay serves at most " + maxBudgets + " budgets");
      }
      relay = new BudgetRelay(name, settings, random);
      relays.put(name, relay);
    }
    long now = clock.getAsLong();
    BudgetReply reply = relay.client(call.clientId(), call.seq(), call.call(), now);
    send(relay, now); // the first client's call is due at once: Redis hears of the budget without a tick's wait
    return reply;
  }

  /** Sends every budget's call to Redis that is due now. */
  void tick() {
    long now = clock.getAsLong();
    for (BudgetRelay relay : relays.values()) {
      send(relay, now);
    }
  }

  /** Forgets clients quiet for two fleet epochs in every budget. */
  void sweep() {
    long now = clock.getAsLong();
    for (BudgetRelay relay : relays.values()) {
      relay.sweep(now);
    }
  }

  private void send(BudgetRelay relay, long now) {
    BudgetCall up = relay.upstreamCall(now);
    if (up == null) {
      return;
    }
    upstreamCalls++;
    CompletableFuture<BudgetReply> sent;
    try {
      sent = upstream.apply(up);
    } catch (RuntimeException e) {
      sent = CompletableFuture.failedFuture(e);
    }
    sent.whenComplete((reply, error) -> loop.execute(() -> {
      long t = clock.getAsLong();
      if (error != null) {
        upstreamFailures++;
        if (BudgetScripts.neverRun(error)) {
          relay.upstreamRefused(up, t); // refused unwritten: its counts go with the next call
        } else {
          relay.upstreamFailed(up, t);
        }
      } else {
        relay.upstreamReplied(up, reply, t);
      }
    }));
  }

  /** The budget's relay, or null when no client has called for it. */
  BudgetRelay relay(String name) {
    return relays.get(name);
  }

  int size() {
    return relays.size();
  }

  long upstreamCalls() {
    return upstreamCalls;
  }

  long upstreamFailures() {
    return upstreamFailures;
  }
}
