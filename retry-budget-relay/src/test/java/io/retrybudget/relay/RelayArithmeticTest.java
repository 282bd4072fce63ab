package io.retrybudget.relay;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class RelayArithmeticTest {
  @Test
  void relaysStretchTheirCallsToTheirShareOfTheCeiling() {
    // 40 relays at half of 2,000 calls a second: one call each every 40 ms, so the 100 ms least
    assertEquals(100, RelayArithmetic.upstreamIntervalMillis(40, 2_000, 0.5, 100, 500));
    // 400 callers: every 400 ms
    assertEquals(400, RelayArithmetic.upstreamIntervalMillis(400, 2_000, 0.5, 100, 500));
    // 10,000 callers would need 10 s: at most 500 ms (the lag bound wins; the ceiling is then exceeded)
    assertEquals(500, RelayArithmetic.upstreamIntervalMillis(10_000, 2_000, 0.5, 100, 500));
    assertEquals(100, RelayArithmetic.upstreamIntervalMillis(0, 2_000, 0.5, 100, 500), "no callers known: the least");
    assertEquals(500, RelayArithmetic.upstreamIntervalMillis(1, 0, 0.5, 100, 500), "no ceiling known: the most");
    assertEquals(500, RelayArithmetic.upstreamIntervalMillis(Long.MAX_VALUE, 1, 1e-9, 100, 500), "no overflow");
  }

  @Test
  void theFleetIsTheRelaysClientsScaledByItsShareOfTheFirstAttempts() {
    // 4 relays of 25,000 clients each: Redis counts 4 callers, the window 4 times this relay's
    assertEquals(100_000, RelayArithmetic.fleetEstimate(25_000, 500_000, 2_000_000, 4));
    // no share known yet: this relay's clients and one behind each other caller
    assertEquals(25_003, RelayArithmetic.fleetEstimate(25_000, 0, 0, 4));
    assertEquals(25_003, RelayArithmetic.fleetEstimate(25_000, 500_000, 400_000, 4), "Redis behind this relay's own count");
    // a share that says fewer than the callers Redis counts is not believed
    assertEquals(1_010, RelayArithmetic.fleetEstimate(1_000, 1_000, 1_001, 11));
    assertEquals(1, RelayArithmetic.fleetEstimate(0, 0, 0, 0));
    assertTrue(RelayArithmetic.fleetEstimate(Long.MAX_VALUE / 2, 1, Long.MAX_VALUE, 3) > 0, "no overflow");
  }

  @Test
  void theClientCeilingMakesTheRelaysClientsCallAtItsRate() {
    // a client stretches its flushes to N / (0.9 C): told N = 100,000 and C = 400,000, 25,000 clients
    // flush every 0.28 s together at 90,000 a second, 0.9 of the relay's 100,000
    int c = RelayArithmetic.clientCeiling(100_000, 100_000, 25_000);
    assertEquals(400_000, c);
    assertEquals(Integer.MAX_VALUE, RelayArithmetic.clientCeiling(10_000_000, Long.MAX_VALUE, 1), "clamped");
    assertEquals(100_000, RelayArithmetic.clientCeiling(100_000, 0, 0));
  }

  @Test
  void aDrawAsksForTheAsksUntilTheNextOneLessWhatIsHeld() {
    // 10,000 asks a second, a draw every 200 ms: 2,000, a quarter more, less 100 held
    assertEquals(2_400, RelayArithmetic.drawSize(10_000, 200, 100, 1_000_000));
    assertEquals(1_000, RelayArithmetic.drawSize(10_000, 200, 100, 1_000), "capped");
    assertEquals(0, RelayArithmetic.drawSize(10, 200, 100, 1_000), "enough held");
    assertEquals(0, RelayArithmetic.drawSize(0, 200, 0, 1_000), "no demand: a count-only call");
    assertEquals(0, RelayArithmetic.drawSize(Double.NaN, 200, 0, 1_000));
    assertEquals(1, RelayArithmetic.drawSize(0.001, 100, 0, 1_000), "any demand asks for one");
  }

  @Test
  void aColdDrawAsksForItsClientsPacedShareAndTheirBurst() {
    // 1,000 first attempts a second at 0.1, floor 10 a second: 110 a second, over 100 ms a quarter
    // more (125 ms) and the burst (500 ms): ceil(68.75)
    assertEquals(69, RelayArithmetic.coldDrawSize(1_000, 100_000, 10_000_000, 100, 0, 1_000_000));
    assertEquals(60, RelayArithmetic.coldDrawSize(1_000, 100_000, 10_000_000, 100, 9, 1_000_000), "less what is held");
    assertEquals(50, RelayArithmetic.coldDrawSize(1_000, 100_000, 10_000_000, 100, 0, 50), "capped");
    assertEquals(0, RelayArithmetic.coldDrawSize(0, 100_000, 0, 100, 0, 1_000), "no first attempts, no floor: none");
    assertEquals(0, RelayArithmetic.coldDrawSize(Double.NaN, 100_000, 0, 100, 0, 1_000));
    assertEquals(5, RelayArithmetic.coldDrawSize(0, 100_000, 10_000_000, 0, 0, 1_000), "the floor's burst alone");
    assertEquals(1_000, RelayArithmetic.coldDrawSize(1e300, Long.MAX_VALUE, Long.MAX_VALUE, Long.MAX_VALUE, 0, 1_000),
        "no overflow");
  }

  @Test
  void cutOffRelaysShareOneFloorBetweenThem() {
    assertEquals(2_500_000, RelayArithmetic.floorShareMicros(10, 25_000, 100_000));
    assertEquals(0, RelayArithmetic.floorShareMicros(10, 25_000, 0), "fleet unknown: no floor");
    assertEquals(10_000_000, RelayArithmetic.floorShareMicros(10, 5, 1), "never more than the floor");
    // any split of a fleet between relays grants at most one floor in all
    SplittableRandom r = new SplittableRandom(7);
    for (int i = 0; i < 1_000; i++) {
      long fleet = 1 + r.nextLong(1_000_000);
      int relays = 1 + r.nextInt(50);
      long floor = r.nextLong(1_000_000);
      long sum = 0;
      long left = fleet;
      for (int k = 0; k < relays; k++) {
        long own = k == relays - 1 ? left : r.nextLong(left + 1);
        left -= own;
        sum += RelayArithmetic.floorShareMicros(floor, own, fleet);
      }
      assertTrue(sum <= floor * 1_000_000L, "fleet " + fleet + ", " + relays + " relays: " + sum);
    }
  }
}
