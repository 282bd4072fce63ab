package io.retrybudget.bench.relay;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.VirtualRedis;
import io.retrybudget.testing.RedisExtension;
import java.net.URI;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The CI-sized relay experiment (bench/README.md, "Relay tier, virtual time"): the SDK's real engines
 * and the real relay core on fake time, one budget in Redis modelled by the parity-tested Java
 * arithmetic, 1,000 clients at 2 first attempts a second, a 10 s outage. Deterministic for its seed:
 * no figure here depends on the machine's load, only the wall time does. The budget's call ceiling is
 * 100 a second here, so that 1,000 clients are already past what direct calls can keep under it (as
 * 10,000-20,000 are at the default 2,000).
 */
class RelayStormModelTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();

  private static RelayStormOptions small(int relays) {
    // 12 s of warm-up: a process's budgets defer their first calls over the fleet's flush interval
    // as their seed's ceiling gives it (1,000 / 0.9 x 100: 11 s, at most 10), relay or not
    // processes of 100 clients: 10 processes, 5 at home on each relay
    return RelayStormOptions.storm(1_000, relays).withSeconds(12, 3, 10, 2).withCeiling(100).withClientsPerProcess(100);
  }

  @Test
  void throughRelaysEveryTargetHoldsAndEveryRedisReplyIsTheScripts() {
    redis.flushAll();
    URI uri = URI.create(redis.uri());
    RelayStormRun run = new RelayStormRun(small(2));
    RelayStormSummary s;
    try (VirtualRedis.Parity parity = run.redis().checkAgainst(uri.getHost(), uri.getPort(), "storm")) {
      s = RelayStormSummary.of(run.run());
      assertTrue(parity.compared() >= 200, "only " + parity.compared() + " calls compared with budget.lua");
    }
    System.out.println("through relays: " + s.row());
    assertTrue(s.ratioInBand(), "every outage second in [0.03, 0.25]: " + s.row());
    assertTrue(s.meanInBand(), "the mean after the floor in [0.095, 0.115]: " + s.row());
    assertTrue(s.callsUnderCeiling(), "every second's Redis calls under 100: " + s.row());
    assertTrue(s.lagUnderASecond(), "Redis's count at most 1 s behind: " + s.row());
    assertTrue(s.p99UnderAMillisecond(), "a permit decision's modelled p99 under 1 ms: " + s.row());
    assertTrue(s.fleetMin() >= 900 && s.fleetMax() <= 1_100, "the fleet within 10 %: " + s.row());
    assertTrue(s.countedAtMostOnce(), s.counted() + " counted, " + s.lost() + " lost of " + s.made() + " made");
  }

  @Test
  void directCallsAtTheSameSizeMissTheCeilingAndTheLag() {
    RelayStormSummary s = RelayStormSummary.of(new RelayStormRun(small(0)).run());
    System.out.println("direct: " + s.row());
    // the flush interval stops stretching at 10 s: 1,000 clients call 100 a second on flushes alone,
    // their permit calls on top, and Redis's count is seconds behind
    assertFalse(s.callsUnderCeiling(), "direct calls stayed under 100 a second: " + s.row());
    assertFalse(s.lagUnderASecond(), "direct calls' count lag under 1 s: " + s.row());
  }

  @Test
  void aRelayKilledMidStormCostsItsClientsUnderASecond() {
    RelayStormSummary s = RelayStormSummary.of(new RelayStormRun(small(2).withFault("kill", 3)).run());
    System.out.println("relay killed: its clients answered again within " + s.servedAgainMillis() + " ms; " + s.row());
    assertTrue(s.servedAgainMillis() >= 0 && s.servedAgainMillis() <= 1_000,
        "its clients answered again after " + s.servedAgainMillis() + " ms");
    assertTrue(s.ratioInBand(), "every outage second in [0.03, 0.25]: " + s.row());
    assertTrue(s.countedAtMostOnce(), s.counted() + " counted, " + s.lost() + " lost of " + s.made() + " made");
  }

  @Test
  void aRelayRestartedAppliesNoCountTwice() {
    RelayStormRun run = new RelayStormRun(small(2).withFault("restart", 3)).run();
    RelayStormSummary s = RelayStormSummary.of(run);
    assertFalse(run.relays()[0].down(), "started again");
    assertTrue(s.countedAtMostOnce(), s.counted() + " counted, " + s.lost() + " lost of " + s.made() + " made");
    // what was lost is the killed relay's unsent counts and its clients' calls in flight: a fraction of a second
    assertTrue(s.lost() <= s.made() / 20 / 2, s.lost() + " lost of " + s.made());
    assertTrue(s.ratioInBand(), s.row());
  }

  @Test
  void theCountCheckCatchesARelayThatAppliesReportsTwice() {
    RelayStormRun run = new RelayStormRun(small(2));
    run.relays()[1].appliesTwice = true;
    RelayStormSummary s = RelayStormSummary.of(run.run());
    assertFalse(s.countedAtMostOnce(), s.counted() + " counted, " + s.lost() + " lost of " + s.made() + " made");
  }

  @Test
  void aRelayCutOffFromRedisDecidesAloneAndTheFleetsRatioHolds() {
    RelayStormRun run = new RelayStormRun(small(2).withFault("cut", 3)).run();
    RelayStormSummary s = RelayStormSummary.of(run);
    assertTrue(run.relays()[0].core().cutOff(), "relay 0 decides alone");
    assertTrue(s.ratioInBand(), "the fleet's ratio every second: " + s.row());
    assertTrue(s.meanInBand(), "the fleet's mean: " + s.row());
    assertEquals(-1, s.servedAgainMillis(), "no kill");
  }

  /**
   * The outage starts with cold relays (no ask in the seconds before it: nothing held, no draw made
   * for any ask) late in a second, as a real one does: that second, part healthy, part outage, must
   * get its share too (grants / first attempts in [0.03, 0.25], as direct calls get it from the
   * balance Redis saved up). The shape of the real-process fault test: 60 engines at 20 first attempts
   * a second, 15 to a process, 2 relays. A relay that waits for its next call to draw, and sizes it by
   * the few asks it has seen, grants that second next to nothing (9 of 1,200 at 850 ms in).
   */
  @Test
  void coldRelaysGrantTheOutagesFirstSecondItsShare() {
    for (int offset : new int[] {750, 900}) {
      RelayStormOptions o = RelayStormOptions.storm(60, 2).withFirstPerSecond(20).withClientsPerProcess(15)
          .withSeconds(12, 3, 4, 1).withOutageOffsetMillis(offset);
      RelayStormRun run = new RelayStormRun(o).run();
      StringBuilder seconds = new StringBuilder();
      for (int i = o.healthySeconds(); i < o.healthySeconds() + o.outageSeconds(); i++) {
        seconds.append(' ').append(run.grants[i]).append('/').append(run.first[i]);
      }
      RelayStormSummary s = RelayStormSummary.of(run);
      System.out.println("cold relays, outage " + offset + " ms into its first second, grants/first attempts:"
          + seconds + "; " + s.row());
      int first = o.healthySeconds();
      double firstRatio = run.grants[first] / (double) run.first[first];
      assertTrue(firstRatio >= 0.03 && firstRatio <= 0.25, "the outage's first second, " + offset + " ms in: "
          + firstRatio + ";" + seconds);
      assertTrue(s.ratioInBand(), "every outage second in [0.03, 0.25]:" + seconds + "; " + s.row());
      assertTrue(s.countedAtMostOnce(), s.counted() + " counted, " + s.lost() + " lost of " + s.made() + " made");
    }
  }
}
