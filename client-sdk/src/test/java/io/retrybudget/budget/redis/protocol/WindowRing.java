package io.retrybudget.budget.redis.protocol;

import io.retrybudget.testing.RedisServerProcess;
import java.util.List;

/**
 * Reads and plants a budget's window ring (layout 2, lua/README.md) for tests that look inside it or
 * age buckets by hand. The ring is binary, so both go through tiny scripts with Redis's own
 * {@code struct}, the same packing the budget scripts use.
 */
public final class WindowRing {
  public static final int SLOTS = 11;
  public static final int T = 0;
  public static final int Q = 1;
  public static final int G = 2;
  public static final int D = 3;
  public static final int A = 4;
  public static final int L = 5;

  private static final String READ = "local v = redis.call('GET', KEYS[1]) if not v then return {} end "
      + "local r = { struct.unpack('<' .. string.rep('i8', 67), v) } r[#r] = nil return r";
  private static final String PLANT = "local a = {} for i = 2, 7 do a[#a + 1] = tonumber(ARGV[i]) end "
      + "redis.call('SETRANGE', KEYS[1], 8 + 48 * tonumber(ARGV[1]), struct.pack('<i8i8i8i8i8i8', unpack(a))) return 1";

  /** Sets the fleet record (the clients hash's field '') of Redis's current epoch: both counts {@code ARGV[1]}. */
  private static final String PLANT_FLEET = "local t = redis.call('TIME') "
      + "local e = math.floor((tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)) / "
      + io.retrybudget.budget.internal.FleetCount.EPOCH_MILLIS + ") "
      + "redis.call('HSET', KEYS[1], '', string.format('%d:%d:%d', e, tonumber(ARGV[1]), tonumber(ARGV[1]))) return 1";

  private final RedisServerProcess server;
  private final String key;
  private final String clientsKey;

  public WindowRing(RedisServerProcess server, BudgetKeys keys) {
    this.server = server;
    this.key = keys.window();
    this.clientsKey = keys.clients();
  }

  /** The 11 slots, each {t, q, g, d, a, l}; all zero where the ring has no key yet. */
  public long[][] slots() {
    @SuppressWarnings("unchecked")
    List<Object> all = (List<Object>) server.call("EVAL", READ, "1", key);
    long[][] slots = new long[SLOTS][6];
    for (int slot = 0; !all.isEmpty() && slot < SLOTS; slot++) {
      for (int field = 0; field < 6; field++) {
        slots[slot][field] = (Long) all.get(1 + slot * 6 + field);
      }
    }
    return slots;
  }

  /** One field of one slot. */
  public long get(int slot, int field) {
    return slots()[slot][field];
  }

  /** A field summed over all 11 slots, whatever their bucket numbers. */
  public long sum(int field) {
    long sum = 0;
    for (long[] slot : slots()) {
      sum += slot[field];
    }
    return sum;
  }

  /** Overwrites one slot: bucket number, first attempts, grants, denied, clients, last grant (ms). */
  public void plant(int slot, long bucket, long requests, long grants, long denied, long clients, long lastGrantMs) {
    server.call("EVAL", PLANT, "1", key, Integer.toString(slot), Long.toString(bucket), Long.toString(requests),
        Long.toString(grants), Long.toString(denied), Long.toString(clients), Long.toString(lastGrantMs));
  }

  /**
   * The budget made to report {@code clients} active clients, as a fleet of that size would leave it:
   * the fleet record of this epoch and the one before, and every slot in use (what an older caller of
   * status.lua reads).
   */
  public void plantClients(long clients) {
    server.call("EVAL", PLANT_FLEET, "1", clientsKey, Long.toString(clients));
    long[][] slots = slots();
    for (int i = 0; i < SLOTS; i++) {
      if (slots[i][T] != 0) {
        long[] s = slots[i];
        plant(i, s[T], s[Q], s[G], s[D], clients, s[L]);
      }
    }
  }

}
