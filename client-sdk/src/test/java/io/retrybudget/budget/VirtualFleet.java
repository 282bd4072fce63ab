package io.retrybudget.budget;

import io.retrybudget.budget.redis.protocol.BudgetCall;
import io.retrybudget.budget.redis.protocol.BudgetReply;
import io.retrybudget.budget.redis.protocol.ClientSequence;
import java.util.concurrent.CompletableFuture;
import java.util.function.DoubleSupplier;
import java.util.function.Supplier;

/**
 * The SDK's real budget engine ({@link RedisRetryBudget}) for experiments outside this package: a
 * fleet of clients on a {@link WheelTime}, grouped in processes as {@link RedisBudgetClient}s group
 * them (each process knows its own budgets of a name, {@link ProcessFleets}), each process sending its
 * budget calls where its {@link Upstream} says: a {@link VirtualRedis}, or a relay. The engine is the
 * one the SDK runs, with the client's defaults (flush every 500 ms, stretched to at most 10 s, a
 * refusal reused at least 100 ms, the LOCAL fallback sharing the floor).
 */
public final class VirtualFleet {
  /** Where one process sends its budgets' calls: budget.lua's call and reply, numbered per client by {@code sequence}. */
  public interface Upstream {
    CompletableFuture<BudgetReply> budget(BudgetCall call, ClientSequence sequence);

    /**
     * As {@link #budget}, saying whether a relay took the call (its reply then counts as a relay's, as
     * one with a relay's tag does: the engine decides ahead, {@link AskAhead}). This default: never.
     */
    default Answer call(BudgetCall call, ClientSequence sequence) {
      return new Answer(budget(call, sequence), false);
    }
  }

  /** A call's reply, and whether a relay took it. */
  public record Answer(CompletableFuture<BudgetReply> reply, boolean relay) {}

  /** What a relay's reply carries for the engine here: one relay, every batch settled at once. */
  private static final io.retrybudget.budget.redis.protocol.RelayTag TAG =
      new io.retrybudget.budget.redis.protocol.RelayTag("virtual-relay", 1, 1, true);

  private final EngineSettings settings;

  /** Engines with a {@code callTimeoutMillis} budget-call timeout and {@code random} for their phases and sampling. */
  public VirtualFleet(WheelTime time, long callTimeoutMillis, DoubleSupplier random) {
    this.settings = new EngineSettings(callTimeoutMillis, 500, 10_000, 100, FallbackPolicy.LOCAL, true, time::millis,
        random, time);
  }

  /** How long a flush waits for its reply (the engine's flush timeout). */
  public long flushTimeoutMillis() {
    return settings.flushTimeoutMillis();
  }

  /** A new process whose budgets send their calls to {@code upstream}. */
  public Process process(Upstream upstream) {
    return new Process(upstream);
  }

  /** One process: its budgets, what it knows of their fleets, its way to Redis or a relay. */
  public final class Process implements FleetRegistry {
    private final ProcessFleets fleets = new ProcessFleets();
    private final Upstream upstream;
    private final FleetRegistry.Port port;

    private Process(Upstream upstream) {
      this.upstream = upstream;
      this.port = new FleetRegistry.Port() {
        @Override
        public CompletableFuture<BudgetReply> budget(BudgetCall call, ClientSequence sequence) {
          return upstream.budget(call, sequence);
        }

        @Override
        public FleetRegistry.Sent send(BudgetCall call, ClientSequence sequence, CallsInDoubt offered) {
          Answer a = upstream.call(call, sequence);
          return new FleetRegistry.Sent(a.reply(), 0, () -> FleetRegistry.Sent.UNKNOWN, false, () -> false,
              io.retrybudget.budget.redis.protocol.RelayHeld.Offer.NONE, () -> a.relay() ? TAG : null, () -> -1);
        }
      };
    }

    /** A new client of budget {@code seed.name()} in this process (its own client id and counts). */
    public RetryBudget budget(BudgetConfig seed) {
      fleets.opened(seed.name());
      return new RedisRetryBudget(settings, this, seed);
    }

    @Override
    public Port port() {
      return port;
    }

    @Override
    public long fleetEstimate(String name) {
      return fleets.estimate(name);
    }

    @Override
    public void learnedFleet(String name, long clients, boolean first) {
      fleets.learned(name, clients, first);
    }

    @Override
    public void forget(RedisRetryBudget budget) {
      fleets.closed(budget.name(), budget.heardFromRedis());
    }

    @Override
    public void logDegraded(Supplier<String> message) {}

    @Override
    public void logRecovered(Supplier<String> message) {}
  }

  /** The fleet size budget {@code b} last learned (from Redis or its relay). */
  public static long learnedFleet(RetryBudget b) {
    return ((RedisRetryBudget) b).learned().activeClients();
  }

  /** Script calls budget {@code b} has sent (hellos, flushes, probes, permit requests). */
  public static long callsSent(RetryBudget b) {
    return ((RedisRetryBudget) b).callsSent();
  }

  /** A relay's client asking again within this long decides ahead, from what it holds ({@link AskAhead}). */
  public static final long ASK_AHEAD_MILLIS = AskAhead.ACTIVE_MILLIS;

  /** Asks budget {@code b} decided ahead, without waiting for a reply ({@link AskAhead}). */
  public static long decidedAhead(RetryBudget b) {
    return ((RedisRetryBudget) b).decidedAhead();
  }

  /** The id budget {@code b}'s calls carry. */
  public static String clientId(RetryBudget b) {
    return ((RedisRetryBudget) b).clientId();
  }
}
