package io.retrybudget.bench.relay;

import io.retrybudget.budget.VirtualRedis;
import io.retrybudget.budget.WheelTime;
import io.retrybudget.budget.redis.protocol.BudgetCall;
import io.retrybudget.budget.redis.protocol.BudgetReply;
import io.retrybudget.budget.redis.protocol.ClientSequence;
import io.retrybudget.relay.BudgetRelay;
import io.retrybudget.relay.RelaySettings;
import java.net.ConnectException;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;

/**
 * One relay process on the wheel: a {@link BudgetRelay} (the real core) for the one budget, its own
 * client id towards Redis, a timer that sends its budget.lua call when due (every 10 ms it looks; a
 * client's call that makes one due sends it at once, as the coordinator's relay host does), and
 * the faults: killed (its clients' calls are refused at once, like a closed port; its state is gone,
 * and a restart is a new relay with a new id) and cut off from Redis (its calls to Redis time out:
 * in doubt, see {@link BudgetRelay#upstreamInDoubt}).
 */
final class VirtualRelay {
  private static final long TICK_MILLIS = 10;
  private final int index;
  private final WheelTime time;
  private final VirtualRedis redis;
  private final RelaySettings settings;
  private final SplittableRandom random;
  private BudgetRelay core;
  private ClientSequence identity;
  private boolean down;
  private boolean cutFromRedis;
  private int generation;
  // a deliberately broken relay, for the test that shows its check catches it: every report applied twice
  boolean appliesTwice;
  long calls; // client calls answered, ever
  long permitCalls; // client calls that asked for permits
  final long[] callsPerSecond;

  VirtualRelay(int index, WheelTime time, VirtualRedis redis, RelaySettings settings, long seed, int seconds) {
    this.index = index;
    this.time = time;
    this.redis = redis;
    this.settings = settings;
    this.random = new SplittableRandom(seed);
    this.callsPerSecond = new long[seconds + 2];
    start();
    tick(generation);
  }

  private void start() {
    generation++;
    core = new BudgetRelay("storm", settings, random::nextDouble);
    identity = new ClientSequence("relay-" + index + "-" + generation);
    down = false;
  }

  private void tick(int gen) {
    if (gen != generation) {
      return; // a killed relay's timer
    }
    long now = time.millis();
    send(now);
    core.sweep(now);
    time.at(TICK_MILLIS, () -> tick(gen));
  }

  /** Sends the core's call to Redis if one is due at {@code now}. */
  private void send(long now) {
    BudgetCall call = core.upstreamCall(now);
    if (call == null) {
      return;
    }
    BudgetRelay at = core;
    if (cutFromRedis) {
      // a cut call never reaches Redis, and the relay cannot tell: in doubt, sent again with its number
      // once Redis answers (the model applies that re-send, as budget.lua does a number it never saw)
      time.at(0, () -> at.upstreamInDoubt(call, time.millis()));
    } else {
      redis.budget(call, identity).whenComplete((reply, error) -> {
        if (error != null) {
          at.upstreamFailed(call, time.millis());
        } else {
          at.upstreamReplied(call, reply, time.millis());
        }
      });
    }
  }

  /** A client's call: answered by the core at once, or refused when the relay is down. */
  CompletableFuture<BudgetReply> call(String clientId, long seq, BudgetCall call, int second) {
    if (down) {
      return CompletableFuture.failedFuture(new ConnectException("relay " + index + " is down"));
    }
    calls++;
    if (call.need() > 0) {
      permitCalls++;
    }
    callsPerSecond[Math.max(0, Math.min(callsPerSecond.length - 1, second))]++;
    if (appliesTwice && call.requests() > 0) {
      core.client(clientId + "-again", seq, new BudgetCall(call.name(), call.requests(), 0, 0, 0, 0, call.seed()),
          time.millis());
    }
    BudgetReply reply = core.client(clientId, seq, call, time.millis());
    send(time.millis()); // as the host does: a call due now (the first client's, a cold relay's draw) goes at once
    return CompletableFuture.completedFuture(reply);
  }

  /** kill -9: the process and everything it held are gone. */
  void kill() {
    down = true;
    generation++;
  }

  /** Started again: a new relay, a new id, nothing remembered. */
  void restart() {
    start();
    tick(generation);
  }

  void cutFromRedis(boolean cut) {
    cutFromRedis = cut;
  }

  boolean down() {
    return down;
  }

  BudgetRelay core() {
    return core;
  }
}
