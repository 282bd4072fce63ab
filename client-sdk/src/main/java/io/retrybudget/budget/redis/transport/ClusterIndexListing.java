package io.retrybudget.budget.redis.transport;

import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;
import io.retrybudget.budget.redis.protocol.BudgetKeys;
import io.retrybudget.budget.redis.protocol.LuaScript;
import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.List;
import java.util.SortedSet;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * The budget names in every slot's index key of a Cluster: one {@link LuaScript#LIST} call per
 * master on Redis 7.0 or later, one read per key where that fails (see
 * {@link RedisBudgetStore#clusterIndexMembers(long, CompletableFuture)}).
 */
final class ClusterIndexListing {
  private static final System.Logger LOG = System.getLogger(RedisBudgetStore.class.getName());
  private static final long NEVER = Long.MIN_VALUE;
  /** After Redis refused to compile list.lua (before 7.0), the script is tried again after this. */
  static final long LIST_SCRIPT_RETRY_NANOS = TimeUnit.MINUTES.toNanos(5);

  private final StatefulRedisClusterConnection<String, String> connection;
  private final LongSupplier nanoClock;
  private volatile long listScriptRefusedAt = NEVER;

  ClusterIndexListing(StatefulRedisClusterConnection<String, String> connection, LongSupplier nanoClock) {
    this.connection = connection;
    this.nanoClock = nanoClock;
  }

  CompletableFuture<SortedSet<String>> members(long minScore, CompletableFuture<?> giveUp, boolean byScript) {
    boolean[] covered = new boolean[SlotHash.SLOT_COUNT];
    List<CompletableFuture<List<String>>> perMaster = new ArrayList<>();
    List<int[]> masterSlots = new ArrayList<>();
    boolean script = byScript
        && (listScriptRefusedAt == NEVER || nanoClock.getAsLong() - listScriptRefusedAt >= LIST_SCRIPT_RETRY_NANOS);
    if (script) {
      try {
        for (RedisClusterNode node : connection.getPartitions()) {
          if (!node.is(RedisClusterNode.NodeFlag.UPSTREAM) || node.getSlots().isEmpty()) {
            continue;
          }
          int[] slots = node.getSlots().stream().mapToInt(Integer::intValue).filter(s -> !covered[s]).toArray();
          if (slots.length == 0) {
            continue;
          }
          String[] args = new String[slots.length + 2];
          args[0] = Long.toString(minScore);
          args[1] = BudgetKeys.CLUSTER_INDEX_PREFIX;
          for (int i = 0; i < slots.length; i++) {
            covered[slots[i]] = true;
            args[i + 2] = BudgetKeys.clusterIndexTag(slots[i]);
          }
          masterSlots.add(slots);
          perMaster.add(connection.getConnectionAsync(node.getNodeId())
              .thenCompose(n -> ScriptCalls.<List<String>>bySha(n.async(), LuaScript.LIST, ScriptOutputType.MULTI,
                  new String[0], args))
              .toCompletableFuture());
        }
      } catch (RuntimeException e) {
        return CompletableFuture.failedFuture(e);
      }
    }
    CompletableFuture<SortedSet<String>> result = new CompletableFuture<>();
    CompletableFuture.allOf(perMaster.toArray(new CompletableFuture<?>[0])).whenComplete((done, ignored) -> {
      SortedSet<String> names = new TreeSet<>();
      List<String> oneByOne = new ArrayList<>();
      for (int i = 0; i < perMaster.size(); i++) {
        CompletableFuture<List<String>> f = perMaster.get(i);
        if (!f.isCompletedExceptionally()) {
          names.addAll(f.join());
          continue;
        }
        Throwable error = ScriptCalls.unwrap(f.handle((v, e) -> e).join());
        String message = String.valueOf(error.getMessage());
        if (message.startsWith("ERR broken key=")) {
          result.completeExceptionally(error); // a broken index key: the caller names it
          return;
        }
        if (message.contains("Error compiling script") || message.contains("Unknown lua shebang")
            || message.contains("Unexpected engine")) {
          listScriptRefusedAt = nanoClock.getAsLong(); // Redis before 7.0: one key at a time for a while
        }
        LOG.log(Level.DEBUG, "listing by script failed on a master; reading its index keys one by one", error);
        for (int s : masterSlots.get(i)) {
          oneByOne.add(BudgetKeys.clusterIndex(s));
        }
      }
      for (int s = 0; s < covered.length; s++) {
        if (!covered[s]) {
          oneByOne.add(BudgetKeys.clusterIndex(s));
        }
      }
      if (oneByOne.isEmpty()) {
        result.complete(names);
        return;
      }
      SortedSetReads.members(connection.async(), oneByOne, minScore, giveUp).whenComplete((more, error) -> {
        if (error != null) {
          result.completeExceptionally(ScriptCalls.unwrap(error));
        } else {
          names.addAll(more);
          result.complete(names);
        }
      });
    });
    return result;
  }
}
