package io.retrybudget.budget.redis.protocol;

import io.retrybudget.budget.redis.transport.RedisBudgetStore;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.internal.FleetCount;
import io.retrybudget.budget.internal.TrustArithmetic;
import io.retrybudget.testing.RedisExtension;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The fleet's size as budget.lua counts it (active_clients), against a real Redis: per fleet epoch,
 * so neither a change of window_s, nor a bucket or window boundary, nor state stamped ahead of
 * Redis's clock drops live clients from the estimate.
 */
class FleetCountTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();
  private static RedisBudgetStore store;
  private static BudgetScripts scripts;
  private final List<ClientSequence> clients = new ArrayList<>();

  @BeforeAll
  static void connect() {
    store = RedisBudgetStore.connect(redis.connectionOptions().build());
    scripts = new BudgetScripts(store);
  }

  @AfterAll
  static void disconnect() {
    store.close();
  }

  @BeforeEach
  void clean() {
    redis.flushAll();
  }

  private void fleet(int n) {
    for (int i = 0; i < n; i++) {
      clients.add(new ClientSequence("client-" + i));
    }
  }

  /** One flush of client {@code i}: 5 first attempts; returns the fleet size Redis answers. */
  private long flush(String name, int i, BudgetConfig seed) throws Exception {
    return scripts.budget(new BudgetCall(name, 5, 0, 0, 0, seed), clients.get(i)).get(5, TimeUnit.SECONDS).activeClients();
  }

  private void setWindow(String name, int seconds, BudgetConfig defaults) throws Exception {
    scripts.configure(name, new ConfigChange(null, seconds, null, null), defaults).get(5, TimeUnit.SECONDS);
  }

  @Test
  void raisingOrLoweringTheWindowKeepsEveryClientCounted() throws Exception {
    BudgetConfig seed = BudgetConfig.builder("rewindow").windowSeconds(10).build();
    fleet(20);
    for (int i = 0; i < 20; i++) {
      flush("rewindow", i, seed);
    }
    for (int window : new int[] {60, 3600, 1, 10}) {
      setWindow("rewindow", window, seed);
      for (int i = 0; i < 20; i++) {
        assertEquals(20, flush("rewindow", i, seed), "window raised or lowered to " + window + " s, client " + i);
      }
      assertEquals(20, scripts.status("rewindow", seed).get(5, TimeUnit.SECONDS).activeClients(), "status, window " + window);
    }
  }

  /**
   * 12 clients that start together with a window of 1 s, each calling every 1.5 s (a stretched flush
   * interval longer than the window), in turn every 125 ms. From the third round on (by then every
   * client was counted in the epoch before whatever epoch boundary fell in the first two) every
   * answer is the whole fleet. The wait between calls only sets how often each client calls; any
   * wait longer than the window gives the same answer, so the bound holds however loaded the machine.
   */
  @Test
  void clientsThatStartTogetherDoNotDropOutTogether() throws Exception {
    BudgetConfig seed = BudgetConfig.builder("together").windowSeconds(1).build();
    fleet(12);
    List<Long> answers = new ArrayList<>();
    for (int round = 0; round < 4; round++) {
      for (int i = 0; i < 12; i++) {
        long size = flush("together", i, seed);
        if (round >= 2) {
          answers.add(size);
        }
        Thread.sleep(125);
      }
    }
    for (long size : answers) {
      assertTrue(size >= 11 && size <= 13, "every answer within 10 % of 12: " + answers);
    }
  }

  @Test
  void stateStampedAheadOfRedissClockKeepsTheFleetCounted() throws Exception {
    BudgetConfig seed = BudgetConfig.builder("ahead").build();
    fleet(20);
    for (int i = 0; i < 20; i++) {
      flush("ahead", i, seed);
    }
    // as a master whose clock ran 10 minutes ahead of this one left them: every stamp 5 epochs ahead
    BudgetKeys k = new BudgetKeys("ahead");
    redis.server().call("EVAL", """
        local all = redis.call('HGETALL', KEYS[1])
        for i = 1, #all, 2 do
          local v = all[i + 1]
          if all[i] == '' then
            local e, n, p = string.match(v, '^(%d+):(%d+):(%d+)$')
            v = string.format('%d:%d:%d', tonumber(e) + 5, tonumber(n), tonumber(p))
          else
            local s, e = string.match(v, '^(%d+):(%d+)$')
            v = string.format('%d:%d', tonumber(s), tonumber(e) + 5)
          end
          redis.call('HSET', KEYS[1], all[i], v)
        end
        return 1
        """, "1", k.clients());
    assertEquals(20, scripts.status("ahead", seed).get(5, TimeUnit.SECONDS).activeClients());
    for (int round = 0; round < 2; round++) {
      for (int i = 0; i < 20; i++) {
        assertEquals(20, flush("ahead", i, seed), "round " + round + ", client " + i);
      }
    }
  }

  /**
   * A fleet of 10 that starts as an epoch ends: 4 clients call in the epoch's last moments, 6 in the next
   * one's first. The estimate is all 10 from the sixth on; it was the larger part, 6 (and 4 before the
   * fifth), until the 4 called again, up to a stretched flush interval later: clients told half their
   * fleet flushed up to twice as often as the ceiling allows (FleetStartTest: 2,602-2,628 calls against
   * a ceiling of 2,500). The epoch's end is staged (entries and record stamped one epoch back, as the
   * script writes them), and the test starts over if Redis's epoch turns while it runs.
   */
  @Test
  void aFleetThatStartsAsAnEpochEndsIsCountedWhole() throws Exception {
    BudgetConfig seed = BudgetConfig.builder("straddle").build();
    BudgetKeys k = new BudgetKeys("straddle");
    for (int attempt = 0; ; attempt++) {
      redis.flushAll();
      List<ClientSequence> fresh = new ArrayList<>();
      for (int i = 0; i < 10; i++) {
        fresh.add(new ClientSequence("client-" + i));
      }
      clients.clear();
      clients.addAll(fresh);
      long epoch = stageLastEpoch(k, 4);
      List<Long> answers = new ArrayList<>();
      for (int i = 4; i < 10; i++) {
        answers.add(flush("straddle", i, seed));
      }
      long status = scripts.status("straddle", seed).get(5, TimeUnit.SECONDS).activeClients();
      if (redisEpoch() != epoch && attempt < 3) {
        continue; // the epoch turned in between: stage it again
      }
      assertEquals(List.of(5L, 6L, 7L, 8L, 9L, 10L), answers, "the clients of the epoch before and the new ones");
      assertEquals(10, status, "status");
      // the 4 call again in this epoch: nobody is counted twice
      for (int i = 0; i < 4; i++) {
        clients.get(i).next(); // their first number was the staged call's
        assertEquals(10, flush("straddle", i, seed), "client " + i + " again");
      }
      return;
    }
  }

  /** Redis's fleet epoch now. */
  private static long redisEpoch() {
    @SuppressWarnings("unchecked")
    List<Object> t = (List<Object>) redis.server().call("TIME");
    return FleetCount.epochOf(Long.parseLong(t.get(0).toString()) * 1000 + Long.parseLong(t.get(1).toString()) / 1000);
  }

  /**
   * Writes what budget.lua leaves after clients 0..n-1 each called once in the epoch before Redis's
   * current one: their entries ({@code 1:<epoch - 1>}) and the record ({@code <epoch - 1>:n:0}). Returns
   * the current epoch.
   */
  private static long stageLastEpoch(BudgetKeys k, int n) {
    long epoch = redisEpoch();
    List<String> args = new ArrayList<>(List.of("EVAL", """
        redis.call('HSET', KEYS[1], '', string.format('%d:%d:0', tonumber(ARGV[1]), tonumber(ARGV[2])))
        for i = 0, tonumber(ARGV[2]) - 1 do
          redis.call('HSET', KEYS[1], 'client-' .. i, '1:' .. ARGV[1])
        end
        return 1
        """, "1", k.clients(), Long.toString(epoch - 1), Integer.toString(n)));
    redis.server().call(args.toArray(String[]::new));
    return epoch;
  }

  @Test
  void anOlderCallerOfStatusGetsTheClientsInTheWindow() throws Exception {
    BudgetConfig seed = BudgetConfig.builder("older").build();
    fleet(3);
    for (int i = 0; i < 3; i++) {
      flush("older", i, seed);
    }
    BudgetKeys k = new BudgetKeys("older");
    List<Object> r = store.run(LuaScript.STATUS, new String[] {k.config(), k.window(), k.pace()}, "100000", "10", "10",
        "enforce").get(5, TimeUnit.SECONDS);
    long inWindow = (Long) r.get(5);
    assertTrue(inWindow == 3 || inWindow == 0, "the buckets' count (0 once they left the window): " + inWindow);
  }

  /** The fragments as assembled into budget.lua: the pace constants, the trust caps and fleet_read. */
  private static String sharedText() {
    return String.join("\n", LuaScriptTest.assembledFragment(LuaScript.BUDGET, "pace.lua"),
        LuaScriptTest.assembledFragment(LuaScript.BUDGET, "trust.lua"),
        LuaScriptTest.assembledFragment(LuaScript.BUDGET, "fleet.lua")) + "\n";
  }

  /** fleet_read, fleet_new and the trust caps inside Redis answer what FleetCount and TrustArithmetic answer. */
  @Test
  void theLuaRulesAreTheJavaRules() {
    String harness = sharedText() + """
        local out = {}
        for i = 0, tonumber(ARGV[1]) - 1 do
          local o = 1 + i * 8
          local record = ARGV[o + 1]
          if record == 'none' then record = false end
          local n, p, kept = fleet_read(record, tonumber(ARGV[o + 2]))
          out[#out + 1] = n
          out[#out + 1] = p
          out[#out + 1] = kept and 1 or 0
          out[#out + 1] = trust_call_cap(tonumber(ARGV[o + 3]))
          out[#out + 1] = trust_bucket_cap(tonumber(ARGV[o + 4]))
          out[#out + 1] = trust_add(tonumber(ARGV[o + 5]), tonumber(ARGV[o + 6]), tonumber(ARGV[o + 7]))
          out[#out + 1] = fleet_new(tonumber(ARGV[o + 8]), tonumber(ARGV[o + 2])) and 1 or 0
        end
        return out
        """;
    long seed = System.nanoTime();
    SplittableRandom random = new SplittableRandom(seed);
    int n = 500;
    List<String> args = new ArrayList<>();
    args.add(Integer.toString(n));
    List<long[]> inputs = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      long epoch = 14_000_000 + random.nextInt(100);
      long stored = epoch + random.nextInt(-3, 4);
      long now = random.nextInt(0, 1_000_000);
      long before = random.nextInt(0, 1_000_000);
      boolean none = random.nextInt(5) == 0;
      long maxCalls = random.nextInt(3) == 0 ? random.nextLong(1, 1_000_001) : new long[] {1, 999, 1000, 1001, 2000, 1_000_000}[random.nextInt(6)];
      long bucketMs = random.nextLong(1, 3_601) * 100; // window_s * 100
      long cap = TrustArithmetic.bucketCap(bucketMs);
      long count = random.nextLong(0, cap + 1);
      long add = random.nextLong(0, 1_000_000_001);
      long lastCounted = random.nextInt(4) == 0 ? -1 : epoch + random.nextInt(-4, 3); // -1: never counted
      inputs.add(new long[] {none ? -1 : stored, now, before, epoch, maxCalls, bucketMs, count, add, cap, lastCounted});
      args.addAll(List.of(none ? "none" : stored + ":" + now + ":" + before, Long.toString(epoch), Long.toString(maxCalls),
          Long.toString(bucketMs), Long.toString(count), Long.toString(add), Long.toString(cap),
          lastCounted < 0 ? "none" : Long.toString(lastCounted)));
    }
    @SuppressWarnings("unchecked")
    List<Object> out = (List<Object>) redis.server().call(Stream.concat(Stream.of("EVAL", harness, "0"), args.stream())
        .toArray(String[]::new));
    for (int i = 0; i < n; i++) {
      long[] in = inputs.get(i);
      String what = "seed " + seed + ", inputs " + java.util.Arrays.toString(in);
      FleetCount f = FleetCount.read(in[0] < 0 ? null : new FleetCount(in[0], in[1], in[2]), in[3]);
      int o = 7 * i;
      assertEquals(f.now(), (Long) out.get(o), "now, " + what);
      assertEquals(f.before(), (Long) out.get(o + 1), "before, " + what);
      assertEquals(in[0] == in[3] ? 1L : 0L, (Long) out.get(o + 2), "kept, " + what);
      assertEquals(TrustArithmetic.callCap(in[4]), (Long) out.get(o + 3), "call cap, " + what);
      assertEquals(TrustArithmetic.bucketCap(in[5]), (Long) out.get(o + 4), "bucket cap, " + what);
      assertEquals(TrustArithmetic.add(in[6], in[7], in[8]), (Long) out.get(o + 5), "add, " + what);
      assertEquals(FleetCount.newToUnion(in[9] < 0 ? null : in[9], in[3]) ? 1L : 0L, (Long) out.get(o + 6), "new, " + what);
    }
  }
}
