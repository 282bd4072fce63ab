package io.retrybudget.budget.redis.transport;

import io.retrybudget.budget.redis.protocol.BudgetScripts;
import io.retrybudget.budget.redis.protocol.ConfigChange;
import io.retrybudget.budget.redis.protocol.BudgetKeys;
import io.retrybudget.budget.redis.protocol.BrokenBudgetException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.testing.RedisBinary;
import io.retrybudget.testing.RedisExtension;
import io.retrybudget.testing.RedisServerProcess;
import io.retrybudget.testing.RespClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SortedSet;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Listing a real 3-master / 3-replica Cluster: on Redis 7 one list.lua call per master reads the
 * index keys of all its slots (not 16,384 reads from the client); the names are those Redis 6.2's
 * way (one read per slot) finds, also beside 2,000,000 unrelated keys; a broken index key is named.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ClusterListingTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.clusterWithReplicas();
  private static final boolean REDIS_6 = RedisBinary.version().startsWith("6.");

  private static SortedSet<String> configure(BudgetScripts scripts, int count) throws Exception {
    SortedSet<String> names = new TreeSet<>();
    List<CompletableFuture<?>> all = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      String name = "listed-" + i;
      names.add(name);
      all.add(scripts.configure(name, new ConfigChange(200_000L, 10, 5, null, null), BudgetConfig.builder(name).build()));
    }
    CompletableFuture.allOf(all.toArray(new CompletableFuture<?>[0])).get(10, TimeUnit.SECONDS);
    return names;
  }

  /**
   * The Cluster's options with a 10-s command timeout: the listing's reads are the subject, not their
   * latency, and on 2 cores at a load average of 16 six Redis processes (three masters, three
   * replicas) wait their turn for a core, so a read of an index beside 2,000,000 keys can take more
   * than the default second (it timed out at a load of 25).
   */
  private static RedisConnectionOptions patient() {
    return redis.connectionOptions().commandTimeout(Duration.ofSeconds(10)).build();
  }

  private static long scriptCalls() {
    return redis.commandCalls("evalsha") + redis.commandCalls("eval");
  }

  @Test
  @Order(1)
  void oneScriptCallPerMasterListsEveryBudget() throws Exception {
    try (RedisBudgetStore store = RedisBudgetStore.connect(patient())) {
      BudgetScripts scripts = new BudgetScripts(store);
      SortedSet<String> names = configure(scripts, 40);
      long before = scriptCalls();
      SortedSet<String> listed = scripts.listNames(new CompletableFuture<>()).get(10, TimeUnit.SECONDS);
      long calls = scriptCalls() - before;
      assertEquals(names, listed);
      if (!REDIS_6) {
        // one per master (a second, EVAL, when a master's script cache lacks list.lua)
        assertTrue(calls >= 3 && calls <= 6, calls + " script calls for one listing");
      }
      SortedSet<String> oneByOne = store.clusterIndexMembers(System.currentTimeMillis() - 60_000,
          new CompletableFuture<>(), false).get(20, TimeUnit.SECONDS);
      assertEquals(names, oneByOne);
    }
  }

  @Test
  @Order(2)
  void aBrokenIndexKeyIsNamed() throws Exception {
    String key = BudgetKeys.clusterIndex(12_345);
    RedisServerProcess owner = redis.serverFor(key);
    owner.call("SET", key, "not a sorted set");
    try (RedisBudgetStore store = RedisBudgetStore.connect(patient())) {
      ExecutionException e = assertThrows(ExecutionException.class,
          () -> new BudgetScripts(store).listNames(new CompletableFuture<>()).get(20, TimeUnit.SECONDS));
      BrokenBudgetException broken = assertInstanceOf(BrokenBudgetException.class, e.getCause());
      if (!REDIS_6) {
        assertEquals(key, broken.key());
      }
    } finally {
      owner.call("DEL", key);
    }
  }

  @Test
  @Order(3)
  void beside2000000UnrelatedKeysBothWaysListTheSame() throws Exception {
    List<RedisServerProcess> masters = new ArrayList<>();
    for (RedisServerProcess m : redis.clusterProcesses().masters()) {
      if (m.isAlive() && String.valueOf(m.call("ROLE")).startsWith("[master")) {
        masters.add(m);
      }
    }
    long total = 0;
    for (int i = 0; i < masters.size(); i++) {
      long n = 2_000_000L / masters.size() + (i == 0 ? 2_000_000L % masters.size() : 0);
      // a few seconds for Redis on a loaded machine: more than the harness's 5 s read timeout
      try (RespClient admin = new RespClient("127.0.0.1", masters.get(i).port(), 120_000)) {
        admin.call("DEBUG", "POPULATE", Long.toString(n), "unrelated" + i);
      }
      total += (Long) masters.get(i).call("DBSIZE");
    }
    assertTrue(total >= 2_000_000L, total + " keys");
    try (RedisBudgetStore store = RedisBudgetStore.connect(patient())) {
      BudgetScripts scripts = new BudgetScripts(store);
      SortedSet<String> names = configure(scripts, 40);
      long[] script = new long[5];
      long[] oneByOne = new long[5];
      for (int round = 0; round < 5; round++) {
        long t0 = System.nanoTime();
        assertEquals(names, store.clusterIndexMembers(System.currentTimeMillis() - 60_000, new CompletableFuture<>())
            .get(20, TimeUnit.SECONDS));
        long t1 = System.nanoTime();
        assertEquals(names, store.clusterIndexMembers(System.currentTimeMillis() - 60_000, new CompletableFuture<>(), false)
            .get(20, TimeUnit.SECONDS));
        long t2 = System.nanoTime();
        script[round] = (t1 - t0) / 1_000_000;
        oneByOne[round] = (t2 - t1) / 1_000_000;
      }
      Arrays.sort(script);
      Arrays.sort(oneByOne);
      System.out.println("Cluster listing beside " + total + " unrelated keys, 40 budgets, ms per listing (sorted, 5 rounds"
          + " interleaved): list.lua per master " + Arrays.toString(script) + ", one read per slot "
          + Arrays.toString(oneByOne) + " (Redis " + RedisBinary.version() + ")");
    }
  }
}
