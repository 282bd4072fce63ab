package io.retrybudget.budget.redis.transport;

import io.lettuce.core.Range;
import io.lettuce.core.api.async.RedisSortedSetAsyncCommands;
import java.util.ArrayList;
import java.util.List;
import java.util.SortedSet;
import java.util.TreeSet;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;

/**
 * Reads the members of many sorted sets in batches of at most {@link #BATCH} ZRANGEBYSCOREs, so the
 * bounded request queue never overflows.
 */
final class SortedSetReads {
  // per batch about a third goes to each master of a 3-master Cluster: far below the request queue
  static final int BATCH = 2048;

  private SortedSetReads() {}

  /** See {@link RedisBudgetStore#sortedSetMembers}. */
  static CompletableFuture<SortedSet<String>> members(RedisSortedSetAsyncCommands<String, String> commands,
      List<String> keyNames, double minScore, CompletableFuture<?> giveUp) {
    SortedSet<String> names = new TreeSet<>();
    CompletableFuture<SortedSet<String>> result = new CompletableFuture<>();
    batch(commands, keyNames, 0, Range.create(minScore, Double.POSITIVE_INFINITY), names, giveUp, result);
    return result;
  }

  private static void batch(RedisSortedSetAsyncCommands<String, String> commands, List<String> keyNames, int from,
      Range<Double> range, SortedSet<String> names, CompletableFuture<?> giveUp,
      CompletableFuture<SortedSet<String>> result) {
    if (from >= keyNames.size()) {
      result.complete(names);
      return;
    }
    if (giveUp.isDone()) {
      result.completeExceptionally(new CancellationException("listing given up"));
      return;
    }
    int to = Math.min(keyNames.size(), from + BATCH);
    List<CompletableFuture<List<String>>> batch = new ArrayList<>(to - from);
    try {
      for (int i = from; i < to; i++) {
        batch.add(commands.zrangebyscore(keyNames.get(i), range).toCompletableFuture());
      }
    } catch (RuntimeException e) {
      result.completeExceptionally(e);
      return;
    }
    CompletableFuture.allOf(batch.toArray(new CompletableFuture<?>[0])).whenComplete((done, error) -> {
      if (error != null) {
        result.completeExceptionally(ScriptCalls.unwrap(error));
        return;
      }
      for (CompletableFuture<List<String>> f : batch) {
        names.addAll(f.join());
      }
      SortedSetReads.batch(commands, keyNames, to, range, names, giveUp, result);
    });
  }
}
