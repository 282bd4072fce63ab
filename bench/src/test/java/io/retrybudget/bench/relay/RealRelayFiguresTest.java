package io.retrybudget.bench.relay;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** The real relay run's own arithmetic: the latency histogram and Redis's count lag. */
class RealRelayFiguresTest {
  @Test
  void percentilesReadTheBucketsUpperBoundAndNeverUnderstate() {
    LatencyHistogram h = new LatencyHistogram();
    for (int i = 0; i < 98; i++) {
      h.record(3);
    }
    h.record(1_234); // a 100 µs bucket: 1,200..1,299
    h.record(250_000); // a 10 ms bucket: 250,000..259,999
    assertEquals(100, h.total());
    assertEquals(3, h.percentile(0.5));
    assertEquals(1_299, h.percentile(0.99));
    assertEquals(259_999, h.percentile(1.0));
    h.record(-5);
    h.record(60_000_000);
    assertEquals(0, LatencyHistogram.bucket(-5));
    assertEquals(LatencyHistogram.BUCKETS - 1, LatencyHistogram.bucket(60_000_000));
    assertEquals(10_000_000, h.percentile(1.0), "above 10 s: the overflow bucket");
    for (long v : new long[] {0, 999, 1_000, 99_999, 100_000, 9_999_999}) {
      int b = LatencyHistogram.bucket(v);
      assertEquals(true, LatencyHistogram.upperMicros(b) >= v && (b == 0 || LatencyHistogram.upperMicros(b - 1) < v),
          "bucket of " + v);
    }
  }

  @Test
  void histogramsSurviveTheirCsvField() {
    LatencyHistogram a = new LatencyHistogram();
    a.record(7);
    a.record(7);
    a.record(5_000);
    LatencyHistogram b = new LatencyHistogram();
    b.decodeInto(a.encode());
    b.decodeInto(a.encode());
    b.decodeInto("");
    assertEquals(6, b.total());
    assertEquals(4, b.count(7));
    assertEquals(5_099, b.percentile(1.0));
  }

  @Test
  void lagIsTheTimeSinceTheFleetHadMadeWhatRedisCounted() {
    long[] made = new long[200]; // 10 first attempts every 10 ms: 1,000 a second
    for (int i = 0; i < made.length; i++) {
      made[i] = 10L * (i + 1);
    }
    // read at 1,500 ms; Redis had counted 1,000, which the fleet had made by slot 99 (990 ms)
    assertEquals(0.51, RealRelayRun.lagSeconds(made, 1_500, 1_000), 1e-9);
    assertEquals(0.0, RealRelayRun.lagSeconds(made, 1_500, 1_510), "all counted");
    assertEquals(0.0, RealRelayRun.lagSeconds(made, 1_500, 2_000), "counted more than made: no lag");
    assertEquals(1.5, RealRelayRun.lagSeconds(made, 1_500, 0), 1e-9);
    assertEquals(0.0, RealRelayRun.lagSeconds(new long[0], 1_500, 0));
  }
}
