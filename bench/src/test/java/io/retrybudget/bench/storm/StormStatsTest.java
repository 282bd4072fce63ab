package io.retrybudget.bench.storm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class StormStatsTest {
  // 2 healthy seconds (t=0, 1), 3 outage seconds (t=2..4), 1 healthy second after
  private static StormStats.Series series(long[] first, long[] retries) {
    return new StormStats.Series(first, retries, new long[] {900, 100, 300, 200, 400, 0},
        new long[] {50_000, 10_000, 300_000, 200_000, 100_000, 0});
  }

  @Test
  void perSecondRatioCountsTheFirstOutageSecondAndTheMeanIsTotalsOverTotals() {
    StormStats.Row row = StormStats.row(7, series(new long[] {1000, 1000, 1000, 1000, 2000, 1000},
        new long[] {0, 0, 600, 0, 100, 0}), 1, 2, 5, 10);
    assertEquals(0.0, row.minRatio());
    assertEquals(3, row.minSecond());
    assertEquals(0.6, row.maxRatio());
    assertEquals(2, row.maxSecond(), "the first outage second is counted");
    assertEquals(700.0 / 4000, row.meanRatio());
    assertEquals((700.0 - 10 * 3) / 4000, row.meanAfterFloor());
    assertEquals(1, row.secondsInBand(), "only t=4 (0.05) is within [0.03, 0.25]");
    assertEquals(3, row.outageSeconds());
  }

  @Test
  void healthyCostSkipsTheStartUpSecondAndStormCostIsTheOutageMean() {
    StormStats.Row row = StormStats.row(7, series(new long[] {1, 1, 1, 1, 1, 1}, new long[6]), 1, 2, 5, 0);
    assertEquals(100.0, row.scriptCallsHealthy(), "t=1 only: t=0 is start-up");
    assertEquals(300.0, row.scriptCallsStorm());
    assertEquals(400, row.scriptCallsStormMax());
    assertEquals(1.0, row.redisCpuHealthy(), 1e-9, "10 ms of CPU in one second = 1 % of a core");
    assertEquals(20.0, row.redisCpuStorm(), 1e-9);
    assertEquals(30.0, row.redisCpuStormMax(), 1e-9);
  }

  @Test
  void aSecondWithoutFirstAttemptsIsLeftOutOfMinAndMaxAndTheFloorNeverMakesTheMeanNegative() {
    StormStats.Row row = StormStats.row(7, series(new long[] {1, 1, 0, 10, 10, 1}, new long[] {0, 0, 5, 1, 2, 0}), 1, 2, 5, 100);
    assertEquals(1, row.secondsWithout());
    assertEquals(0.1, row.minRatio());
    assertEquals(0.2, row.maxRatio());
    assertEquals(0.0, row.meanAfterFloor());
    assertTrue(Double.isNaN(StormStats.perSecondRatio(0, 3)));
  }

  @Test
  void theMarkdownRowHasTheIssuesColumns() {
    StormStats.Row row = StormStats.row(10_000, series(new long[] {1000, 1000, 1000, 1000, 2000, 1000},
        new long[] {0, 0, 600, 0, 100, 0}), 1, 2, 5, 10);
    assertEquals("| 10,000 | 0.00–0.60 | 0.175 (0.168 after the floor) | 100 | 300 (max 400) | 1 % healthy, 20 % storm (max 30 %) |",
        row.markdown());
    assertEquals(8, StormStats.HEADER.lines().findFirst().orElseThrow().split("\\|", -1).length, "six columns");
  }

  @Test
  void anOutageOutsideTheSeriesIsRefused() {
    StormStats.Series s = series(new long[6], new long[6]);
    assertThrows(IllegalArgumentException.class, () -> StormStats.row(1, s, 1, 2, 7, 0));
    assertThrows(IllegalArgumentException.class, () -> StormStats.row(1, s, 3, 2, 5, 0));
    assertThrows(IllegalArgumentException.class,
        () -> new StormStats.Series(new long[2], new long[3], new long[2], new long[2]));
  }

  @Test
  void secondsOffThePacedRateAreCountedFromTheFirstHealthySecondCountedToTheOutagesEnd() {
    StormStats.Series s = series(new long[] {0, 1000, 1099, 850, 1000, 0}, new long[6]);
    assertEquals(1, StormStats.row(1, s, 1, 2, 5, 0, 1000).secondsOffPace(), "t=3 (850) only; t=0 and t=5 are not looked at");
    assertEquals(0, StormStats.row(1, s, 1, 2, 5, 0).secondsOffPace(), "no offered rate: not checked");
  }

  @Test
  void ratesOfLateOrEarlySamplesAreWeightedByHowLongTheirIntervalsLasted() {
    // healthy t=1: 1 s at 100/s; outage t=2..4: 1.5 s at 200/s, 0.1 s at 5,000/s, 1.4 s at 300/s
    StormStats.Series s = new StormStats.Series(new long[] {1, 1, 1, 1, 1, 1}, new long[6], new long[] {0, 100, 200, 5000, 300, 0},
        new long[6], new long[] {1_000_000, 1_000_000, 1_500_000, 100_000, 1_400_000, 1_000_000});
    StormStats.Row row = StormStats.row(1, s, 1, 2, 5, 0);
    assertEquals(100.0, row.scriptCallsHealthy(), 1e-9);
    assertEquals((200 * 1.5 + 5000 * 0.1 + 300 * 1.4) / 3.0, row.scriptCallsStorm(), 1e-9);
    assertEquals(300, row.scriptCallsStormMax(), "a 0.1 s interval is too short to say what a second held");
  }
}
