package io.retrybudget.budget;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.retrybudget.budget.redis.protocol.BudgetCall;
import io.retrybudget.budget.redis.protocol.BudgetKeys;
import io.retrybudget.budget.redis.protocol.BudgetReply;
import io.retrybudget.budget.redis.protocol.LuaScript;
import io.retrybudget.testing.RespClient;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A {@link ModelStore.Mirror} that replays every call the model applies into lua/budget.lua on a real
 * Redis, and every configuration into lua/configure.lua, and asserts that the script answers what the
 * model answered, field by field.
 *
 * <p>The script runs on the model's clock: its one {@code TIME} call is replaced by the Redis time the
 * model applied the call at (an extra argument), the only change to its text. Keys expire in Redis's
 * real time, which a schedule on fake time outruns: the pace key's expiry (two windows after the call
 * that wrote it) is applied here on the model's clock, as the model applies it. Calls are numbered per
 * client as BudgetScripts numbers them (the model never re-sends, so none is stale).
 */
final class ScriptParity implements ModelStore.Mirror, AutoCloseable {
  private static final String REDIS_CLOCK = "local t = redis.call('TIME')\n"
      + "local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n";
  private static final String MODEL_CLOCK = "local now_ms = tonumber(ARGV[13])\n";
  static final String BUDGET_ON_THE_MODELS_CLOCK = onTheModelsClock(LuaScript.BUDGET.body());

  private final RespClient redis;
  private final BudgetKeys keys;
  private final String sha;
  private final Map<String, Long> sequences = new HashMap<>();
  private long paceExpiresAt = Long.MAX_VALUE;
  private long compared;

  ScriptParity(String host, int port, String budget) {
    try {
      this.redis = new RespClient(host, port, 5_000);
      this.keys = new BudgetKeys(budget);
      this.sha = (String) redis.call("SCRIPT", "LOAD", BUDGET_ON_THE_MODELS_CLOCK);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static String onTheModelsClock(String script) {
    String time = "redis.call('TIME')";
    int at = script.indexOf(time);
    if (at < 0 || script.indexOf(time, at + 1) >= 0 || !script.contains(REDIS_CLOCK)) {
      throw new IllegalStateException("budget.lua no longer reads Redis's clock in the one line this replaces");
    }
    return script.replace(REDIS_CLOCK, MODEL_CLOCK);
  }

  /** Calls compared so far. */
  long compared() {
    return compared;
  }

  @Override
  public void configured(ModelStore store) {
    String ratio = Long.toString(store.ratioPpm);
    String window = Integer.toString(store.windowSeconds);
    String floor = Integer.toString(store.minRetriesPerSecond);
    String ceiling = Integer.toString(store.maxCallsPerSecond);
    call("EVAL", LuaScript.CONFIGURE.body(), "2", keys.config(), keys.index(), ratio, window, floor, "enforce", ratio,
        window, floor, "enforce", ceiling, ceiling);
  }

  @Override
  public void applied(BudgetCall call, String clientId, long redisMillis, BudgetReply model) {
    if (redisMillis > paceExpiresAt) {
      call("DEL", keys.pace());
    }
    paceExpiresAt = redisMillis + model.windowSeconds() * 2000L;
    BudgetConfig seed = call.seed();
    long seq = sequences.merge(clientId, 1L, Long::sum);
    List<?> r = (List<?>) call("EVALSHA", sha, "5", keys.config(), keys.window(), keys.clients(), keys.index(),
        keys.pace(), clientId, Long.toString(seq), Long.toString(call.requests()), Long.toString(call.denied()),
        Long.toString(call.need()), Long.toString(call.want()), Long.toString(seed.ratioPpm()),
        Integer.toString(seed.windowSeconds()), Integer.toString(seed.minRetriesPerSecond()), seed.mode().wireName(),
        Integer.toString(seed.maxCallsPerSecond()), call.retries() == 0 ? "" : Long.toString(call.retries()),
        Long.toString(redisMillis));
    BudgetReply script = new BudgetReply(String.valueOf(r.get(0)), n(r, 1), n(r, 2), n(r, 3), n(r, 4), n(r, 5),
        n(r, 6), n(r, 7), (int) n(r, 8), (int) n(r, 9), String.valueOf(r.get(10)), n(r, 11), n(r, 12), n(r, 13),
        (int) n(r, 14));
    compared++;
    assertEquals(model, script, "call " + compared + " (" + call + " of " + clientId + " at Redis time " + redisMillis
        + "): the model answered, then budget.lua");
  }

  private static long n(List<?> reply, int i) {
    return BudgetReply.asLong(reply.get(i));
  }

  private Object call(String... args) {
    try {
      return redis.call(args);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public void close() {
    try {
      redis.close();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
