package io.retrybudget.budget;

import io.retrybudget.budget.redis.protocol.BudgetCall;
import io.retrybudget.budget.redis.protocol.BudgetReply;
import io.retrybudget.budget.redis.protocol.ClientSequence;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * One budget in Redis, as the schedule tests model it ({@link ModelStore}: lua/budget.lua's arithmetic
 * in Java, parity-tested against the script by {@code ScheduleParityTest}), on a {@link WheelTime},
 * for experiments outside this package: calls are applied when sent and answered after
 * {@code replyMillis}. Optionally every applied call is replayed into budget.lua on a real Redis and
 * the replies compared ({@link #checkAgainst}).
 */
public final class VirtualRedis {
  private final ModelStore store;

  public VirtualRedis(WheelTime time, long flushTimeoutMillis, long replyMillis) {
    this.store = new ModelStore(time::millis, time, flushTimeoutMillis);
    store.replyAfter(replyMillis);
  }

  /** Sets the budget's configuration (ratio in ppm, window s, floor a second, call ceiling a second). */
  public void configure(long ratioPpm, int windowSeconds, int minRetriesPerSecond, int maxCallsPerSecond) {
    store.configure(ratioPpm, windowSeconds, minRetriesPerSecond, maxCallsPerSecond);
  }

  /** A budget.lua call, numbered by {@code sequence}'s client id (the model de-duplicates by id and epoch). */
  public CompletableFuture<BudgetReply> budget(BudgetCall call, ClientSequence sequence) {
    return store.budget(call, sequence);
  }

  /**
   * Replays every call applied from now on into budget.lua on the Redis at {@code host:port} and
   * asserts each reply equals the model's (an {@link AssertionError} from the call that differs); close
   * the handle at the end.
   */
  public Parity checkAgainst(String host, int port, String budget) {
    ScriptParity parity = new ScriptParity(host, port, budget);
    store.mirror(parity);
    return new Parity(parity);
  }

  /** A running comparison with budget.lua on a real Redis. */
  public static final class Parity implements AutoCloseable {
    private final ScriptParity parity;

    private Parity(ScriptParity parity) {
      this.parity = parity;
    }

    /** Calls compared (each an assertion that the script answered what the model did). */
    public long compared() {
      return parity.compared();
    }

    @Override
    public void close() {
      parity.close();
    }
  }

  /** Script calls Redis ran, by second of the wheel's clock. */
  public Map<Long, Long> callsPerSecond() {
    return store.runPerSecond;
  }

  /** Every script call sent. */
  public long calls() {
    return store.calls;
  }

  /** First attempts Redis has counted. */
  public long requestsCounted() {
    return store.requestsCounted;
  }

  /** Permits handed out in replies. */
  public long permitsGranted() {
    return store.permitsGranted;
  }

  /** Retries callers reported as granted by their fallbacks. */
  public long fallbackRetriesReported() {
    return store.fallbackRetriesReported;
  }

  /** The callers Redis counts (budget.lua's active_clients). */
  public long callers() {
    return store.fleetEstimate();
  }
}
