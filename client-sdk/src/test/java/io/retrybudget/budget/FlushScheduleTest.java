package io.retrybudget.budget;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The flushes one client's timer sends, on fake time: the timer ticks every flushInterval (500 ms) and
 * sends when {@link FlushSchedule} says a flush is due, so a fleet of N clients flushes N / interval
 * times a second, 90 % of its call ceiling, also where the interval is under two ticks.
 */
class FlushScheduleTest {
  private static final long TICK = 500;

  /** Flushes a second of one client whose fleet is {@code clients} at ceiling {@code c}, over {@code seconds}. */
  private static double flushesPerSecond(long clients, int c, long seconds, long seed) {
    SplittableRandom r = new SplittableRandom(seed);
    RedisRetryBudget.Learned l = new RedisRetryBudget.Learned(100_000, 10, 0, BudgetMode.ENFORCE, clients, c, 0);
    FlushSchedule s = new FlushSchedule(TICK, 10_000, r::nextDouble, () -> clients, 0);
    long phase = r.nextLong(TICK);
    long flushes = 0;
    for (long t = phase; t < seconds * 1000; t += TICK) {
      if (s.due(t, false, l) == FlushSchedule.Due.FLUSH) {
        s.called(t, l);
        flushes++;
      }
    }
    return flushes / (double) seconds;
  }

  @Test
  void aFleetFlushesAtNinetyPercentOfItsCeilingWhateverItsInterval() {
    // clients, ceiling: intervals of 556 ms (the default ceiling of 2,000 at 1,000 clients), 667, 778,
    // 889 ms, 1.1 s and 5.6 s
    long[][] fleets = {{1_000, 2_000}, {6, 10}, {7, 10}, {8, 10}, {10, 10}, {10_000, 2_000}};
    for (long[] f : fleets) {
      long clients = f[0];
      int c = (int) f[1];
      double perClient = 0;
      for (long seed = 0; seed < 20; seed++) {
        perClient += flushesPerSecond(clients, c, 2_000, seed) / 20;
      }
      double fleet = perClient * clients;
      // before the due time took a uniform place between ticks: 1,000 clients at 2,000 flushed at 2,000 a
      // second (1.11 x 0.9 C), 6 at 10 at 10.9 (1.21 x 0.9 C)
      assertTrue(fleet <= 0.9 * c * 1.03 && fleet >= 0.9 * c * 0.97, clients + " clients at a ceiling of " + c
          + ": the fleet flushes " + fleet + " times a second, for an aim of " + 0.9 * c);
    }
  }
}
