package io.retrybudget.budget.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * The paced rule (the same arithmetic as lua/budget.lua, parity-tested in LuaScriptTest) over a
 * simulated fleet on fake time: per-second retry ratios in a sustained total outage, beside the
 * window-only rule it replaced, which spends a window's allowance in bursts.
 */
class PacedAdmissionTest {
  static final long RATIO_PPM = 100_000;
  static final int WINDOW_S = 10;
  static final int FLOOR = 10;
  static final int CLIENTS = 100;
  static final int PER_CLIENT_RATE = 20; // 2,000 first attempts a second for the fleet
  static final int HEALTHY_S = 12;
  static final int OUTAGE_S = 30;

  /** The budget as Redis holds it: window counts and (when paced) the balance. */
  private static final class Budget {
    final boolean paced;
    final SlidingWindowCounts window = new SlidingWindowCounts(WINDOW_S * 1000L);
    final PacedBalance balance = new PacedBalance();

    Budget(boolean paced) {
      this.paced = paced;
    }

    /** One script call: count {@code add} first attempts, then ask for {@code need} permits. */
    boolean call(long now, long add, int need) {
      window.add(now, add, 0, 0);
      long requests = window.requests(now);
      boolean granted;
      if (paced) {
        long available = balance.update(now, add, requests, window.spanMillis(now), WINDOW_S, RATIO_PPM,
            FLOOR * PaceArithmetic.PPM);
        granted = need > 0 && available >= need;
        if (granted) {
          balance.take(need);
        }
      } else {
        long allowance = BudgetArithmetic.allowance(RATIO_PPM, requests, FLOOR, WINDOW_S);
        granted = need > 0 && BudgetArithmetic.admits(allowance, window.retries(now), need);
      }
      if (granted) {
        window.add(now, 0, need, 0);
      } else if (need > 0) {
        window.add(now, 0, 0, need);
      }
      return granted;
    }
  }

  /**
   * Runs the fleet: every client sends a first attempt every 50 ms and flushes its counts every
   * 500 ms (phases spread); in the outage every first attempt fails and asks for one retry, carrying
   * the client's unflushed counts. Returns per outage second {first attempts, retries granted}.
   */
  private static long[][] run(boolean paced) {
    return run(paced, HEALTHY_S);
  }

  private static long[][] run(boolean paced, int healthySeconds) {
    Budget budget = new Budget(paced);
    long[] pending = new long[CLIENTS];
    long[][] perSecond = new long[OUTAGE_S][2];
    long start = 1_000_000_000L;
    long end = (healthySeconds + OUTAGE_S) * 1000L;
    for (long t = 0; t < end; t++) {
      long now = start + t;
      boolean outage = t >= healthySeconds * 1000L;
      int second = (int) (t / 1000) - healthySeconds;
      for (int c = 0; c < CLIENTS; c++) {
        if ((t + c / 2) % (1000 / PER_CLIENT_RATE) == 0) {
          pending[c]++;
          if (outage) {
            perSecond[second][0]++;
            if (budget.call(now, pending[c], 1)) {
              perSecond[second][1]++;
            }
            pending[c] = 0;
          }
        }
        if ((t + c * 5) % 500 == 0 && pending[c] > 0) {
          budget.call(now, pending[c], 0);
          pending[c] = 0;
        }
      }
    }
    return perSecond;
  }

  @Test
  void everySecondOfAnOutageHoldsTheRatioIncludingTheFirst() {
    long[][] seconds = run(true);
    long first = 0;
    long retries = 0;
    for (int s = 0; s < OUTAGE_S; s++) {
      double ratio = (double) seconds[s][1] / seconds[s][0];
      assertTrue(ratio >= 0.03 && ratio <= 0.25, "outage second " + s + ": " + ratio);
      first += seconds[s][0];
      retries += seconds[s][1];
    }
    double floorShare = (double) FLOOR / (CLIENTS * PER_CLIENT_RATE);
    double mean = (double) retries / first - floorShare;
    assertTrue(mean >= 0.095 && mean <= 0.115, "mean after the floor's share: " + mean);
    double firstSecond = (double) seconds[0][1] / seconds[0][0];
    System.out.println("paced: per-second ratios " + describe(seconds) + ", mean after the floor's share " + mean);
    assertTrue(firstSecond > 0.13, "the first second spends the half second saved up, and no more: " + firstSecond);
  }

  @Test
  void aBudgetBornIntoTheOutageHoldsTheRatioToo() {
    // 2 s of healthy traffic, less than a window: the rate is over the time the first attempts span
    long[][] seconds = run(true, 2);
    System.out.println("paced, young: per-second ratios " + describe(seconds));
    for (int s = 0; s < OUTAGE_S; s++) {
      double ratio = (double) seconds[s][1] / seconds[s][0];
      assertTrue(ratio >= 0.03 && ratio <= 0.25, "outage second " + s + ": " + ratio);
    }
  }

  @Test
  void theWindowOnlyRuleItReplacedSpendsAWindowInBursts() {
    long[][] seconds = run(false);
    double max = 0;
    int empty = 0;
    for (long[] s : seconds) {
      double ratio = (double) s[1] / s[0];
      max = Math.max(max, ratio);
      if (ratio < 0.03) {
        empty++;
      }
    }
    System.out.println("window-only: per-second ratios " + describe(seconds));
    assertTrue(max > 0.25, "a window's allowance spent at once: " + max);
    assertTrue(empty > 5, "then seconds with next to nothing: " + empty);
  }

  @Test
  void aDrainedBalanceRefillsFromNothingAtItsRate() {
    PacedBalance b = new PacedBalance();
    // 1,000 first attempts over a 10 s window at ratio 0.1: 10 permits a second, cap 5
    assertEquals(5, b.update(0, 1_000, 1_000, 10_000, WINDOW_S, RATIO_PPM, 0));
    b.drain();
    assertEquals(0, b.balance());
    assertEquals(0, b.update(1, 0, 1_000, 10_000, WINDOW_S, RATIO_PPM, 0), "time alone refills nothing without a floor");
    assertEquals(1, b.update(2, 10, 1_010, 10_000, WINDOW_S, RATIO_PPM, 0), "10 first attempts deposit one permit");
    b.drain();
    assertEquals(0, b.update(2, 0, 1_010, 10_000, WINDOW_S, RATIO_PPM, 0));
    // with a floor of 2 a second, 500 ms refill one permit
    assertEquals(1, b.update(502, 0, 1_010, 10_000, WINDOW_S, RATIO_PPM, 2 * PaceArithmetic.PPM));
    assertEquals(2, b.update(1002, 0, 1_010, 10_000, WINDOW_S, RATIO_PPM, 2 * PaceArithmetic.PPM));
    b.withdraw(PaceArithmetic.PPM * 3 / 2); // 2 permits held: half a permit is left
    assertEquals(PaceArithmetic.PPM / 2, b.balance());
    assertEquals(PaceArithmetic.PPM / 4, b.withdraw(PaceArithmetic.PPM / 4));
    assertEquals(PaceArithmetic.PPM / 4, b.withdraw(PaceArithmetic.PPM), "withdraws no more than the balance");
    assertEquals(0, b.balance());
    PacedBalance none = new PacedBalance();
    none.drain(); // before any update: nothing to drain, the first update starts it as usual
    assertEquals(5, none.update(0, 1_000, 1_000, 10_000, WINDOW_S, RATIO_PPM, 0));
  }

  private static String describe(long[][] seconds) {
    StringBuilder sb = new StringBuilder();
    for (long[] s : seconds) {
      sb.append(String.format("%.3f ", (double) s[1] / s[0]));
    }
    return sb.toString().trim();
  }

  @Test
  void arithmeticEdges() {
    assertEquals(0, PaceArithmetic.cap(PaceArithmetic.refillRate(0, 10_000, 100_000, 0)), "no traffic, no floor: nothing, ever");
    assertEquals(PaceArithmetic.PPM, PaceArithmetic.cap(PaceArithmetic.refillRate(10, 10_000, 100_000, 0)),
        "a tenth of a permit a second holds one permit");
    assertEquals(100 * PaceArithmetic.PPM, PaceArithmetic.refillRate(10_000, 10_000, 100_000, 0));
    assertEquals(100_000, PaceArithmetic.refillRate(1, 10_000, 1_000_000, 0), "fractions of a permit a second count");
    assertEquals(333_333 + 7 * PaceArithmetic.PPM, PaceArithmetic.refillRate(10, 3_000, 100_000, 7 * PaceArithmetic.PPM));
    assertEquals(10_000, PaceArithmetic.span(Long.MIN_VALUE, 50, 50_500, 1_000, 10_000), "no first attempts: the window");
    assertEquals(10_000, PaceArithmetic.span(40, 50, 50_500, 1_000, 10_000), "the leaving bucket has some: the window");
    assertEquals(2_500, PaceArithmetic.span(48, 50, 50_500, 1_000, 10_000), "a young budget: since its oldest bucket");
    assertEquals(1_000, PaceArithmetic.span(50, 50, 50_100, 1_000, 10_000), "at least one bucket");
    assertEquals(50 * PaceArithmetic.PPM, PaceArithmetic.cap(100 * PaceArithmetic.PPM));
    assertEquals(PaceArithmetic.MAX_RATE * 1_000_000, PaceArithmetic.refillRate(Long.MAX_VALUE / 2, 1_000, 1_000_000, 0), "rates capped");
    long cap = 5 * PaceArithmetic.PPM;
    assertEquals(cap, PaceArithmetic.refill(0, 0, 10_000_000, 0, 1, 1, cap), "a long gap fills it");
    assertEquals(cap, PaceArithmetic.refill(0, 0, 0, Long.MAX_VALUE, 1, 0, cap), "a huge deposit fills it");
    assertEquals(0, PaceArithmetic.refill(0, 5_000, 1_000, 0, 1, 10 * PaceArithmetic.PPM, cap), "time going back refills nothing");
    assertEquals(-1, PaceArithmetic.nextMillis(0, 0));
    assertEquals(0, PaceArithmetic.nextMillis(PaceArithmetic.PPM, cap));
    assertEquals(200, PaceArithmetic.nextMillis(0, cap), "5 permits a second: one in 200 ms");
    assertEquals(1, PaceArithmetic.nextMillis(999_999, Long.MAX_VALUE / 2000), "rounded up, never 0 short of a permit");
  }
}
